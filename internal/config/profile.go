// Package config holds a run's configuration: the load profile, grouped
// (target, load, dataset, sessions, synthetic prompts, tokens, output) and
// JSON-tagged as its own wire schema, with AIPerf's defaults; Resolve,
// which reports every problem at once, each naming its flag, and returns
// what it parsed; and the gate's config file.
//
// Field names mirror AIPerf's flags (the CLI binds flags straight into these
// fields), so one vocabulary serves the CLI, the gate config and the action.
package config

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/aiperf-action/aiperf-action/internal/dataset"
	"github.com/aiperf-action/aiperf-action/internal/endpoint"
	"github.com/aiperf-action/aiperf-action/internal/metrics"
	"github.com/aiperf-action/aiperf-action/internal/result"
)

// Endpoint types (endpoint.Types has them all).
const (
	EndpointChat        = endpoint.TypeChat
	EndpointCompletions = endpoint.TypeCompletions
)

// Profile is one load profile: what to send, where, and how hard. Its
// groups are embedded, so each flag's field is read as p.Concurrency
// whichever group holds it (Bind binds AIPerf's flag names). The JSON names are
// the profile's own wire schema (wire.PlanSpec carries it to the workers),
// not its Go names.
type Profile struct {
	Target    `json:"target"`
	Load      `json:"load"`
	Dataset   `json:"dataset"`
	Sessions  `json:"sessions"`
	Synthetic `json:"synthetic"`
	Tokens    `json:"tokens"`
	Output    `json:"output"`

	Seed    uint64 `json:"seed"`     // --random-seed
	SeedSet bool   `json:"seed_set"` // whether Seed was given; when not, one is drawn and stored
	// Repeat is the gate's repeat index (1..R; 0 for a lone run): each
	// repeat sends its own prompts, with the same lengths, arrivals and
	// shape, so a server's prefix cache never serves one repeat from another.
	Repeat int `json:"repeat"`
	// PayloadSeed, when not 0, is the root of the prompts' words in place
	// of the one Seed and Repeat give (seeds.PayloadSeed): the gate draws
	// one a run for its job alone (seeds.Fresh), so that no earlier job's
	// prompts are sent again; --payload-seed with run.json's payload_seed
	// rebuilds such a run's prompts. Lengths, arrivals and ids stay Seed's.
	PayloadSeed uint64 `json:"payload_seed,omitempty"`
}

// Target is where requests go and what each one is: the model, the
// servers, the endpoint type and its codec's settings, and what every
// request carries.
type Target struct {
	Model string `json:"model"` // -m/--model: the model name put in every request (the first, with several)
	// MoreModels are the models after the first (-m a b, --model-names
	// a,b); ModelSelection assigns each request one (AIPerf's
	// --model-selection-strategy: round_robin, random).
	MoreModels []string `json:"more_models,omitempty"`
	// Sweep is several --concurrency or --request-rate values: the
	// profile command runs each (At); the profile itself holds the first.
	Sweep          *Sweep `json:"sweep,omitempty"`
	ModelSelection string `json:"model_selection_strategy,omitempty"`
	URL            string `json:"url"` // -u/--url: server base URL (scheme optional)
	// MoreURLs are the servers of further --url flags; with URLStrategy
	// (round_robin) request i goes to URL i mod n.
	MoreURLs     []string `json:"more_urls"`
	URLStrategy  string   `json:"url_strategy"`
	Endpoint     string   `json:"endpoint"`      // --endpoint: custom path; default from EndpointType
	EndpointType string   `json:"endpoint_type"` // --endpoint-type: chat | completions | … (endpoint.Types)
	// RequestTemplate and ResponseField are the template endpoint type's:
	// the request body's Go template (--request-template; "@file" reads
	// a file, which Validate puts in its place) and the field path of the
	// answer's text (--response-field).
	RequestTemplate string `json:"request_template"`
	// PayloadTemplate is the template's body as AIPerf writes it, Jinja2
	// (--extra-inputs payload_template:NAME|FILE|TEMPLATE; Validate puts
	// a named or file template's text in its place); with it,
	// ResponseField is a JMESPath query, or "" for AIPerf's auto-detection.
	PayloadTemplate       string   `json:"payload_template,omitempty"`
	ResponseField         string   `json:"response_field"`
	Streaming             bool     `json:"streaming"`               // --streaming
	ExtraInputs           []string `json:"extra_inputs"`            // --extra-inputs key:value, repeatable
	Headers               []string `json:"headers"`                 // -H/--header "Name: value", repeatable
	APIKey                string   `json:"api_key"`                 // --api-key, sent as a bearer token
	RequestTimeoutSeconds float64  `json:"request_timeout_seconds"` // --request-timeout-seconds
}

// Load is how hard and for how long: the loop (concurrency or a rate),
// the stop conditions, warmup, ramps, cancellations and users.
type Load struct {
	Concurrency        int     `json:"concurrency"`     // --concurrency: in-flight requests (closed loop), or the ceiling of an open loop
	ConcurrencySet     bool    `json:"concurrency_set"` // whether --concurrency was given (with a rate it then caps in-flight requests)
	RequestCount       int     `json:"request_count"`   // --request-count
	RequestCountSet    bool    `json:"request_count_set"`
	RequestRate        float64 `json:"request_rate"`         // --request-rate: open loop, requests per second
	ArrivalPattern     string  `json:"arrival_pattern"`      // --arrival-pattern: constant | poisson | gamma
	ArrivalSmoothness  float64 `json:"arrival_smoothness"`   // --arrival-smoothness: gamma shape k (1 = Poisson)
	BenchmarkDuration  float64 `json:"benchmark_duration"`   // --benchmark-duration, seconds; replaces --request-count
	GracePeriod        float64 `json:"grace_period"`         // --benchmark-grace-period, seconds
	WarmupRequestCount int     `json:"warmup_request_count"` // --warmup-request-count
	NumWarmupSessions  int     `json:"num_warmup_sessions"`  // --num-warmup-sessions: warmup of whole sessions
	WarmupDuration     float64 `json:"warmup_duration"`      // --warmup-duration, seconds
	WarmupConcurrency  int     `json:"warmup_concurrency"`   // --warmup-concurrency; default --concurrency
	WarmupRequestRate  float64 `json:"warmup_request_rate"`  // --warmup-request-rate; default --request-rate
	// The warmup's own arrival pattern, prefill limit, concurrency ramp and
	// grace period (AIPerf's --warmup-*), each defaulting to the profiling
	// phase's.
	WarmupArrivalPattern          string   `json:"warmup_arrival_pattern"`
	WarmupPrefillConcurrency      int      `json:"warmup_prefill_concurrency"`
	WarmupConcurrencyRampDuration float64  `json:"warmup_concurrency_ramp_duration"`
	WarmupGracePeriod             *float64 `json:"warmup_grace_period,omitempty"`
	PrefillRampDuration           float64  `json:"prefill_ramp_duration,omitempty"`        // --prefill-concurrency-ramp-duration, seconds
	WarmupPrefillRampDuration     float64  `json:"warmup_prefill_ramp_duration,omitempty"` // --warmup-prefill-concurrency-ramp-duration; default the profiling one
	WarmupRateRampDuration        float64  `json:"warmup_rate_ramp_duration,omitempty"`    // --warmup-request-rate-ramp-duration; default --request-rate-ramp-duration
	RateRampDuration              float64  `json:"rate_ramp_duration"`                     // --request-rate-ramp-duration, seconds
	ConcurrencyRampDuration       float64  `json:"concurrency_ramp_duration"`              // --concurrency-ramp-duration, seconds
	CancellationRate              float64  `json:"cancellation_rate"`                      // --request-cancellation-rate, percent of requests
	CancellationDelay             float64  `json:"cancellation_delay"`                     // --request-cancellation-delay, seconds after sending
	PrefillConcurrency            int      `json:"prefill_concurrency"`                    // --prefill-concurrency: requests at once between send and first token (0: no limit)
	NumUsers                      int      `json:"num_users"`                              // --num-users: users of --user-centric-rate, each one session at a time
	UserCentricRate               float64  `json:"user_centric_rate"`                      // --user-centric-rate: requests/s over all users; a user's turns are num-users/rate apart
}

// Dataset is an input file: its kind, how its prompts are taken, and how
// a trace is replayed.
type Dataset struct {
	InputFile                string  `json:"input_file"`                  // --input-file: JSONL prompts (and timestamps for a fixed schedule)
	CustomDatasetType        string  `json:"custom_dataset_type"`         // --custom-dataset-type: "" (plain JSONL) or mooncake_trace
	DatasetSampling          string  `json:"dataset_sampling"`            // --dataset-sampling-strategy: sequential (default), shuffle, random
	PublicDataset            string  `json:"public_dataset"`              // --public-dataset: sharegpt, or one of hfdata.Catalog, from --input-file or the hub
	HFSubset                 string  `json:"hf_subset,omitempty"`         // --hf-subset: the public dataset's subset (config) instead of its own
	ISLBlockSize             int     `json:"isl_block_size"`              // --isl-block-size: tokens per hash_ids block of a trace (0: the type's, see BlockSize)
	FixedSchedule            bool    `json:"fixed_schedule"`              // --fixed-schedule: send at the file's timestamps
	NoFixedSchedule          bool    `json:"no_fixed_schedule"`           // --no-fixed-schedule: a trace's timestamps are not replayed; the loop is --concurrency or --request-rate
	FixedScheduleAutoOffset  bool    `json:"fixed_schedule_auto_offset"`  // --fixed-schedule-auto-offset: first timestamp becomes 0
	FixedScheduleStartOffset int     `json:"fixed_schedule_start_offset"` // --fixed-schedule-start-offset, ms: skip earlier timestamps
	FixedScheduleEndOffset   int     `json:"fixed_schedule_end_offset"`   // --fixed-schedule-end-offset, ms: skip later timestamps (0: none)
	SynthesisSpeedupRatio    float64 `json:"synthesis_speedup_ratio"`     // --synthesis-speedup-ratio: a trace's timestamps divided by this (0: 1)
	SynthesisMaxISL          int     `json:"synthesis_max_isl"`           // --synthesis-max-isl: a trace's requests with more input tokens are left out
	SynthesisMaxOSL          int     `json:"synthesis_max_osl"`           // --synthesis-max-osl: a trace's output lengths capped at this
	NumDatasetEntries        int     `json:"num_dataset_entries"`         // --num-dataset-entries: prompts cycled by duration-bound closed loops
}

// Sessions are multi-turn conversations: synthetic ones' turns and
// delays, and each session's own context.
type Sessions struct {
	ConversationNum         int     `json:"conversation_num"`           // --conversation-num: synthetic multi-turn sessions (0: single-turn requests)
	ConversationTurnMean    float64 `json:"conversation_turn_mean"`     // --conversation-turn-mean: turns per session (≥ 1)
	ConversationTurnStddev  float64 `json:"conversation_turn_stddev"`   // --conversation-turn-stddev
	TurnDelayMean           float64 `json:"turn_delay_mean"`            // --conversation-turn-delay-mean, ms after a turn's response
	TurnDelayStddev         float64 `json:"turn_delay_stddev"`          // --conversation-turn-delay-stddev, ms
	TurnDelayRatio          float64 `json:"turn_delay_ratio"`           // --conversation-turn-delay-ratio: every delay times this (0: 1)
	UserContextPromptLength int     `json:"user_context_prompt_length"` // --user-context-prompt-length: tokens of a context unique to each session, before its first turn
}

// Synthetic is the shape of generated prompts: their lengths, shared
// prefixes and system prompt, images, audio and rankings requests.
type Synthetic struct {
	// Synthetic rankings requests (a rankings endpoint without an input
	// file): passages a query, and tokens of each passage and query,
	// normal and rounded (AIPerf's --rankings-* flags and defaults).
	RankingsPassagesMean        int `json:"rankings_passages_mean"`
	RankingsPassagesStddev      int `json:"rankings_passages_stddev"`
	RankingsPassageTokensMean   int `json:"rankings_passage_tokens_mean"`
	RankingsPassageTokensStddev int `json:"rankings_passage_tokens_stddev"`
	RankingsQueryTokensMean     int `json:"rankings_query_tokens_mean"`
	RankingsQueryTokensStddev   int `json:"rankings_query_tokens_stddev"`
	// Synthetic images (AIPerf's --image-* flags): each request's prompt
	// with ImageBatchSize images of a normal width and height, in
	// ImageFormat; none while the width or height mean is 0.
	ImageWidthMean    float64 `json:"image_width_mean"`
	ImageWidthStddev  float64 `json:"image_width_stddev"`
	ImageHeightMean   float64 `json:"image_height_mean"`
	ImageHeightStddev float64 `json:"image_height_stddev"`
	ImageFormat       string  `json:"image_format"` // png, jpeg or random
	ImageBatchSize    int     `json:"image_batch_size"`
	// Synthetic video (AIPerf's --video-* flags): VideoBatchSize clips a
	// request of VideoDuration seconds at VideoFPS, drawn from the seed
	// and encoded by ffmpeg; none while the width or height is 0.
	VideoWidth     int     `json:"video_width"`
	VideoHeight    int     `json:"video_height"`
	VideoFPS       int     `json:"video_fps"`
	VideoDuration  float64 `json:"video_duration"`
	VideoSynthType string  `json:"video_synth_type"` // moving_shapes, grid_clock or noise
	VideoFormat    string  `json:"video_format"`     // webm or mp4
	VideoCodec     string  `json:"video_codec"`      // an ffmpeg encoder
	VideoBatchSize int     `json:"video_batch_size"`
	// Each clip's audio track of Gaussian noise (--video-audio-*): none
	// while VideoAudioChannels is 0; the codec the container's (aac in
	// MP4, Vorbis in WebM) when empty.
	VideoAudioChannels   int     `json:"video_audio_num_channels,omitempty"`
	VideoAudioSampleRate float64 `json:"video_audio_sample_rate,omitempty"` // Hz (kHz when 1000 or under)
	VideoAudioDepth      int     `json:"video_audio_depth,omitempty"`
	VideoAudioCodec      string  `json:"video_audio_codec,omitempty"`
	// Synthetic audio (AIPerf's --audio-* flags): AudioBatchSize clips a
	// request of a normal length in seconds, WAV, a sample rate and depth
	// drawn from the lists; none while the length mean is 0.
	AudioLengthMean          float64   `json:"audio_length_mean"`
	AudioLengthStddev        float64   `json:"audio_length_stddev"`
	AudioFormat              string    `json:"audio_format"`
	AudioSampleRates         []float64 `json:"audio_sample_rates"` // kHz
	AudioDepths              []int     `json:"audio_depths"`       // bits
	AudioChannels            int       `json:"audio_channels"`
	AudioBatchSize           int       `json:"audio_batch_size"`
	SeqDist                  string    `json:"seq_dist"`                     // --sequence-distribution / --seq-dist: "isl[|std],osl[|std]:weight;..."
	NumPrefixPrompts         int       `json:"num_prefix_prompts"`           // --num-prefix-prompts: a pool of this many prefixes, one before each prompt
	PrefixPromptLength       int       `json:"prefix_prompt_length"`         // --prefix-prompt-length: tokens in each prefix
	SharedSystemPromptLength int       `json:"shared_system_prompt_length"`  // --shared-system-prompt-length: one system prompt of this many tokens for every request
	SystemPrompt             string    `json:"system_prompt,omitempty"`      // --system-prompt, or --system-prompt-file's text: the system message of every request
	SystemPromptFile         string    `json:"system_prompt_file,omitempty"` // --system-prompt-file (read into SystemPrompt, and cleared, by Resolve)
	ISLMean                  int       `json:"isl_mean"`                     // --synthetic-input-tokens-mean / --isl
	ISLStddev                float64   `json:"isl_stddev"`                   // --synthetic-input-tokens-stddev
	OSLMean                  int       `json:"osl_mean"`                     // --output-tokens-mean / --osl; 0 leaves max_tokens unset
	OSLStddev                float64   `json:"osl_stddev"`                   // --output-tokens-stddev
	// PromptBatchSize is synthetic text inputs a request (AIPerf's
	// --prompt-batch-size, -b): an embeddings request's list of inputs.
	PromptBatchSize int `json:"prompt_batch_size,omitempty"`
}

// Tokens is how lengths are counted.
type Tokens struct {
	Tokenizer                string `json:"tokenizer"`                   // --tokenizer: "" (builtin o200k_base), a tokenizer.json, or ORG/NAME in the local HF cache
	TokenizerRevision        string `json:"tokenizer_revision"`          // --tokenizer-revision: the cached snapshot of an ORG/NAME
	TokenizerTrustRemoteCode bool   `json:"tokenizer_trust_remote_code"` // --tokenizer-trust-remote-code: accepted, no effect (no code is run)
	UseServerTokenCount      bool   `json:"use_server_token_count"`      // --use-server-token-count: ISL/OSL from the server's usage
}

// Output is what a run writes and how it is judged on its own.
type Output struct {
	ServerMetrics    []string `json:"server_metrics"`           // --server-metrics URL..., scraped during the run
	NoServerMetrics  bool     `json:"no_server_metrics"`        // --no-server-metrics: don't probe <url>/metrics
	GPUTelemetry     []string `json:"gpu_telemetry"`            // --gpu-telemetry values: DCGM exporter URLs, a fields .csv, "dashboard"
	ShowGPUTelemetry bool     `json:"show_gpu_telemetry"`       // --gpu-telemetry given: print its table
	NoGPUTelemetry   bool     `json:"no_gpu_telemetry"`         // --no-gpu-telemetry: scrape no DCGM exporter
	OTelURL          string   `json:"otel_url"`                 // --otel-url: an OTLP/HTTP collector the requests' GenAI metrics stream to
	OTelHeaders      []string `json:"otel_headers"`             // --otel-headers (never in run.json: they may be credentials)
	GenAIProvider    string   `json:"gen_ai_provider"`          // --gen-ai-provider: gen_ai.provider.name on the exported metrics
	AutoPlot         bool     `json:"auto_plot"`                // --auto-plot: draw the run's charts into <artifact-dir>/plots after it
	ArtifactDir      string   `json:"artifact_dir"`             // --artifact-dir
	ExportLevel      string   `json:"export_level"`             // --export-level: summary or records (AIPerf's default)
	ExportPrefix     string   `json:"export_prefix"`            // --profile-export-prefix: AIPerf's export files' name
	Goodput          string   `json:"goodput"`                  // --goodput "metric:value ..."
	Workers          int      `json:"workers"`                  // --workers; 0 picks a default from CPUs and concurrency
	WorkerListen     string   `json:"worker_listen,omitempty"`  // --worker-listen host:port: the workers join from other hosts
	WorkerWeights    []int    `json:"worker_weights,omitempty"` // --worker-weights 2,1,1: each worker's share of the load (unequal machines)
	WorkersMax       int      `json:"workers_max"`              // --workers-max: a ceiling on the default worker count (AIPerf's)
	MaxErrorRate     float64  `json:"max_error_rate"`           // --max-error-rate, percent of requests
	SliceDuration    float64  `json:"slice_duration"`           // --slice-duration: seconds per metrics window
}

// DefaultProfile holds AIPerf's defaults where AIPerf has one.
var DefaultProfile = Profile{
	Target: Target{
		EndpointType:          EndpointChat,
		RequestTimeoutSeconds: 600,
	},
	Load: Load{
		Concurrency:       1,
		RequestCount:      10,
		ArrivalPattern:    "poisson",
		ArrivalSmoothness: 1,
		GracePeriod:       30,
	},
	Dataset: Dataset{
		NumDatasetEntries: 100,
	},
	Synthetic: Synthetic{
		ISLMean:                   550,
		PromptBatchSize:           1,
		ImageFormat:               "png",
		ImageBatchSize:            1,
		VideoFPS:                  4,
		VideoDuration:             5,
		VideoSynthType:            "moving_shapes",
		VideoFormat:               "webm",
		VideoCodec:                "libvpx-vp9",
		VideoBatchSize:            1,
		VideoAudioSampleRate:      44100,
		VideoAudioDepth:           16,
		AudioFormat:               "wav",
		AudioSampleRates:          []float64{16},
		AudioDepths:               []int{16},
		AudioChannels:             1,
		AudioBatchSize:            1,
		RankingsPassagesMean:      1,
		RankingsPassageTokensMean: 550,
		RankingsQueryTokensMean:   550,
	},
	Output: Output{
		MaxErrorRate:  10,
		SliceDuration: 5,
	},
}

// Resolved is what Resolve parsed of a profile, once: a run reads these,
// not the flags' text again.
type Resolved struct {
	Targets []string // every --url's full URL, in order (the first is -u/--url's)
	Headers [][2]string
	SLOs    []metrics.SLO
	Extra   map[string]json.RawMessage
	Mix     []dataset.Bucket   // --sequence-distribution's buckets (none: one normal each)
	GPU     GPUTelemetry       // what --gpu-telemetry and AIPerf's AIPERF_GPU_* settings say
	OTel    *OTel              // --otel-url's collector, nil without one
	Exports result.ExportNames // AIPerf's export files' names (--profile-export-prefix)
}

// Validate reports every problem with p at once, each naming its flag.
func (p *Profile) Validate() error {
	_, err := p.Resolve()
	return err
}

// Resolve checks every field of p at once, each problem naming its flag,
// and returns what it parsed (nil with the errors).
func (p *Profile) Resolve() (*Resolved, error) {
	var r Resolved
	var err error
	var errs []error
	bad := func(format string, a ...any) { errs = append(errs, fmt.Errorf(format, a...)) }
	if strings.TrimSpace(p.Model) == "" {
		bad("-m/--model is required")
	}
	p.checkModels(bad)
	p.checkSweep(bad)
	if r.Targets, err = p.TargetURLs(); err != nil {
		bad("-u/--url: %v", err)
	}
	if p.URLStrategy != "" && p.URLStrategy != "round_robin" {
		bad("--url-strategy %q: want round_robin", p.URLStrategy)
	}
	if p.CustomDatasetType == "" && p.InputFile != "" && p.PublicDataset == "" {
		p.CustomDatasetType = detectDatasetType(p.InputFile) // (AIPerf's auto-detection; "" stays plain JSONL)
	}
	if p.CustomDatasetType == RawPayload && p.Streaming {
		for _, f := range rawFiles(p.InputFile) {
			if n := wholeRawLine(f); n > 0 {
				bad("--streaming with --custom-dataset-type raw_payload: %s line %d does not ask for a stream (\"stream\": true), and its body is sent as it is, so its answer would come whole, with no first token: add \"stream\": true to the file's bodies, or leave out --streaming", f, n)
				break
			}
		}
	}
	r.GPU = p.resolveGPUTelemetry(bad)
	r.OTel = p.resolveOTel(bad)
	switch p.ExportLevel {
	case "", result.ExportSummary, result.ExportRecords:
	case "raw":
		bad("--export-level raw: the workers keep no response bodies (inputs.json has every request body, records.jsonl every timing and error): give summary or records")
	default:
		bad("--export-level %q: want summary, records or raw", p.ExportLevel)
	}
	if r.Exports, err = result.ExportNamesFor(p.ExportPrefix); err != nil {
		bad("%v", err)
	}
	if p.SystemPromptFile != "" {
		if p.SystemPrompt != "" {
			bad("--system-prompt and --system-prompt-file: give one")
		} else if b, err := os.ReadFile(p.SystemPromptFile); err != nil {
			bad("--system-prompt-file: %v", err)
		} else if p.SystemPrompt = strings.TrimSpace(string(b)); p.SystemPrompt == "" {
			bad("--system-prompt-file %s: the file is empty", p.SystemPromptFile)
		}
		p.SystemPromptFile = "" // (its text is the profile's now, for the workers and the hash)
	}
	p.checkEndpoint(bad)
	if p.Concurrency < 1 {
		bad("--concurrency %d: must be at least 1", p.Concurrency)
	}
	if p.RequestCount < 1 {
		bad("--request-count %d: must be at least 1", p.RequestCount)
	}
	errs = append(errs, p.validateLoad()...)
	if p.ISLMean < 1 {
		bad("--synthetic-input-tokens-mean %d: must be at least 1", p.ISLMean)
	}
	if p.ISLStddev < 0 {
		bad("--synthetic-input-tokens-stddev %g: must not be negative", p.ISLStddev)
	}
	if p.OSLMean < 0 {
		bad("--output-tokens-mean %d: must not be negative", p.OSLMean)
	}
	if p.OSLStddev < 0 {
		bad("--output-tokens-stddev %g: must not be negative", p.OSLStddev)
	}
	if r.Extra, err = ParseExtraInputs(p.ExtraInputs); err != nil {
		errs = append(errs, err)
	}
	if r.Headers, err = ParseHeaders(p.Headers); err != nil {
		errs = append(errs, err)
	}
	if !(p.RequestTimeoutSeconds > 0) {
		bad("--request-timeout-seconds %g: must be positive", p.RequestTimeoutSeconds)
	}
	if r.SLOs, err = metrics.ParseGoodput(p.Goodput); err != nil {
		errs = append(errs, err)
	}
	if r.Mix, err = ParseSeqDist(p.SeqDist); err != nil {
		errs = append(errs, err)
	}
	if p.WorkerListen != "" && p.Workers < 1 {
		bad("--worker-listen needs --workers: how many workers join")
	}
	if len(p.WorkerWeights) > 0 {
		if len(p.WorkerWeights) != p.Workers {
			bad("--worker-weights %v: one weight a worker (--workers %d)", p.WorkerWeights, p.Workers)
		}
		for _, w := range p.WorkerWeights {
			if w < 1 || w > 1000 {
				bad("--worker-weights %v: each weight from 1 to 1000", p.WorkerWeights)
				break
			}
		}
	}
	if p.Workers < 0 {
		bad("--workers %d: must not be negative (0 picks a default)", p.Workers)
	}
	if p.MaxErrorRate < 0 || p.MaxErrorRate > 100 {
		bad("--max-error-rate %g: must be a percentage in [0, 100]", p.MaxErrorRate)
	}
	if !(p.SliceDuration > 0) {
		bad("--slice-duration %g: must be positive", p.SliceDuration)
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return &r, nil
}

// checkEndpoint checks --endpoint-type against what goes with it (a
// system prompt, streaming, templates, raw payloads, an output length,
// token ids) and names p's type by its own name, not an alias; for
// Resolve, whose bad collects the errors.
func (p *Profile) checkEndpoint(bad func(format string, a ...any)) {
	if t, err := endpoint.Lookup(p.EndpointType); err != nil {
		bad("--endpoint-type: %v", err)
	} else {
		if p.SystemPrompt != "" && !slices.Contains([]string{"chat", "responses", "messages", "chat_embeddings"}, t.Name) {
			bad("--system-prompt: --endpoint-type %s sends no system message (chat, responses, messages and chat_embeddings do)", t.Name)
		}
		p.EndpointType = t.Name // an alias is its type, in the plan and its hash
		if (t.Traits.NonToken() || t.Traits.WholeOnly) && p.Streaming {
			bad("--streaming: --endpoint-type %s answers whole (its API does not stream)", t.Name)
		}
		if t.Name == endpoint.TypeTemplate {
			if err := p.takePayloadTemplate(); err != nil {
				bad("%v", err)
			}
			if p.PayloadTemplate != "" {
				if p.RequestTemplate != "" {
					bad("--request-template and --extra-inputs payload_template: give one (a Go template, or AIPerf's Jinja2)")
				}
				if _, err := endpoint.NewJinja(p.PayloadTemplate, p.ResponseField); err != nil {
					bad("--endpoint-type template: %v (--extra-inputs payload_template, response_field)", err)
				}
			} else if file, ok := strings.CutPrefix(p.RequestTemplate, "@"); ok {
				if b, err := os.ReadFile(file); err != nil {
					bad("--request-template: %v", err)
				} else {
					p.RequestTemplate = string(b)
				}
			}
			if p.PayloadTemplate == "" {
				if _, err := endpoint.NewTemplate(p.RequestTemplate, p.ResponseField); err != nil {
					bad("--endpoint-type template: %v (--request-template, --response-field)", err)
				}
				if strings.TrimSpace(p.Endpoint) == "" {
					bad("--endpoint-type template: needs --endpoint, the path to post to")
				}
			}
		} else if t.Name == endpoint.TypeRaw {
			if p.CustomDatasetType != RawPayload && p.CustomDatasetType != InputsJSON {
				bad("--endpoint-type raw posts an input file's payloads as they are: it needs --custom-dataset-type raw_payload (or inputs_json)")
			}
			if p.RequestTemplate != "" {
				bad("--request-template is for --endpoint-type template, not raw (its payloads are the bodies)")
			}
			if _, err := endpoint.NewRaw(p.ResponseField); err != nil {
				bad("--response-field: %v", err)
			}
		} else if p.RequestTemplate != "" || p.ResponseField != "" {
			bad("--request-template and --response-field are for --endpoint-type template (and --response-field for raw), not %s", t.Name)
		}
		if t.Traits.Unbounded && p.OSLMean > 0 {
			bad("--output-tokens-mean/--osl %d: --endpoint-type %s's API takes no output length, so it would not be sent (give --extra-inputs max_tokens:%d if your pipeline takes one)", p.OSLMean, t.Name, p.OSLMean)
		}
		if t.Traits.TokenIn && strings.TrimSpace(p.Tokenizer) == "" && p.CustomDatasetType != RawPayload && p.CustomDatasetType != InputsJSON {
			bad("--endpoint-type %s sends the prompt as token ids: it needs --tokenizer, the served model's tokenizer.json (or ORG/NAME in the local Hugging Face cache); the builtin o200k_base's ids are not a model's (a raw_payload or inputs_json file's bodies go as they are)", t.Name)
		}
	}
}
