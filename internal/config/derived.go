package config

import (
	"math"
	"os"
	"strings"

	"github.com/aiperf-action/aiperf-action/internal/dataset"
	"github.com/aiperf-action/aiperf-action/internal/endpoint"
	"github.com/aiperf-action/aiperf-action/internal/hfdata"
)

// What a profile asks for, derived from its fields: the load's shape, the
// dataset kind, the media and the models.

// transcription reports the audio_transcription endpoint type.
func (p *Profile) transcription() bool {
	t, err := endpoint.Lookup(p.EndpointType)
	return err == nil && t.Name == endpoint.TypeAudioTrans
}

// Audio reports synthetic audio in the requests.
func (p *Profile) Audio() bool { return p.AudioLengthMean > 0 }

// Video reports synthetic video in the requests.
func (p *Profile) Video() bool { return p.VideoWidth > 0 && p.VideoHeight > 0 }

// VideoSpec is the synthetic clips' shape.
func (p *Profile) VideoSpec() dataset.VideoSpec {
	s := dataset.VideoSpec{Width: p.VideoWidth, Height: p.VideoHeight, FPS: p.VideoFPS, Seconds: p.VideoDuration, Synth: p.VideoSynthType, Format: p.VideoFormat, Codec: p.VideoCodec}
	if p.VideoAudioChannels > 0 {
		s.AudioChannels, s.AudioRate, s.AudioDepth, s.AudioCodec = p.VideoAudioChannels, p.videoAudioHz(), p.VideoAudioDepth, p.VideoAudioCodec
		if s.AudioCodec == "" {
			s.AudioCodec = dataset.VideoAudioCodec(p.VideoFormat)
		}
	}
	return s
}

// videoAudioHz is --video-audio-sample-rate in Hz: AIPerf reads a value
// of 1000 or under as kHz.
func (p *Profile) videoAudioHz() int {
	if p.VideoAudioSampleRate <= 1000 {
		return int(math.Round(p.VideoAudioSampleRate * 1000))
	}
	return int(math.Round(p.VideoAudioSampleRate))
}

// Images reports synthetic images in the requests.
func (p *Profile) Images() bool { return p.ImageWidthMean > 0 && p.ImageHeightMean > 0 }

// Rankings reports a rankings endpoint type (a query and passages a
// request).
func (p *Profile) Rankings() bool {
	t, err := endpoint.Lookup(p.EndpointType)
	if err != nil {
		return false
	}
	return t.Traits.Ranking
}

// OpenLoop reports whether requests are sent on a schedule (a rate or a
// fixed schedule) rather than as slots free up.
func (p *Profile) OpenLoop() bool { return p.RequestRate > 0 || p.Replays() }

// Replays reports whether the run sends at its input file's timestamps:
// --fixed-schedule, or a Mooncake trace, which AIPerf replays on its
// timestamps unasked.
func (p *Profile) Replays() bool {
	return p.FixedSchedule || p.Trace() && !p.NoFixedSchedule
}

// Trace reports whether the input file is a trace that is replayed on its
// timestamps unasked: mooncake_trace, bailian_trace or burst_gpt_trace.
func (p *Profile) Trace() bool {
	switch p.CustomDatasetType {
	case MooncakeTrace, BailianTrace, BurstGPTTrace, BasetenTrace, SageMaker:
		return true
	}
	return false
}

// MultiTurn reports whether the profile sends synthetic multi-turn
// sessions (--conversation-num, or more than one turn a conversation).
func (p *Profile) MultiTurn() bool {
	return p.ConversationNum > 0 || p.ConversationTurnMean > 1 || p.CustomDatasetType == MultiTurnFile || p.CustomDatasetType == WekaTrace || p.CustomDatasetType == DagJSONL || p.UserCentricRate > 0 ||
		hfdata.Catalog[p.PublicDataset].Turns || p.RawFolder()
}

// RawFolder reports a raw_payload folder: a conversation a file, its
// turns whole request bodies.
func (p *Profile) RawFolder() bool {
	if p.CustomDatasetType != RawPayload || p.InputFile == "" {
		return false
	}
	st, err := os.Stat(p.InputFile)
	return err == nil && st.IsDir()
}

// checkModels checks several models against what would send them.
func (p *Profile) checkModels(bad badf) {
	switch p.ModelSelection {
	case "", ModelRoundRobin, ModelRandom:
	default:
		bad("--model-selection-strategy %q: want round_robin or random", p.ModelSelection)
	}
	if len(p.MoreModels) == 0 {
		return
	}
	switch {
	case strings.Contains(DefaultPath(p.EndpointType), "{model}"):
		bad("several models (%s) with --endpoint-type %s: its URL names the model, and one run posts to one path; run one profile a model", strings.Join(p.Models(), ", "), p.EndpointType)
	case p.CustomDatasetType == RawPayload || p.CustomDatasetType == InputsJSON:
		bad("several models (%s) with --custom-dataset-type %s: its bodies are sent as they are, each naming its own model", strings.Join(p.Models(), ", "), p.CustomDatasetType)
	}
}

// AIPerf's --model-selection-strategy values.
const (
	ModelRoundRobin = "round_robin"
	ModelRandom     = "random"
)

// Models are every model requests name, the first Model.
func (p *Profile) Models() []string { return append([]string{p.Model}, p.MoreModels...) }

// DatasetKind is the dataset kind --input-file is read as: a public
// dataset's (a hub dataset's prompts are single_turn or multi_turn
// JSONL), else --custom-dataset-type's.
func (p *Profile) DatasetKind() string {
	switch pub, ok := hfdata.Catalog[p.PublicDataset]; {
	case ok && pub.Turns:
		return MultiTurnFile
	case ok:
		return dataset.SingleTurn
	case p.PublicDataset != "":
		return p.PublicDataset
	}
	return p.CustomDatasetType
}

// SharesPrefixes reports whether the profile's prompts share prefixes by
// design, so that a server's prefix cache is meant to serve part of them:
// multi-turn history, prefix prompts, a shared system prompt, or a trace's
// shared hash_ids.
func (p *Profile) SharesPrefixes() bool {
	return p.MultiTurn() || p.NumPrefixPrompts > 0 || p.SharedSystemPromptLength > 0 || p.UserContextPromptLength > 0 ||
		p.CustomDatasetType == MooncakeTrace || p.CustomDatasetType == BailianTrace
}

// Custom dataset types (AIPerf's names; dataset.Kinds has them all).
const (
	MooncakeTrace = dataset.MooncakeTrace
	BailianTrace  = dataset.BailianTrace
	BasetenTrace  = dataset.BasetenTrace
	BurstGPTTrace = dataset.BurstGPTTrace
	SingleTurn    = dataset.SingleTurn
	MultiTurnFile = dataset.MultiTurn
	DagJSONL      = dataset.DagJSONL
	RandomPool    = dataset.RandomPool
	WekaTrace     = dataset.WekaTrace
	RawPayload    = dataset.RawPayload
	SageMaker     = dataset.SageMakerDataCapture
	InputsJSON    = dataset.InputsJSON
)

// ShareGPT is --public-dataset's one value here.
const ShareGPT = dataset.ShareGPT

// --dataset-sampling-strategy values (AIPerf's).
const (
	SamplingSequential = "sequential"
	SamplingShuffle    = "shuffle"
	SamplingRandom     = "random"
)

// aiperfDatasetTypes are AIPerf's other --custom-dataset-type values: a
// user who gives one gets told it is AIPerf's and not supported here yet,
// never that it is unknown.
var aiperfDatasetTypes = []string{"sharegpt"}

// Ceiling is the in-flight limit: the concurrency in a closed loop, in an
// open loop only when --concurrency was given (0: none).
func (p *Profile) Ceiling() int {
	if p.UserCentricRate > 0 {
		return p.NumUsers // (one session at a time a user)
	}
	if p.OpenLoop() && !p.ConcurrencySet {
		return 0
	}
	return p.Concurrency
}
