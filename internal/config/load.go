package config

import (
	"context"
	"fmt"
	"math"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/aiperf-action/aiperf-action/internal/dataset"
	"github.com/aiperf-action/aiperf-action/internal/endpoint"
	"github.com/aiperf-action/aiperf-action/internal/hfdata"
	"github.com/aiperf-action/aiperf-action/internal/hub"
	"github.com/aiperf-action/aiperf-action/internal/tokenizer"
)

// badf notes one problem, its message naming the flag.
type badf func(format string, a ...any)

// validateLoad checks the load-shape flags, including the ones that
// contradict each other, a group of flags at a time.
func (p *Profile) validateLoad() []error {
	var errs []error
	bad := func(format string, a ...any) { errs = append(errs, fmt.Errorf(format, a...)) }
	for _, check := range []func(badf){p.checkArrivals, p.checkDataset, p.checkSessions, p.checkMedia, p.checkRankings, p.checkReplay} {
		check(bad)
	}
	return errs
}

// checkArrivals checks the rate, arrivals, duration, warmup, ramps and
// cancellations.
func (p *Profile) checkArrivals(bad badf) {
	if p.RequestRate < 0 {
		bad("--request-rate %g: must not be negative", p.RequestRate)
	}
	switch p.ArrivalPattern {
	case "constant", "poisson", "gamma":
	default:
		bad("--arrival-pattern %q: want constant, poisson or gamma", p.ArrivalPattern)
	}
	if !(p.ArrivalSmoothness > 0) {
		bad("--arrival-smoothness %g: must be positive", p.ArrivalSmoothness)
	}
	if p.BenchmarkDuration < 0 {
		bad("--benchmark-duration %g: must not be negative", p.BenchmarkDuration)
	}
	if p.GracePeriod < 0 {
		bad("--benchmark-grace-period %g: must not be negative", p.GracePeriod)
	}
	if p.WarmupRequestCount < 0 || p.WarmupDuration < 0 {
		bad("--warmup-request-count and --warmup-duration must not be negative")
	}
	if p.WarmupRequestCount > 0 && p.WarmupDuration > 0 {
		bad("--warmup-request-count and --warmup-duration both set: give one")
	}
	if p.NumWarmupSessions < 0 {
		bad("--num-warmup-sessions %d: must not be negative", p.NumWarmupSessions)
	}
	if p.NumWarmupSessions > 0 && p.WarmupRequestCount > 0 {
		bad("--num-warmup-sessions and --warmup-request-count both set: give one (AIPerf's are exclusive too)")
	}
	if p.WarmupConcurrency < 0 || p.WarmupRequestRate < 0 {
		bad("--warmup-concurrency and --warmup-request-rate must not be negative")
	}
	switch p.WarmupArrivalPattern {
	case "", "constant", "poisson", "gamma":
	default:
		bad("--warmup-arrival-pattern %q: want constant, poisson or gamma", p.WarmupArrivalPattern)
	}
	if p.PrefillRampDuration < 0 || p.WarmupPrefillRampDuration < 0 || p.WarmupRateRampDuration < 0 {
		bad("--prefill-concurrency-ramp-duration, --warmup-prefill-concurrency-ramp-duration and --warmup-request-rate-ramp-duration must not be negative")
	}
	if (p.PrefillRampDuration > 0 || p.WarmupPrefillRampDuration > 0) && p.PrefillConcurrency == 0 && p.WarmupPrefillConcurrency == 0 {
		bad("--prefill-concurrency-ramp-duration needs --prefill-concurrency (the limit it ramps to)")
	}
	if p.WarmupRateRampDuration > 0 && p.RequestRate <= 0 && p.WarmupRequestRate <= 0 {
		bad("--warmup-request-rate-ramp-duration needs --warmup-request-rate or --request-rate")
	}
	if p.WarmupPrefillConcurrency < 0 || p.WarmupConcurrencyRampDuration < 0 || p.WarmupGracePeriod != nil && *p.WarmupGracePeriod < 0 {
		bad("--warmup-prefill-concurrency, --warmup-concurrency-ramp-duration and --warmup-grace-period must not be negative")
	}
	if p.WorkersMax < 0 {
		bad("--workers-max %d: must not be negative", p.WorkersMax)
	}
	if p.FixedSchedule && p.NoFixedSchedule {
		bad("--fixed-schedule and --no-fixed-schedule: give one")
	}
	if (p.WarmupConcurrency > 0 || p.WarmupRequestRate > 0) && p.WarmupRequestCount == 0 && p.WarmupDuration == 0 && p.NumWarmupSessions == 0 {
		bad("--warmup-concurrency/--warmup-request-rate without --warmup-request-count, --warmup-duration or --num-warmup-sessions")
	}
	if p.RateRampDuration < 0 || p.ConcurrencyRampDuration < 0 {
		bad("ramp durations must not be negative")
	}
	if p.RateRampDuration > 0 && p.RequestRate <= 0 {
		bad("--request-rate-ramp-duration needs --request-rate")
	}
	if p.ConcurrencyRampDuration > 0 && p.Ceiling() <= 1 {
		bad("--concurrency-ramp-duration needs --concurrency above 1")
	}
	if p.CancellationRate < 0 || p.CancellationRate > 100 {
		bad("--request-cancellation-rate %g: must be a percentage in [0, 100]", p.CancellationRate)
	}
	if p.CancellationDelay < 0 {
		bad("--request-cancellation-delay %g: must not be negative", p.CancellationDelay)
	}
}

// checkDataset checks the dataset kind and its input file, the sequence
// mix, the tokenizer, sampling and the synthetic prompts' shapes.
func (p *Profile) checkDataset(bad badf) {
	switch {
	case p.CustomDatasetType == SageMaker:
		if p.EndpointType != EndpointChat {
			bad("--custom-dataset-type sagemaker_data_capture replays captured chat requests: it needs --endpoint-type chat (as AIPerf's)")
		}
		if p.SystemPrompt != "" {
			bad("--system-prompt with --custom-dataset-type sagemaker_data_capture: its captured messages are sent as they are")
		}
	case p.CustomDatasetType == "" || p.Trace() || p.CustomDatasetType == SingleTurn || p.CustomDatasetType == MultiTurnFile || p.CustomDatasetType == WekaTrace || p.CustomDatasetType == DagJSONL:
	case p.CustomDatasetType == RawPayload || p.CustomDatasetType == InputsJSON:
		if st, err := os.Stat(p.InputFile); err == nil && st.IsDir() && p.CustomDatasetType == InputsJSON {
			bad("--custom-dataset-type inputs_json: %s is a folder; give the inputs.json file", p.InputFile)
		}
		if p.EndpointType == endpoint.TypeTemplate || p.Rankings() {
			bad("--custom-dataset-type %s sends each payload as the body: not with --endpoint-type %s", p.CustomDatasetType, p.EndpointType)
		}
		if len(p.ExtraInputs) > 0 {
			bad("--custom-dataset-type %s sends each payload as it is: --extra-inputs would not be in it (put the fields in the payloads)", p.CustomDatasetType)
		}
	case p.CustomDatasetType == RandomPool:
		if st, err := os.Stat(p.InputFile); err == nil && st.IsDir() && p.DatasetSampling != "" && p.DatasetSampling != SamplingRandom {
			bad("--custom-dataset-type random_pool with a folder draws a line of each pool at random, with replacement: --dataset-sampling-strategy %s is not supported with it", p.DatasetSampling)
		}
		if p.Replays() {
			bad("--custom-dataset-type random_pool draws its lines at random: it has no schedule to replay (leave out --fixed-schedule)")
		}
	case slices.Contains(aiperfDatasetTypes, p.CustomDatasetType):
		bad("--custom-dataset-type %s: an AIPerf dataset type not supported here yet (supported: single_turn, multi_turn, random_pool, mooncake_trace, bailian_trace, burst_gpt_trace, baseten_trace, weka_trace, sagemaker_data_capture, raw_payload, inputs_json, dag_jsonl, and JSONL of text or input_length without the flag)", p.CustomDatasetType)
	default:
		bad("--custom-dataset-type %q: want single_turn, multi_turn, random_pool, mooncake_trace, bailian_trace, burst_gpt_trace, baseten_trace, weka_trace, sagemaker_data_capture, raw_payload, inputs_json or dag_jsonl", p.CustomDatasetType)
	}
	if p.CustomDatasetType != "" && p.InputFile == "" {
		bad("--custom-dataset-type %s needs --input-file", p.CustomDatasetType)
	}
	if _, err := tokenizer.Load(p.Tokenizer, p.TokenizerRevision); err != nil {
		bad("%v", err)
	}
	switch _, lookupErr := hfdata.Lookup(p.PublicDataset); {
	case p.PublicDataset == "":
	case p.PublicDataset != ShareGPT && lookupErr != nil:
		bad("--public-dataset %s: %v", p.PublicDataset, lookupErr)
	case p.CustomDatasetType != "" || p.Replays():
		bad("--public-dataset %s with --custom-dataset-type or a fixed schedule: a public dataset has no timestamps", p.PublicDataset)
	case p.PublicDataset != ShareGPT && p.InputFile == "":
		// Downloaded from the hub into its cache, and its rows turned into
		// prompts under hfdata.CacheDir, once a commit.
		if f, err := fetchPublic(p.PublicDataset, p.HFSubset); err != nil {
			bad("--public-dataset %s: %v", p.PublicDataset, err)
		} else {
			p.InputFile = f.Path
		}
	}
	if p.HFSubset != "" && (p.PublicDataset == "" || p.PublicDataset == ShareGPT) {
		bad("--hf-subset %s: for a --public-dataset on the hub with subsets (e.g. spec_al_gsm8k), not %q", p.HFSubset, p.PublicDataset)
	}
	if p.PublicDataset == ShareGPT && p.InputFile == "" {
		if path, err := fetchShareGPT(); err != nil {
			bad("--public-dataset sharegpt: %v (or give --input-file ShareGPT_V3_unfiltered_cleaned_split.json, or any ShareGPT JSON)", err)
		} else {
			p.InputFile = path
		}
	}
	switch p.DatasetSampling {
	case "", SamplingSequential:
	case SamplingShuffle, SamplingRandom:
		if p.InputFile == "" || p.Replays() {
			bad("--dataset-sampling-strategy %s: takes the prompts of an --input-file that is not replayed on its timestamps", p.DatasetSampling)
		}
	default:
		bad("--dataset-sampling-strategy %q: want sequential, shuffle or random", p.DatasetSampling)
	}
	switch {
	case p.NumPrefixPrompts < 0 || p.PrefixPromptLength < 0 || p.SharedSystemPromptLength < 0:
		bad("--num-prefix-prompts, --prefix-prompt-length and --shared-system-prompt-length must not be negative")
	case (p.NumPrefixPrompts > 0) != (p.PrefixPromptLength > 0):
		bad("--num-prefix-prompts and --prefix-prompt-length go together (a pool of N prefixes of L tokens)")
	case p.SystemPrompt != "" && (p.SharedSystemPromptLength > 0 || p.NumPrefixPrompts > 0 || p.PrefixPromptLength > 0):
		bad("--system-prompt with --shared-system-prompt-length or --num-prefix-prompts/--prefix-prompt-length: they fill the same place; give one (as AIPerf refuses)")
	case p.SystemPrompt != "" && (p.CustomDatasetType == RawPayload || p.CustomDatasetType == InputsJSON):
		bad("--system-prompt with --custom-dataset-type %s: its payloads are sent as they are, so the system prompt would not be", p.CustomDatasetType)
	case (p.NumPrefixPrompts > 0 || p.SharedSystemPromptLength > 0) && p.InputFile != "":
		bad("--num-prefix-prompts and --shared-system-prompt-length shape synthetic prompts, not an --input-file's")
	case p.PrefixPromptLength > dataset.MaxInputLength || p.SharedSystemPromptLength > dataset.MaxInputLength:
		bad("a prefix or system prompt past %d tokens", dataset.MaxInputLength)
	}
	if p.ISLBlockSize < 0 {
		bad("--isl-block-size %d: must be at least 1", p.ISLBlockSize)
	}
	if p.SynthesisSpeedupRatio < 0 || math.IsNaN(p.SynthesisSpeedupRatio) || math.IsInf(p.SynthesisSpeedupRatio, 0) {
		bad("--synthesis-speedup-ratio %g: want a positive, finite ratio (2 replays twice as fast)", p.SynthesisSpeedupRatio)
	}
}

// checkSessions checks multi-turn sessions and their users.
func (p *Profile) checkSessions(bad badf) {
	weka := p.CustomDatasetType == WekaTrace
	if p.MultiTurn() {
		switch {
		case p.EndpointType != EndpointChat && p.EndpointType != "messages" && p.EndpointType != "responses" && !weka && !p.RawFolder():
			bad("multi-turn sessions (--conversation-num, --conversation-turn-mean) thread a conversation's messages: they need --endpoint-type chat, messages or responses")
		case p.Replays():
			bad("multi-turn sessions start on a rate or fill their slots here: not on a fixed schedule yet")
		case p.RequestRate > 0 && p.UserCentricRate > 0:
			bad("--request-rate with --user-centric-rate: the users' rate is the rate (leave out --request-rate)")
		case p.InputFile != "" && p.DatasetKind() != MultiTurnFile && p.CustomDatasetType != DagJSONL && !weka && !p.RawFolder():
			bad("multi-turn sessions from --input-file need --custom-dataset-type multi_turn (the --conversation-* flags make synthetic ones)")
		case (p.DatasetKind() == MultiTurnFile || p.CustomDatasetType == DagJSONL || weka) && (p.ConversationNum > 0 || p.ConversationTurnMean > 1 || p.ConversationTurnStddev > 0 || p.UserCentricRate > 0):
			bad("%s takes its conversations and turns from the file: leave out --conversation-num, --conversation-turn-mean/-stddev and --user-centric-rate", p.datasetFlag())
		case (p.DatasetKind() == MultiTurnFile || p.CustomDatasetType == DagJSONL || weka) && p.DatasetSampling != "" && p.DatasetSampling != SamplingSequential:
			bad("%s runs its conversations in file order: --dataset-sampling-strategy %s is not supported with it yet", p.datasetFlag(), p.DatasetSampling)
		}
		for _, v := range []float64{p.ConversationTurnMean, p.ConversationTurnStddev, p.TurnDelayMean, p.TurnDelayStddev, p.TurnDelayRatio} {
			if v < 0 || math.IsNaN(v) || math.IsInf(v, 0) {
				bad("the --conversation-turn-* flags: %g is not a finite, non-negative number", v)
				break
			}
		}
		if (p.UserCentricRate > 0) != (p.NumUsers > 0) || p.UserCentricRate < 0 || math.IsNaN(p.UserCentricRate) || math.IsInf(p.UserCentricRate, 0) || p.NumUsers < 0 {
			bad("--user-centric-rate and --num-users go together: a positive rate (requests/s over all users) and a user count")
		} else if p.UserCentricRate > 0 && p.ConcurrencySet && p.Concurrency < p.NumUsers {
			// Each user has one turn in flight at most, so a cap of at
			// least --num-users (AIPerf's advice) changes nothing.
			bad("--user-centric-rate with --concurrency %d below --num-users %d: each user holds one slot, so the cap would hold users back (give at least --num-users)", p.Concurrency, p.NumUsers)
		}
		if p.UserContextPromptLength > 0 && weka {
			bad("--user-context-prompt-length with weka_trace: a trace's calls carry their own context in their hash ids (each call is sent whole)")
		}
		if p.ConversationNum < 0 || p.ConversationNum > 10_000_000 {
			bad("--conversation-num %d: want 1 to 10,000,000", p.ConversationNum)
		}
	}
	switch {
	case p.UserContextPromptLength < 0 || p.UserContextPromptLength > dataset.MaxInputLength:
		bad("--user-context-prompt-length %d: want 0 to %d tokens", p.UserContextPromptLength, dataset.MaxInputLength)
	case p.UserContextPromptLength > 0 && !p.MultiTurn():
		bad("--user-context-prompt-length gives each session its own context: it needs sessions (--conversation-num, --num-users with --user-centric-rate)")
	}
}

// checkMedia checks synthetic images and audio.
func (p *Profile) checkMedia(bad badf) {
	p.checkVideo(bad)
	switch embed := p.EndpointType == endpoint.TypeEmbeddings || p.EndpointType == endpoint.TypeNIMEmbed; {
	case p.PromptBatchSize < 1 || p.PromptBatchSize > 4096:
		bad("--prompt-batch-size %d: want 1 to 4096 text inputs a request", p.PromptBatchSize)
	case p.PromptBatchSize > 1 && !embed:
		bad("--prompt-batch-size %d: batched text inputs go to the embeddings endpoint types (embeddings, nim_embeddings), as in AIPerf; a %s request has one prompt (a rankings request's passages are --rankings-passages-mean)", p.PromptBatchSize, p.EndpointType)
	case p.PromptBatchSize > 1 && (p.InputFile != "" || p.PublicDataset != ""):
		bad("--prompt-batch-size %d batches synthetic prompts: an input file or public dataset gives each request its own inputs", p.PromptBatchSize)
	}
	switch {
	case p.ImageWidthMean < 0 || p.ImageHeightMean < 0 || p.ImageWidthStddev < 0 || p.ImageHeightStddev < 0 ||
		math.IsNaN(p.ImageWidthMean+p.ImageHeightMean+p.ImageWidthStddev+p.ImageHeightStddev):
		bad("the --image-* sizes: not negative")
	case p.ImageWidthMean > dataset.MaxImageSide || p.ImageHeightMean > dataset.MaxImageSide:
		bad("--image-width-mean and --image-height-mean: at most %d pixels", dataset.MaxImageSide)
	case (p.ImageWidthMean > 0) != (p.ImageHeightMean > 0):
		bad("--image-width-mean and --image-height-mean go together (an image's size)")
	case p.ImageFormat != "png" && p.ImageFormat != "jpeg" && p.ImageFormat != "random":
		bad("--image-format %q: want png, jpeg or random", p.ImageFormat)
	case p.ImageBatchSize < 1 || p.ImageBatchSize > 64:
		bad("--image-batch-size %d: want 1 to 64 images a request", p.ImageBatchSize)
	case p.Images() && p.InputFile != "":
		bad("the --image-* flags make synthetic images: an --input-file gives its own (\"image\", \"images\")")
	case p.Images() && p.EndpointType != EndpointChat && p.EndpointType != "responses" && p.EndpointType != endpoint.TypeImageRetr && p.EndpointType != endpoint.TypeImageEdit:
		bad("synthetic images go in a chat's or a response's content parts, an image_retrieval request or an image_edit upload: they need --endpoint-type chat, responses, image_retrieval or image_edit")
	case (p.EndpointType == endpoint.TypeImageRetr || p.EndpointType == endpoint.TypeImageEdit) && !p.Images() && p.InputFile == "":
		bad("--endpoint-type %s sends images: give --image-width-mean and --image-height-mean, or an --input-file whose lines have \"image\"", p.EndpointType)
	case p.Images() && p.MultiTurn():
		bad("synthetic images with multi-turn sessions are not supported yet")
	}
	switch {
	case p.AudioLengthMean < 0 || p.AudioLengthStddev < 0 || math.IsNaN(p.AudioLengthMean+p.AudioLengthStddev) || p.AudioLengthMean > dataset.MaxAudioSeconds:
		bad("--audio-length-mean and --audio-length-stddev: seconds, 0 to %d", dataset.MaxAudioSeconds)
	case p.AudioFormat == "mp3":
		bad("--audio-format mp3: there is no MP3 encoder here; give --audio-format wav (an --input-file's .mp3 files are sent as they are)")
	case p.AudioFormat != "wav":
		bad("--audio-format %q: want wav", p.AudioFormat)
	case len(p.AudioSampleRates) == 0 || slices.ContainsFunc(p.AudioSampleRates, func(k float64) bool { return !(k >= 1 && k <= 192) }):
		bad("--audio-sample-rates: kHz, each 1 to 192")
	case len(p.AudioDepths) == 0 || slices.ContainsFunc(p.AudioDepths, func(d int) bool { return d != 8 && d != 16 }):
		bad("--audio-depths: bits, each 8 or 16")
	case p.AudioChannels != 1 && p.AudioChannels != 2:
		bad("--audio-num-channels %d: want 1 or 2", p.AudioChannels)
	case p.AudioBatchSize < 1 || p.AudioBatchSize > 16:
		bad("--audio-batch-size %d: want 1 to 16 clips a request", p.AudioBatchSize)
	case p.Audio() && p.InputFile != "":
		bad("the --audio-* flags make synthetic audio: an --input-file gives its own (\"audio\", \"audios\")")
	case p.Audio() && p.EndpointType != EndpointChat && p.EndpointType != "responses" && !p.transcription():
		bad("synthetic audio goes in a chat's or a response's content parts or a transcription's upload: it needs --endpoint-type chat, responses or audio_transcription")
	case p.transcription() && !p.Audio() && p.InputFile == "":
		bad("--endpoint-type audio_transcription uploads audio: give --audio-length-mean, or an --input-file whose lines have \"audio\"")
	case p.Audio() && p.MultiTurn():
		bad("synthetic audio with multi-turn sessions is not supported yet")
	}
}

// checkRankings checks synthetic rankings requests and
// --prefill-concurrency.
func (p *Profile) checkRankings(bad badf) {
	rankingsSet := p.RankingsPassagesMean != DefaultProfile.RankingsPassagesMean || p.RankingsPassagesStddev != 0 ||
		p.RankingsPassageTokensMean != DefaultProfile.RankingsPassageTokensMean || p.RankingsPassageTokensStddev != 0 ||
		p.RankingsQueryTokensMean != DefaultProfile.RankingsQueryTokensMean || p.RankingsQueryTokensStddev != 0
	switch {
	case rankingsSet && p.InputFile != "":
		bad("the --rankings-* flags shape synthetic rankings requests: an --input-file gives its own query and passages")
	case rankingsSet && !p.Rankings():
		bad("the --rankings-* flags shape a rankings endpoint's requests: they need --endpoint-type nim_rankings, cohere_rankings or hf_tei_rankings")
	case p.RankingsPassagesMean < 1 || p.RankingsPassageTokensMean < 1 || p.RankingsQueryTokensMean < 1:
		bad("--rankings-passages-mean, --rankings-passages-prompt-token-mean and --rankings-query-prompt-token-mean: at least 1")
	case p.RankingsPassagesStddev < 0 || p.RankingsPassageTokensStddev < 0 || p.RankingsQueryTokensStddev < 0:
		bad("the --rankings-*-stddev flags: not negative")
	case p.RankingsPassagesMean > 10_000 || p.RankingsPassageTokensMean > dataset.MaxInputLength || p.RankingsQueryTokensMean > dataset.MaxInputLength:
		bad("--rankings-passages-mean past 10,000, or a passage or query past %d tokens", dataset.MaxInputLength)
	case p.Rankings() && p.MultiTurn():
		bad("--endpoint-type %s ranks one query a request: not with multi-turn sessions", p.EndpointType)
	}
	switch {
	case p.PrefillConcurrency < 0:
		bad("--prefill-concurrency %d: not negative", p.PrefillConcurrency)
	case p.PrefillConcurrency > 0 && !p.Streaming:
		bad("--prefill-concurrency needs --streaming: a request leaves prefill at its first token, which only a stream shows")
	}
}

// checkReplay checks a replayed trace's and a fixed schedule's flags.
func (p *Profile) checkReplay(bad badf) {
	if p.SynthesisMaxISL < 0 || p.SynthesisMaxOSL < 0 {
		bad("--synthesis-max-isl and --synthesis-max-osl: not negative")
	}
	if (p.SynthesisSpeedupRatio > 0 && p.SynthesisSpeedupRatio != 1 || p.SynthesisMaxISL > 0 || p.SynthesisMaxOSL > 0) && !p.Replays() {
		bad("the --synthesis-* flags transform a trace replayed on its timestamps: give --custom-dataset-type mooncake_trace, bailian_trace or burst_gpt_trace (or --fixed-schedule)")
	}
	if p.Replays() {
		if p.RequestRate > 0 {
			bad("--fixed-schedule (or a mooncake_trace) with --request-rate: the schedule comes from the file's timestamps")
		}
		if p.RateRampDuration > 0 {
			bad("--fixed-schedule with --request-rate-ramp-duration")
		}
		if p.InputFile == "" {
			bad("--fixed-schedule needs --input-file with timestamps")
		}
		if p.BenchmarkDuration > 0 {
			bad("--fixed-schedule with --benchmark-duration: the file decides the length")
		}
	} else if p.FixedScheduleAutoOffset || p.FixedScheduleStartOffset != 0 || p.FixedScheduleEndOffset != 0 {
		bad("--fixed-schedule-auto-offset/-start-offset/-end-offset need --fixed-schedule")
	}
	if p.FixedScheduleStartOffset < 0 || p.FixedScheduleEndOffset < 0 {
		bad("--fixed-schedule-start-offset and -end-offset must not be negative")
	}
	if p.FixedScheduleEndOffset > 0 && p.FixedScheduleEndOffset < p.FixedScheduleStartOffset {
		bad("--fixed-schedule-end-offset %d is before --fixed-schedule-start-offset %d", p.FixedScheduleEndOffset, p.FixedScheduleStartOffset)
	}
	if p.NumDatasetEntries < 1 {
		bad("--num-dataset-entries %d: must be at least 1", p.NumDatasetEntries)
	}
}

// fetchShareGPT is the ShareGPT file's path in the hub cache, downloaded
// on first use (HF_ENDPOINT, HF_TOKEN, HF_HUB_OFFLINE as for a tokenizer).
func fetchShareGPT() (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	return hub.FromEnv().File(ctx, hub.Dataset, dataset.ShareGPTRepo, "main", dataset.ShareGPTFile)
}

// datasetFlag names the flag that chose the dataset, for an error.
func (p *Profile) datasetFlag() string {
	if p.PublicDataset != "" {
		return "--public-dataset " + p.PublicDataset
	}
	return "--custom-dataset-type " + p.CustomDatasetType
}

// fetchPublic downloads a public dataset's data files from the hub (as
// for a tokenizer: HF_ENDPOINT, HF_TOKEN, HF_HUB_OFFLINE) and turns them
// into prompts, printing where they came from.
func fetchPublic(name, subset string) (hfdata.Fetched, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	c := hub.FromEnv()
	f, err := hfdata.Fetch(ctx, c, name, subset)
	if err == nil && f.Rows > 0 && c.Progress != nil {
		fmt.Fprintf(c.Progress, "--public-dataset %s: %d prompts from %s at %.12s (%s)\n", name, f.Rows, f.Repo, f.Commit, strings.Join(f.Files, ", "))
		if len(f.Skipped) > 0 {
			fmt.Fprintf(c.Progress, "--public-dataset %s: rows left out, as AIPerf leaves them out: %s\n", name, f.SkippedText())
		}
	}
	return f, err
}

// checkVideo checks the --video-* flags, and that ffmpeg is there with
// the encoder asked for, before any load.
func (p *Profile) checkVideo(bad badf) {
	set := p.VideoWidth != 0 || p.VideoHeight != 0
	switch {
	case !set && p.VideoAudioChannels != 0:
		bad("--video-audio-num-channels gives synthetic video's clips an audio track: it needs --video-width and --video-height")
	case !set:
		return
	case p.VideoWidth <= 0 || p.VideoHeight <= 0:
		bad("--video-width and --video-height go together (a clip's size), each at least 1")
	case p.VideoWidth > dataset.MaxVideoSide || p.VideoHeight > dataset.MaxVideoSide:
		bad("--video-width and --video-height: at most %d pixels", dataset.MaxVideoSide)
	case p.VideoWidth%2 != 0 || p.VideoHeight%2 != 0:
		bad("--video-width %d --video-height %d: even sides (the encoders' 4:2:0 chroma halves them)", p.VideoWidth, p.VideoHeight)
	case p.VideoFPS < 1 || p.VideoFPS > 120:
		bad("--video-fps %d: want 1 to 120", p.VideoFPS)
	case !(p.VideoDuration > 0) || p.VideoDuration > dataset.MaxVideoSeconds:
		bad("--video-duration %g: want more than 0 and at most %d seconds", p.VideoDuration, dataset.MaxVideoSeconds)
	case !slices.Contains(dataset.VideoSynths, p.VideoSynthType):
		bad("--video-synth-type %q: want %s", p.VideoSynthType, strings.Join(dataset.VideoSynths, ", "))
	case p.VideoFormat != "webm" && p.VideoFormat != "mp4":
		bad("--video-format %q: want webm or mp4", p.VideoFormat)
	case p.VideoBatchSize < 1 || p.VideoBatchSize > 16:
		bad("--video-batch-size %d: want 1 to 16 clips a request", p.VideoBatchSize)
	case p.VideoAudioChannels < 0 || p.VideoAudioChannels > 2:
		bad("--video-audio-num-channels %d: want 0 (no audio track), 1 or 2", p.VideoAudioChannels)
	case p.VideoAudioChannels > 0 && (p.videoAudioHz() < 8000 || p.videoAudioHz() > 96000):
		bad("--video-audio-sample-rate %g: want 8000 to 96000 Hz (or 8 to 96 kHz)", p.VideoAudioSampleRate)
	case p.VideoAudioChannels > 0 && !slices.Contains([]int{8, 16, 24, 32}, p.VideoAudioDepth):
		bad("--video-audio-depth %d: want 8, 16, 24 or 32 bits", p.VideoAudioDepth)
	case p.VideoAudioChannels > 0 && p.VideoAudioCodec != "" && dataset.VideoAudioCodecs[p.VideoAudioCodec] == nil:
		bad("--video-audio-codec %q: want aac, libvorbis or libopus", p.VideoAudioCodec)
	case p.VideoAudioChannels > 0 && !slices.Contains(dataset.VideoAudioCodecs[p.VideoSpec().AudioCodec], p.VideoFormat):
		bad("--video-audio-codec %s cannot go in a %s file (WebM holds Vorbis or Opus)", p.VideoAudioCodec, p.VideoFormat)
	case p.InputFile != "":
		bad("the --video-* flags make synthetic video: an --input-file gives its own (\"video\", \"videos\")")
	case p.EndpointType != EndpointChat:
		bad("synthetic video goes in a chat's content parts (video_url): it needs --endpoint-type chat")
	case p.MultiTurn():
		bad("synthetic video with multi-turn sessions is not supported yet")
	default:
		if err := dataset.CheckVideoCodec(p.VideoCodec); err != nil {
			bad("--video-codec %s: %v", p.VideoCodec, err)
		}
	}
}
