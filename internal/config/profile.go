// Package config holds the run's configuration as plain structs with
// defaults and a Validate method that reports every problem at once.
//
// Field names mirror AIPerf's flags (the CLI binds flags straight into these
// fields), so one vocabulary serves the CLI, the gate config and the action.
package config

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/aiperf-action/aiperf-action/internal/dataset"
	"github.com/aiperf-action/aiperf-action/internal/endpoint"
	"github.com/aiperf-action/aiperf-action/internal/metrics"
	"github.com/aiperf-action/aiperf-action/internal/tokenizer"
)

// Endpoint types (endpoint.Types has them all).
const (
	EndpointChat        = endpoint.TypeChat
	EndpointCompletions = endpoint.TypeCompletions
)

// Profile is one load profile: what to send, where, and how hard.
type Profile struct {
	Model string // -m/--model: the model name put in every request
	URL   string // -u/--url: server base URL (scheme optional)
	// MoreURLs are the servers of further --url flags; with URLStrategy
	// (round_robin) request i goes to URL i mod n.
	MoreURLs     []string
	URLStrategy  string
	Endpoint     string // --endpoint: custom path; default from EndpointType
	EndpointType string // --endpoint-type: chat | completions | … (endpoint.Types)
	// RequestTemplate and ResponseField are the template endpoint type's:
	// the request body's Go template (--request-template; "@file" reads
	// a file, which Validate puts in its place) and the field path of the
	// answer's text (--response-field).
	RequestTemplate string
	ResponseField   string
	Streaming       bool // --streaming

	Concurrency     int  // --concurrency: in-flight requests (closed loop), or the ceiling of an open loop
	ConcurrencySet  bool // whether --concurrency was given (with a rate it then caps in-flight requests)
	RequestCount    int  // --request-count
	RequestCountSet bool

	RequestRate       float64 // --request-rate: open loop, requests per second
	ArrivalPattern    string  // --arrival-pattern: constant | poisson | gamma
	ArrivalSmoothness float64 // --arrival-smoothness: gamma shape k (1 = Poisson)

	BenchmarkDuration float64 // --benchmark-duration, seconds; replaces --request-count
	GracePeriod       float64 // --benchmark-grace-period, seconds

	WarmupRequestCount int     // --warmup-request-count
	WarmupDuration     float64 // --warmup-duration, seconds
	WarmupConcurrency  int     // --warmup-concurrency; default --concurrency
	WarmupRequestRate  float64 // --warmup-request-rate; default --request-rate

	RateRampDuration        float64 // --request-rate-ramp-duration, seconds
	ConcurrencyRampDuration float64 // --concurrency-ramp-duration, seconds

	CancellationRate  float64 // --request-cancellation-rate, percent of requests
	CancellationDelay float64 // --request-cancellation-delay, seconds after sending

	InputFile                string  // --input-file: JSONL prompts (and timestamps for a fixed schedule)
	CustomDatasetType        string  // --custom-dataset-type: "" (plain JSONL) or mooncake_trace
	DatasetSampling          string  // --dataset-sampling-strategy: sequential (default), shuffle, random
	PublicDataset            string  // --public-dataset: sharegpt, read from --input-file (nothing is downloaded)
	ISLBlockSize             int     // --isl-block-size: tokens per hash_ids block of a trace (0: the type's, see BlockSize)
	FixedSchedule            bool    // --fixed-schedule: send at the file's timestamps
	FixedScheduleAutoOffset  bool    // --fixed-schedule-auto-offset: first timestamp becomes 0
	FixedScheduleStartOffset int     // --fixed-schedule-start-offset, ms: skip earlier timestamps
	FixedScheduleEndOffset   int     // --fixed-schedule-end-offset, ms: skip later timestamps (0: none)
	SynthesisSpeedupRatio    float64 // --synthesis-speedup-ratio: a trace's timestamps divided by this (0: 1)
	SynthesisMaxISL          int     // --synthesis-max-isl: a trace's requests with more input tokens are left out
	SynthesisMaxOSL          int     // --synthesis-max-osl: a trace's output lengths capped at this
	ConversationNum          int     // --conversation-num: synthetic multi-turn sessions (0: single-turn requests)
	ConversationTurnMean     float64 // --conversation-turn-mean: turns per session (≥ 1)
	ConversationTurnStddev   float64 // --conversation-turn-stddev
	TurnDelayMean            float64 // --conversation-turn-delay-mean, ms after a turn's response
	TurnDelayStddev          float64 // --conversation-turn-delay-stddev, ms
	TurnDelayRatio           float64 // --conversation-turn-delay-ratio: every delay times this (0: 1)
	UserContextPromptLength  int     // --user-context-prompt-length: tokens of a context unique to each session, before its first turn
	PrefillConcurrency       int     // --prefill-concurrency: requests at once between send and first token (0: no limit)
	NumUsers                 int     // --num-users: users of --user-centric-rate, each one session at a time
	UserCentricRate          float64 // --user-centric-rate: requests/s over all users; a user's turns are num-users/rate apart
	NumDatasetEntries        int     // --num-dataset-entries: prompts cycled by duration-bound closed loops
	// Synthetic rankings requests (a rankings endpoint without an input
	// file): passages a query, and tokens of each passage and query,
	// normal and rounded (AIPerf's --rankings-* flags and defaults).
	RankingsPassagesMean, RankingsPassagesStddev           int
	RankingsPassageTokensMean, RankingsPassageTokensStddev int
	RankingsQueryTokensMean, RankingsQueryTokensStddev     int
	// Synthetic images (AIPerf's --image-* flags): each request's prompt
	// with ImageBatchSize images of a normal width and height, in
	// ImageFormat; none while the width or height mean is 0.
	ImageWidthMean, ImageWidthStddev   float64
	ImageHeightMean, ImageHeightStddev float64
	ImageFormat                        string // png, jpeg or random
	ImageBatchSize                     int
	// Synthetic audio (AIPerf's --audio-* flags): AudioBatchSize clips a
	// request of a normal length in seconds, WAV, a sample rate and depth
	// drawn from the lists; none while the length mean is 0.
	AudioLengthMean, AudioLengthStddev float64
	AudioFormat                        string
	AudioSampleRates                   []float64 // kHz
	AudioDepths                        []int     // bits
	AudioChannels                      int
	AudioBatchSize                     int

	Tokenizer                string // --tokenizer: "" (builtin o200k_base), a tokenizer.json, or ORG/NAME in the local HF cache
	TokenizerRevision        string // --tokenizer-revision: the cached snapshot of an ORG/NAME
	TokenizerTrustRemoteCode bool   // --tokenizer-trust-remote-code: accepted, no effect (no code is run)

	UseServerTokenCount bool     // --use-server-token-count: ISL/OSL from the server's usage
	ServerMetrics       []string // --server-metrics URL..., scraped during the run
	NoServerMetrics     bool     // --no-server-metrics: don't probe <url>/metrics

	SeqDist string // --sequence-distribution / --seq-dist: "isl[|std],osl[|std]:weight;..."

	NumPrefixPrompts         int     // --num-prefix-prompts: a pool of this many prefixes, one before each prompt
	PrefixPromptLength       int     // --prefix-prompt-length: tokens in each prefix
	SharedSystemPromptLength int     // --shared-system-prompt-length: one system prompt of this many tokens for every request
	ISLMean                  int     // --synthetic-input-tokens-mean / --isl
	ISLStddev                float64 // --synthetic-input-tokens-stddev
	OSLMean                  int     // --output-tokens-mean / --osl; 0 leaves max_tokens unset
	OSLStddev                float64 // --output-tokens-stddev

	ExtraInputs []string // --extra-inputs key:value, repeatable
	Headers     []string // -H/--header "Name: value", repeatable
	APIKey      string   // --api-key, sent as a bearer token

	Seed    uint64 // --random-seed
	SeedSet bool   // whether Seed was given; when not, one is drawn and stored
	// Repeat is the gate's repeat index (1..R; 0 for a lone run): each
	// repeat sends its own prompts, with the same lengths, arrivals and
	// shape, so a server's prefix cache never serves one repeat from another.
	Repeat int

	RequestTimeoutSeconds float64 // --request-timeout-seconds
	ArtifactDir           string  // --artifact-dir
	Goodput               string  // --goodput "metric:value ..."
	Workers               int     // --workers; 0 picks a default from CPUs and concurrency
	MaxErrorRate          float64 // --max-error-rate, percent of requests
	SliceDuration         float64 // --slice-duration: seconds per metrics window
}

// DefaultProfile holds AIPerf's defaults where AIPerf has one.
var DefaultProfile = Profile{
	EndpointType:          EndpointChat,
	Concurrency:           1,
	RequestCount:          10,
	ISLMean:               550,
	RequestTimeoutSeconds: 600,
	MaxErrorRate:          10,
	SliceDuration:         5,
	ArrivalPattern:        "poisson",
	ArrivalSmoothness:     1,
	GracePeriod:           30,
	NumDatasetEntries:     100,

	ImageFormat:               "png",
	ImageBatchSize:            1,
	AudioFormat:               "wav",
	AudioSampleRates:          []float64{16},
	AudioDepths:               []int{16},
	AudioChannels:             1,
	AudioBatchSize:            1,
	RankingsPassagesMean:      1,
	RankingsPassageTokensMean: 550,
	RankingsQueryTokensMean:   550,
}

// transcription reports the audio_transcription endpoint type.
func (p *Profile) transcription() bool {
	t, err := endpoint.Lookup(p.EndpointType)
	return err == nil && t.Name == endpoint.TypeAudioTrans
}

// Audio reports synthetic audio in the requests.
func (p *Profile) Audio() bool { return p.AudioLengthMean > 0 }

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
	return p.FixedSchedule || p.Trace()
}

// Trace reports whether the input file is a trace that is replayed on its
// timestamps unasked: mooncake_trace, bailian_trace or burst_gpt_trace.
func (p *Profile) Trace() bool {
	switch p.CustomDatasetType {
	case MooncakeTrace, BailianTrace, BurstGPTTrace, BasetenTrace:
		return true
	}
	return false
}

// MultiTurn reports whether the profile sends synthetic multi-turn
// sessions (--conversation-num, or more than one turn a conversation).
func (p *Profile) MultiTurn() bool {
	return p.ConversationNum > 0 || p.ConversationTurnMean > 1 || p.CustomDatasetType == MultiTurnFile || p.CustomDatasetType == WekaTrace || p.UserCentricRate > 0
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
	RandomPool    = dataset.RandomPool
	WekaTrace     = dataset.WekaTrace
	RawPayload    = dataset.RawPayload
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

// Validate reports every problem with p at once, each naming its flag.
func (p *Profile) Validate() error {
	var errs []error
	bad := func(format string, a ...any) { errs = append(errs, fmt.Errorf(format, a...)) }
	if strings.TrimSpace(p.Model) == "" {
		bad("-m/--model is required")
	}
	if _, err := p.TargetURLs(); err != nil {
		bad("-u/--url: %v", err)
	}
	if p.URLStrategy != "" && p.URLStrategy != "round_robin" {
		bad("--url-strategy %q: want round_robin", p.URLStrategy)
	}
	if t, err := endpoint.Lookup(p.EndpointType); err != nil {
		bad("--endpoint-type: %v", err)
	} else {
		p.EndpointType = t.Name // an alias is its type, in the plan and its hash
		if (t.Traits.NonToken() || t.Traits.WholeOnly) && p.Streaming {
			bad("--streaming: --endpoint-type %s answers whole (its API does not stream)", t.Name)
		}
		if t.Name == endpoint.TypeTemplate {
			if file, ok := strings.CutPrefix(p.RequestTemplate, "@"); ok {
				if b, err := os.ReadFile(file); err != nil {
					bad("--request-template: %v", err)
				} else {
					p.RequestTemplate = string(b)
				}
			}
			if _, err := endpoint.NewTemplate(p.RequestTemplate, p.ResponseField); err != nil {
				bad("--endpoint-type template: %v (--request-template, --response-field)", err)
			}
			if strings.TrimSpace(p.Endpoint) == "" {
				bad("--endpoint-type template: needs --endpoint, the path to post to")
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
	if _, err := ParseExtraInputs(p.ExtraInputs); err != nil {
		errs = append(errs, err)
	}
	if _, err := ParseHeaders(p.Headers); err != nil {
		errs = append(errs, err)
	}
	if !(p.RequestTimeoutSeconds > 0) {
		bad("--request-timeout-seconds %g: must be positive", p.RequestTimeoutSeconds)
	}
	if _, err := metrics.ParseGoodput(p.Goodput); err != nil {
		errs = append(errs, err)
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
	return errors.Join(errs...)
}

// TargetURL is the full URL requests are posted to. --url is a base URL,
// as in AIPerf: the endpoint type's path (or --endpoint) is appended to
// whatever path it has, so http://gw/qwen posts to
// http://gw/qwen/v1/chat/completions. A base that ends in /v1 doesn't get
// it twice, a base that already ends in the type's whole path is taken as
// the endpoint, and a URL without a scheme gets http://.
func (p *Profile) TargetURL() (string, error) {
	raw := strings.TrimSpace(p.URL)
	if raw == "" {
		return "", errors.New("is required")
	}
	if !strings.Contains(raw, "://") {
		raw = "http://" + raw
	}
	u, err := url.Parse(raw)
	if err != nil {
		return "", err
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return "", fmt.Errorf("%q: scheme must be http or https", p.URL)
	}
	if u.Host == "" {
		return "", fmt.Errorf("%q: no host", p.URL)
	}
	if u.Fragment != "" {
		return "", fmt.Errorf("%q: a URL to post to has no #fragment", p.URL)
	}
	def := DefaultPath(p.EndpointType)
	if t, err := endpoint.Lookup(p.EndpointType); err == nil && p.Streaming && t.StreamPath != "" {
		def = t.StreamPath
	}
	// The path is joined escaped (a {model} in it is the model's name, one
	// path segment whatever it holds), then set in both forms.
	escaped := JoinPath(u.EscapedPath(), p.Endpoint, strings.ReplaceAll(def, "{model}", url.PathEscape(p.Model)))
	if u.Path, err = url.PathUnescape(escaped); err != nil {
		return "", fmt.Errorf("%q: path %v", p.URL, err)
	}
	u.RawPath = escaped
	return u.String(), nil
}

// TargetURLs is TargetURL for every --url, in order.
func (p *Profile) TargetURLs() ([]string, error) {
	var out []string
	for i, raw := range append([]string{p.URL}, p.MoreURLs...) {
		q := *p
		q.URL = raw
		u, err := q.TargetURL()
		if err != nil {
			if i > 0 {
				err = fmt.Errorf("the %s: %w", ordinal(i+1), err)
			}
			return nil, err
		}
		out = append(out, u)
	}
	return out, nil
}

func ordinal(n int) string {
	switch n {
	case 2:
		return "2nd"
	case 3:
		return "3rd"
	}
	return strconv.Itoa(n) + "th"
}

// JoinPath appends an endpoint's path to a base URL's: custom (--endpoint)
// when given, else def, the endpoint type's. Without custom, a base that
// already ends in def is the whole endpoint; a /v1 at the base's end and
// at the path's start is kept once.
func JoinPath(base, custom, def string) string {
	if strings.TrimSpace(custom) == "" && def == "" {
		return base // (a type with no path, raw: the URL as given)
	}
	base = strings.TrimRight(base, "/")
	path := "/" + strings.TrimLeft(def, "/")
	if strings.TrimSpace(custom) != "" {
		path = "/" + strings.TrimLeft(strings.TrimSpace(custom), "/")
	} else if strings.HasSuffix(base, path) {
		return base
	}
	if strings.HasSuffix(base, "/v1") && (path == "/v1" || strings.HasPrefix(path, "/v1/")) {
		path = strings.TrimPrefix(path, "/v1")
	}
	return base + path
}

// DefaultPath is an endpoint type's path (chat's for an unknown type,
// which Validate refuses).
func DefaultPath(endpointType string) string {
	if t, err := endpoint.Lookup(endpointType); err == nil {
		return t.Path
	}
	return "/v1/chat/completions"
}

// ParseExtraInputs parses --extra-inputs key:value pairs. A value that is
// valid JSON (true, 12, "x", {...}) is kept as that JSON; anything else is a
// string. The result marshals with sorted keys, so payloads are stable.
func ParseExtraInputs(pairs []string) (map[string]json.RawMessage, error) {
	out := map[string]json.RawMessage{}
	var errs []error
	for _, kv := range pairs {
		k, v, ok := strings.Cut(kv, ":")
		k = strings.TrimSpace(k)
		if !ok || k == "" {
			errs = append(errs, fmt.Errorf("--extra-inputs %q: want key:value", kv))
			continue
		}
		v = strings.TrimSpace(v)
		switch {
		case json.Valid([]byte(v)):
			out[k] = json.RawMessage(v)
		case strings.HasPrefix(v, "[") || strings.HasPrefix(v, "{"):
			// Meant as JSON, and broken: sending it as a string would change
			// the request without a word.
			var x any
			err := json.Unmarshal([]byte(v), &x)
			errs = append(errs, fmt.Errorf("--extra-inputs %q: the value looks like JSON but is not: %v", kv, err))
		default:
			b, _ := json.Marshal(v)
			out[k] = b
		}
		if k == "stream" {
			errs = append(errs, fmt.Errorf("--extra-inputs %q: streaming is set by --streaming (and run.json records it); leave stream out of --extra-inputs", kv))
		}
	}
	return out, errors.Join(errs...)
}

// ParseHeaders parses -H "Name: value" (or Name:value) headers.
func ParseHeaders(hs []string) ([][2]string, error) {
	var out [][2]string
	var errs []error
	for _, h := range hs {
		k, v, ok := strings.Cut(h, ":")
		k = strings.TrimSpace(k)
		if !ok || k == "" || strings.ContainsAny(k, " \t") {
			errs = append(errs, fmt.Errorf("-H/--header %q: want \"Name: value\"", h))
			continue
		}
		out = append(out, [2]string{k, strings.TrimSpace(v)})
	}
	return out, errors.Join(errs...)
}

// validateLoad checks the load-shape flags, including the ones that
// contradict each other.
func (p *Profile) validateLoad() []error {
	var errs []error
	bad := func(format string, a ...any) { errs = append(errs, fmt.Errorf(format, a...)) }
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
	if p.WarmupConcurrency < 0 || p.WarmupRequestRate < 0 {
		bad("--warmup-concurrency and --warmup-request-rate must not be negative")
	}
	if (p.WarmupConcurrency > 0 || p.WarmupRequestRate > 0) && p.WarmupRequestCount == 0 && p.WarmupDuration == 0 {
		bad("--warmup-concurrency/--warmup-request-rate without --warmup-request-count or --warmup-duration")
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
	switch {
	case p.CustomDatasetType == "" || p.Trace() || p.CustomDatasetType == SingleTurn || p.CustomDatasetType == MultiTurnFile || p.CustomDatasetType == WekaTrace:
	case p.CustomDatasetType == RawPayload || p.CustomDatasetType == InputsJSON:
		if st, err := os.Stat(p.InputFile); err == nil && st.IsDir() {
			bad("--custom-dataset-type raw_payload: a folder (AIPerf's multi-turn payloads) is not supported yet: give one JSONL file of request bodies")
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
		bad("--custom-dataset-type %s: an AIPerf dataset type not supported here yet (supported: single_turn, multi_turn, random_pool, mooncake_trace, bailian_trace, burst_gpt_trace, baseten_trace, weka_trace, raw_payload, inputs_json, and JSONL of text or input_length without the flag)", p.CustomDatasetType)
	default:
		bad("--custom-dataset-type %q: want single_turn, multi_turn, random_pool, mooncake_trace, bailian_trace, burst_gpt_trace, baseten_trace, weka_trace, raw_payload or inputs_json", p.CustomDatasetType)
	}
	if p.CustomDatasetType != "" && p.InputFile == "" {
		bad("--custom-dataset-type %s needs --input-file", p.CustomDatasetType)
	}
	if _, err := ParseSeqDist(p.SeqDist); err != nil {
		bad("%v", err)
	}
	if _, err := tokenizer.Load(p.Tokenizer, p.TokenizerRevision); err != nil {
		bad("%v", err)
	}
	switch {
	case p.PublicDataset == "":
	case p.PublicDataset != ShareGPT:
		bad("--public-dataset %s: not supported here yet (supported: sharegpt)", p.PublicDataset)
	case p.InputFile == "":
		bad("--public-dataset sharegpt reads a local file, as nothing is downloaded: give --input-file ShareGPT_V3_unfiltered_cleaned_split.json (or any ShareGPT JSON)")
	case p.CustomDatasetType != "" || p.Replays():
		bad("--public-dataset sharegpt with --custom-dataset-type or a fixed schedule: ShareGPT has no timestamps")
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
	weka := p.CustomDatasetType == WekaTrace
	if p.MultiTurn() {
		switch {
		case p.EndpointType != EndpointChat && !weka:
			bad("multi-turn sessions (--conversation-num, --conversation-turn-mean) thread a chat's messages: they need --endpoint-type chat")
		case p.Replays():
			bad("multi-turn sessions start on a rate or fill their slots here: not on a fixed schedule yet")
		case p.RequestRate > 0 && p.UserCentricRate > 0:
			bad("--request-rate with --user-centric-rate: the users' rate is the rate (leave out --request-rate)")
		case p.RequestRate > 0 && !p.ConcurrencySet:
			bad("multi-turn sessions with --request-rate need --concurrency here: AIPerf's conversation-centric mode (sessions start at the rate, each holds one of --concurrency slots for all its turns, delays kept); its rate-centric mode without --concurrency (every turn on the rate, delays ignored) is not supported yet")
		case p.InputFile != "" && p.CustomDatasetType != MultiTurnFile && !weka:
			bad("multi-turn sessions from --input-file need --custom-dataset-type multi_turn (the --conversation-* flags make synthetic ones)")
		case (p.CustomDatasetType == MultiTurnFile || weka) && (p.ConversationNum > 0 || p.ConversationTurnMean > 1 || p.ConversationTurnStddev > 0 || p.UserCentricRate > 0):
			bad("--custom-dataset-type %s takes its conversations and turns from the file: leave out --conversation-num, --conversation-turn-mean/-stddev and --user-centric-rate", p.CustomDatasetType)
		case (p.CustomDatasetType == MultiTurnFile || weka) && p.DatasetSampling != "" && p.DatasetSampling != SamplingSequential:
			bad("--custom-dataset-type %s runs its conversations in file order: --dataset-sampling-strategy %s is not supported with it yet", p.CustomDatasetType, p.DatasetSampling)
		}
		for _, v := range []float64{p.ConversationTurnMean, p.ConversationTurnStddev, p.TurnDelayMean, p.TurnDelayStddev, p.TurnDelayRatio} {
			if v < 0 || math.IsNaN(v) || math.IsInf(v, 0) {
				bad("the --conversation-turn-* flags: %g is not a finite, non-negative number", v)
				break
			}
		}
		if (p.UserCentricRate > 0) != (p.NumUsers > 0) || p.UserCentricRate < 0 || math.IsNaN(p.UserCentricRate) || math.IsInf(p.UserCentricRate, 0) || p.NumUsers < 0 {
			bad("--user-centric-rate and --num-users go together: a positive rate (requests/s over all users) and a user count")
		} else if p.UserCentricRate > 0 && p.ConcurrencySet {
			bad("--user-centric-rate with --concurrency: the users are the concurrency (give --num-users)")
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
	case p.Images() && p.EndpointType != EndpointChat && p.EndpointType != endpoint.TypeImageRetr && p.EndpointType != endpoint.TypeImageEdit:
		bad("synthetic images go in a chat's content parts, an image_retrieval request or an image_edit upload: they need --endpoint-type chat, image_retrieval or image_edit")
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
	case p.Audio() && p.EndpointType != EndpointChat && !p.transcription():
		bad("synthetic audio goes in a chat's content parts or a transcription's upload: it needs --endpoint-type chat or audio_transcription")
	case p.transcription() && !p.Audio() && p.InputFile == "":
		bad("--endpoint-type audio_transcription uploads audio: give --audio-length-mean, or an --input-file whose lines have \"audio\"")
	case p.Audio() && p.MultiTurn():
		bad("synthetic audio with multi-turn sessions is not supported yet")
	}
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
	return errs
}

// ParseSeqDist reads AIPerf's --sequence-distribution:
// "128,64:25;512,128:50;1024,256:25" is ISL 128 and OSL 64 for a quarter
// of the requests, and so on; "512|50,128|10:40" gives each a standard
// deviation. The weights need not add up to 100. "" is no mixture.
func ParseSeqDist(s string) ([]dataset.Bucket, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	bad := func(part, why string) error {
		return fmt.Errorf("--sequence-distribution %q: %q: %s (want isl[|stddev],osl[|stddev]:weight;...)", s, part, why)
	}
	num := func(v string) (float64, error) { return strconv.ParseFloat(strings.TrimSpace(v), 64) }
	lenStd := func(v string) (int, float64, bool) {
		mean, std, _ := strings.Cut(v, "|")
		m, err := strconv.Atoi(strings.TrimSpace(mean))
		if err != nil || m < 1 {
			return 0, 0, false
		}
		if std == "" {
			return m, 0, true
		}
		sd, err := num(std)
		return m, sd, err == nil && sd >= 0
	}
	var out []dataset.Bucket
	for _, part := range strings.Split(s, ";") {
		if strings.TrimSpace(part) == "" {
			continue
		}
		lens, w, ok := strings.Cut(part, ":")
		if !ok {
			return nil, bad(part, "no weight")
		}
		weight, err := num(w)
		if err != nil || !(weight > 0) || math.IsInf(weight, 0) {
			return nil, bad(part, "the weight must be a positive number")
		}
		is, os, ok := strings.Cut(lens, ",")
		if !ok {
			return nil, bad(part, "want an input and an output length")
		}
		isl, islStd, ok1 := lenStd(is)
		osl, oslStd, ok2 := lenStd(os)
		if !ok1 || !ok2 {
			return nil, bad(part, "lengths must be positive whole numbers, their stddevs not negative")
		}
		out = append(out, dataset.Bucket{ISL: isl, OSL: osl, ISLStd: islStd, OSLStd: oslStd, Weight: weight})
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("--sequence-distribution %q: no buckets", s)
	}
	return out, nil
}
