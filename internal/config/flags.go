package config

import (
	"errors"
	"slices"
	"strconv"
	"strings"

	"github.com/aiperf-action/aiperf-action/internal/percent"
	"github.com/spf13/pflag"
)

// Bind binds AIPerf-named flags into p's fields, with p's values as the
// defaults. The profile command and the gate's scenarios share it, so a
// scenario key is exactly a profile flag.
func (p *Profile) Bind(fs *pflag.FlagSet) {
	p.bindRequests(fs)
	p.bindLoadAndMedia(fs)
	p.bindAIPerf(fs)
	for g, names := range flagGroups {
		for _, n := range names {
			fs.SetAnnotation(n, GroupAnnotation, []string{g})
		}
	}
}

// bindRequests binds what each request is and where it goes, the seeds,
// the output folder and the workers (the first flags of Bind, in order).
func (p *Profile) bindRequests(fs *pflag.FlagSet) {
	models := &modelList{p: p}
	fs.VarP(models, "model", "m", "model name to put in requests (default: the first model the server's /v1/models lists; also AIPerf's positional MODEL)")
	fs.Var(models, "model-names", "alias of --model (AIPerf's name)")
	fs.StringVar(&p.ModelSelection, "model-selection-strategy", p.ModelSelection, "with several models: round_robin (request i names model i mod n, AIPerf's default) or random (each request's model drawn, seeded)")
	fs.VarP(&urlList{p: p}, "url", "u", "server base URL, e.g. http://127.0.0.1:8000 or http://gateway/qwen (the endpoint type's path is appended); repeat it for several servers, which take the requests in turn (--url-strategy)")
	fs.StringVar(&p.URLStrategy, "url-strategy", p.URLStrategy, "with several --url: round_robin (request i goes to URL i mod n)")
	fs.StringVar(&p.Endpoint, "endpoint", p.Endpoint, "custom endpoint path, appended to --url's (default from --endpoint-type)")
	fs.StringVar(&p.Endpoint, "custom-endpoint", p.Endpoint, "alias of --endpoint (AIPerf's name)")
	fs.StringVar(&p.RequestTemplate, "request-template", p.RequestTemplate, "--endpoint-type template: the request body as a Go template over .Model .Prompt .System .MaxTokens .Stream, with json (e.g. {\"q\":{{json .Prompt}}}); @file reads it from a file")
	fs.StringVar(&p.ResponseField, "response-field", p.ResponseField, "--endpoint-type template: the answer's text at this field path of the response or of each SSE event, e.g. choices.0.text")
	fs.StringVar(&p.EndpointType, "endpoint-type", p.EndpointType, "chat | completions | responses | messages (Anthropic's; also anthropic_messages) | ollama_chat | ollama_generate | embeddings | nim_embeddings | huggingface_generate | sglang_generate | triton_generate | kserve | image_generation | template")
	fs.BoolVar(&p.Streaming, "streaming", p.Streaming, "stream responses (SSE)")
	fs.Var(&sweepValue{p: p, param: SweepConcurrency}, "concurrency", "requests in flight (closed loop), split across workers; several (10,20,30 or 10 20 30) sweep them, each a run (AIPerf's parameter sweep)")
	fs.IntVar(&p.RequestCount, "request-count", p.RequestCount, "requests to send")
	fs.IntVar(&p.ISLMean, "synthetic-input-tokens-mean", p.ISLMean, "mean input length in tokens")
	fs.IntVar(&p.ISLMean, "isl", p.ISLMean, "alias of --synthetic-input-tokens-mean")
	fs.Float64Var(&p.ISLStddev, "synthetic-input-tokens-stddev", p.ISLStddev, "input length standard deviation")
	fs.IntVar(&p.OSLMean, "output-tokens-mean", p.OSLMean, "mean requested output tokens (max_tokens); 0 leaves it unset")
	fs.IntVar(&p.OSLMean, "osl", p.OSLMean, "alias of --output-tokens-mean")
	fs.Float64Var(&p.OSLStddev, "output-tokens-stddev", p.OSLStddev, "requested output tokens standard deviation")
	fs.StringVar(&p.SeqDist, "sequence-distribution", p.SeqDist, "ISL/OSL mixture \"isl[|std],osl[|std]:weight;...\", e.g. \"128,64:25;512,128:50;1024,256:25\" (instead of the means)")
	fs.StringVar(&p.SeqDist, "seq-dist", p.SeqDist, "alias of --sequence-distribution")
	fs.IntVar(&p.NumPrefixPrompts, "num-prefix-prompts", p.NumPrefixPrompts, "a pool of this many prefix prompts; each request starts with one, chosen by the seed (with --prefix-prompt-length)")
	fs.IntVar(&p.PrefixPromptLength, "prefix-prompt-length", p.PrefixPromptLength, "tokens in each prefix prompt (added to the prompt's length)")
	fs.StringVar(&p.SystemPrompt, "system-prompt", p.SystemPrompt, "this text as the system message of every request (chat, responses, messages, chat_embeddings), before a file's or the synthetic prompts")
	fs.StringVar(&p.SystemPromptFile, "system-prompt-file", p.SystemPromptFile, "--system-prompt read from this file once, at the start")
	fs.IntVar(&p.SharedSystemPromptLength, "shared-system-prompt-length", p.SharedSystemPromptLength, "one system prompt of this many tokens before every request (chat: a system message)")
	fs.StringArrayVar(&p.ExtraInputs, "extra-inputs", p.ExtraInputs, "key:value added to every request body; JSON values kept as JSON (repeatable)")
	fs.StringArrayVarP(&p.Headers, "header", "H", p.Headers, "\"Name: value\" HTTP header (repeatable)")
	fs.StringVar(&p.APIKey, "api-key", p.APIKey, "bearer token for the Authorization header")
	fs.Uint64Var(&p.Seed, "random-seed", p.Seed, "root seed for everything random (default: drawn and printed)")
	fs.Uint64Var(&p.PayloadSeed, "payload-seed", p.PayloadSeed, "root of the prompts' words alone, as run.json's payload_seed records it: with --random-seed, rebuilds a gate run's prompts (0: from --random-seed)")
	fs.Float64Var(&p.RequestTimeoutSeconds, "request-timeout-seconds", p.RequestTimeoutSeconds, "per-request timeout")
	fs.StringVar(&p.ArtifactDir, "output-artifact-dir", p.ArtifactDir, "folder for run.json and the other artifacts (default artifacts/<model>-<type>-c<concurrency>)")
	fs.StringVar(&p.ArtifactDir, "artifact-dir", p.ArtifactDir, "alias of --output-artifact-dir (AIPerf's name)")
	fs.StringVar(&p.Goodput, "goodput", p.Goodput, "SLOs \"metric:value ...\" (ms, or tokens/sec/user)")
	fs.IntVar(&p.Workers, "workers", p.Workers, "worker processes (default: one per 512 concurrent streams, at most one per CPU but one)")
	fs.IntSliceVar(&p.WorkerWeights, "worker-weights", nil, "each worker's share of the requests and of a concurrency, for machines of unequal size (2,1,1: the first takes half); one a worker")
	fs.StringVar(&p.WorkerListen, "worker-listen", "", "host:port: start no worker here; the --workers workers join from other hosts (aiperf-action worker --join tcp://host:port --index i --of N, the run's token in $AIPERF_ACTION_WORKER_TOKEN), over this port and the next")
	fs.Var(percentFlag{&p.MaxErrorRate}, "max-error-rate", "error rate above which the run fails (exit 2): 5%, or 5 (percent), or 0.05 (a fraction), as compare's")
	fs.Float64Var(&p.SliceDuration, "slice-duration", p.SliceDuration, "seconds per metrics window in run.json")
}

// bindLoadAndMedia binds the load's shape, the synthetic media, the
// tokenizer, the server's metrics and the exports (Bind's second part,
// in order).
func (p *Profile) bindLoadAndMedia(fs *pflag.FlagSet) {
	fs.Var(&sweepValue{p: p, param: SweepRequestRate}, "request-rate", "open loop: requests per second (with --concurrency, the concurrency is a ceiling); several sweep them, each a run")
	fs.StringVar(&p.ArrivalPattern, "arrival-pattern", p.ArrivalPattern, "constant | poisson | gamma")
	fs.Float64Var(&p.ArrivalSmoothness, "arrival-smoothness", p.ArrivalSmoothness, "gamma shape k: 1 is Poisson, <1 burstier, >1 smoother (vLLM's --burstiness)")
	fs.Float64Var(&p.BenchmarkDuration, "benchmark-duration", p.BenchmarkDuration, "seconds to send for (with --request-count too: whichever comes first)")
	fs.Float64Var(&p.GracePeriod, "benchmark-grace-period", p.GracePeriod, "seconds to wait for in-flight requests after --benchmark-duration; the rest are cancelled")
	fs.IntVar(&p.WarmupRequestCount, "warmup-request-count", p.WarmupRequestCount, "warmup requests before profiling (kept in records.jsonl, left out of metrics)")
	fs.IntVar(&p.NumWarmupSessions, "num-warmup-sessions", p.NumWarmupSessions, "warmup of this many whole sessions (synthetic, --session-turns-mean/stddev turns each, history kept) before profiling; instead of --warmup-request-count")
	fs.Float64Var(&p.WarmupDuration, "warmup-duration", p.WarmupDuration, "seconds of warmup before profiling")
	fs.IntVar(&p.WarmupConcurrency, "warmup-concurrency", p.WarmupConcurrency, "warmup concurrency (default --concurrency)")
	fs.Float64Var(&p.WarmupRequestRate, "warmup-request-rate", p.WarmupRequestRate, "warmup request rate (default --request-rate)")
	fs.Float64Var(&p.RateRampDuration, "request-rate-ramp-duration", p.RateRampDuration, "seconds over which the rate rises linearly from 0 to --request-rate")
	fs.Float64Var(&p.ConcurrencyRampDuration, "concurrency-ramp-duration", p.ConcurrencyRampDuration, "seconds over which the concurrency rises linearly from 1 to --concurrency")
	fs.Float64Var(&p.CancellationRate, "request-cancellation-rate", p.CancellationRate, "percent of requests to cancel")
	fs.Float64Var(&p.CancellationDelay, "request-cancellation-delay", p.CancellationDelay, "seconds after sending that a cancelled request is cancelled")
	fs.StringVar(&p.InputFile, "input-file", p.InputFile, "JSONL prompts: {\"text\"|\"input_length\", \"output_length\", \"timestamp\" (ms)}")
	fs.StringVar(&p.CustomDatasetType, "custom-dataset-type", p.CustomDatasetType, "single_turn: AIPerf's JSONL fields (text, texts, text_input, output_length, timestamp, extra); random_pool: the same, drawn at random with replacement; mooncake_trace: --input-file is a Mooncake trace (timestamp in ms, input_length, output_length, hash_ids); bailian_trace: a Bailian trace (the same, timestamp in s, 16-token blocks); burst_gpt_trace: a BurstGPT CSV (Timestamp, Request tokens, Response tokens); each replayed on its timestamps; dag_jsonl: AIPerf's DAG JSONL: forks, spawns and joins, orchestrator rounds; each root's tree a session")
	fs.StringVar(&p.PublicDataset, "public-dataset", p.PublicDataset, "AIPerf's public datasets, downloaded from the Hugging Face hub into its cache: sharegpt (the first human/gpt pair of each conversation, vLLM's length filter; or from --input-file), aimo, aimo_aime, aimo_numina_cot, aimo_numina_1_5, spec_al_gsm8k, spec_al_math500, spec_al_humaneval, spec_al_mbpp, spec_al_mtbench (two turns), instruct_coder, blazedit_5k, blazedit_10k, mmstar, vision_arena, llava_onevision (with images), mmvu (a video URL each, fetched by the server), librispeech, voxpopuli, gigaspeech, ami, spgispeech (speech clips as WAV with \"Transcribe this audio.\", clips over 30 s left out); spec_bench from its GitHub file (AIPERF_SPEC_BENCH_URL for a mirror)")
	fs.StringVar(&p.HFSubset, "hf-subset", p.HFSubset, "the --public-dataset's subset (config) on the hub instead of its own, as AIPerf's")
	fs.StringVar(&p.DatasetSampling, "dataset-sampling-strategy", p.DatasetSampling, "how --input-file's prompts are taken: sequential (default), shuffle (each pass in its own seeded order) or random (seeded, with replacement)")
	fs.IntVar(&p.ISLBlockSize, "isl-block-size", p.ISLBlockSize, "tokens per hash_ids block of a trace (default 512; bailian_trace 16): requests sharing leading hash ids share that prefix")
	fs.Float64Var(&p.SynthesisSpeedupRatio, "synthesis-speedup-ratio", p.SynthesisSpeedupRatio, "replay a trace this many times faster: its timestamps divided by the ratio (default 1)")
	fs.IntVar(&p.SynthesisMaxISL, "synthesis-max-isl", p.SynthesisMaxISL, "leave out a trace's requests of more input tokens than this")
	fs.IntVar(&p.SynthesisMaxOSL, "synthesis-max-osl", p.SynthesisMaxOSL, "cap a trace's output lengths at this many tokens")
	fs.BoolVar(&p.FixedSchedule, "fixed-schedule", p.FixedSchedule, "send at the --input-file timestamps")
	fs.BoolVar(&p.FixedScheduleAutoOffset, "fixed-schedule-auto-offset", p.FixedScheduleAutoOffset, "shift the schedule so its first timestamp is 0")
	fs.IntVar(&p.FixedScheduleStartOffset, "fixed-schedule-start-offset", p.FixedScheduleStartOffset, "ms: start the replay at this timestamp (earlier requests are skipped; one stamped here is sent at once)")
	fs.IntVar(&p.FixedScheduleEndOffset, "fixed-schedule-end-offset", p.FixedScheduleEndOffset, "ms: skip requests timestamped after this")
	fs.IntVar(&p.NumDatasetEntries, "num-dataset-entries", p.NumDatasetEntries, "prompts cycled by a --benchmark-duration closed loop")
	fs.IntVar(&p.ConversationNum, "conversation-num", p.ConversationNum, "synthetic multi-turn conversations (sessions), each on one concurrency slot, its turns in order with the history (chat)")
	fs.IntVar(&p.ConversationNum, "num-conversations", p.ConversationNum, "alias of --conversation-num")
	fs.IntVar(&p.ConversationNum, "num-sessions", p.ConversationNum, "alias of --conversation-num")
	fs.Float64Var(&p.ConversationTurnMean, "conversation-turn-mean", p.ConversationTurnMean, "mean turns per conversation (each turn's prompt drawn like a single-turn prompt)")
	fs.Float64Var(&p.ConversationTurnMean, "session-turns-mean", p.ConversationTurnMean, "alias of --conversation-turn-mean")
	fs.Float64Var(&p.ConversationTurnStddev, "conversation-turn-stddev", p.ConversationTurnStddev, "standard deviation of the turns per conversation")
	fs.Float64Var(&p.ConversationTurnStddev, "session-turns-stddev", p.ConversationTurnStddev, "alias of --conversation-turn-stddev")
	fs.Float64Var(&p.TurnDelayMean, "conversation-turn-delay-mean", p.TurnDelayMean, "ms between a turn's response and the next turn (a user's think time)")
	fs.Float64Var(&p.TurnDelayStddev, "conversation-turn-delay-stddev", p.TurnDelayStddev, "standard deviation of the turn delay, ms")
	fs.Float64Var(&p.ImageWidthMean, "image-width-mean", p.ImageWidthMean, "synthetic images: width in pixels, mean (with --image-height-mean: images in every chat request)")
	fs.Float64Var(&p.ImageWidthStddev, "image-width-stddev", p.ImageWidthStddev, "synthetic images: width, stddev")
	fs.Float64Var(&p.ImageHeightMean, "image-height-mean", p.ImageHeightMean, "synthetic images: height in pixels, mean")
	fs.Float64Var(&p.ImageHeightStddev, "image-height-stddev", p.ImageHeightStddev, "synthetic images: height, stddev")
	fs.StringVar(&p.ImageFormat, "image-format", p.ImageFormat, "synthetic images: png, jpeg or random (each image one of the two)")
	fs.IntVar(&p.VideoWidth, "video-width", p.VideoWidth, "synthetic video: frame width in pixels (with --video-height; both turn video on, encoded by ffmpeg)")
	fs.IntVar(&p.VideoHeight, "video-height", p.VideoHeight, "synthetic video: frame height in pixels")
	fs.IntVar(&p.VideoFPS, "video-fps", p.VideoFPS, "synthetic video: frames per second")
	fs.Float64Var(&p.VideoDuration, "video-duration", p.VideoDuration, "synthetic video: seconds a clip")
	fs.StringVar(&p.VideoSynthType, "video-synth-type", p.VideoSynthType, "synthetic video: moving_shapes, grid_clock (a grid, a hand, the frame number) or noise")
	fs.StringVar(&p.VideoFormat, "video-format", p.VideoFormat, "synthetic video: container, webm or mp4")
	fs.StringVar(&p.VideoCodec, "video-codec", p.VideoCodec, "synthetic video: the ffmpeg encoder (libvpx-vp9, libx264, libx265, …)")
	fs.IntVarP(&p.PromptBatchSize, "prompt-batch-size", "b", p.PromptBatchSize, "synthetic text inputs a request, for the embeddings endpoint types (a list of inputs; each its own length from --isl)")
	fs.IntVar(&p.VideoBatchSize, "video-batch-size", p.VideoBatchSize, "synthetic video: clips a request")
	fs.IntVar(&p.VideoAudioChannels, "video-audio-num-channels", p.VideoAudioChannels, "synthetic video: an audio track of Gaussian noise, 1 (mono) or 2 (stereo) channels; 0 none")
	fs.Float64Var(&p.VideoAudioSampleRate, "video-audio-sample-rate", p.VideoAudioSampleRate, "synthetic video: the track's sample rate in Hz (kHz at 1000 or under), 8000 to 96000")
	fs.IntVar(&p.VideoAudioDepth, "video-audio-depth", p.VideoAudioDepth, "synthetic video: the track's bits a sample before encoding, 8, 16, 24 or 32")
	fs.StringVar(&p.VideoAudioCodec, "video-audio-codec", p.VideoAudioCodec, "synthetic video: the track's encoder, aac, libvorbis or libopus (default aac in mp4, libvorbis in webm)")
	fs.IntVar(&p.VideoBatchSize, "batch-size-video", p.VideoBatchSize, "synthetic video: clips a request (--video-batch-size)")
	fs.IntVar(&p.ImageBatchSize, "image-batch-size", p.ImageBatchSize, "synthetic images: images a request")
	fs.IntVar(&p.ImageBatchSize, "batch-size-image", p.ImageBatchSize, "synthetic images: images a request (--image-batch-size)")
	fs.Float64Var(&p.AudioLengthMean, "audio-length-mean", p.AudioLengthMean, "synthetic audio: clip length in seconds, mean (audio in every chat request)")
	fs.Float64Var(&p.AudioLengthStddev, "audio-length-stddev", p.AudioLengthStddev, "synthetic audio: clip length, stddev")
	fs.StringVar(&p.AudioFormat, "audio-format", p.AudioFormat, "synthetic audio: wav")
	fs.Float64SliceVar(&p.AudioSampleRates, "audio-sample-rates", p.AudioSampleRates, "synthetic audio: sample rates in kHz, one drawn a clip")
	fs.IntSliceVar(&p.AudioDepths, "audio-depths", p.AudioDepths, "synthetic audio: bit depths (8, 16), one drawn a clip")
	fs.IntVar(&p.AudioChannels, "audio-num-channels", p.AudioChannels, "synthetic audio: channels (1 or 2)")
	fs.IntVar(&p.AudioBatchSize, "audio-batch-size", p.AudioBatchSize, "synthetic audio: clips a request")
	fs.IntVar(&p.AudioBatchSize, "batch-size-audio", p.AudioBatchSize, "synthetic audio: clips a request (--audio-batch-size)")
	fs.IntVar(&p.RankingsPassagesMean, "rankings-passages-mean", p.RankingsPassagesMean, "rankings endpoints, synthetic: passages a query, mean")
	fs.IntVar(&p.RankingsPassagesStddev, "rankings-passages-stddev", p.RankingsPassagesStddev, "rankings endpoints, synthetic: passages a query, stddev")
	fs.IntVar(&p.RankingsPassageTokensMean, "rankings-passages-prompt-token-mean", p.RankingsPassageTokensMean, "rankings endpoints, synthetic: tokens a passage, mean")
	fs.IntVar(&p.RankingsPassageTokensStddev, "rankings-passages-prompt-token-stddev", p.RankingsPassageTokensStddev, "rankings endpoints, synthetic: tokens a passage, stddev")
	fs.IntVar(&p.RankingsQueryTokensMean, "rankings-query-prompt-token-mean", p.RankingsQueryTokensMean, "rankings endpoints, synthetic: tokens a query, mean")
	fs.IntVar(&p.RankingsQueryTokensStddev, "rankings-query-prompt-token-stddev", p.RankingsQueryTokensStddev, "rankings endpoints, synthetic: tokens a query, stddev")
	fs.IntVar(&p.UserContextPromptLength, "user-context-prompt-length", p.UserContextPromptLength, "tokens of a context unique to each session, before its first turn (and so in its history); counted in ISL")
	fs.IntVar(&p.PrefillConcurrency, "prefill-concurrency", p.PrefillConcurrency, "at most this many requests at once between their send and their first token (in prefill); the others wait to be sent (streaming)")
	fs.IntVar(&p.NumUsers, "num-users", p.NumUsers, "users of --user-centric-rate: each runs one session at a time, its turns in order")
	fs.Float64Var(&p.UserCentricRate, "user-centric-rate", p.UserCentricRate, "requests/s over all --num-users users: each user's turns are num-users/rate seconds apart (and after the previous answer), the users' starts 1/rate apart")
	fs.Float64Var(&p.TurnDelayRatio, "conversation-turn-delay-ratio", p.TurnDelayRatio, "multiplier of every turn delay (0.5 halves them)")
	fs.StringVar(&p.Tokenizer, "tokenizer", p.Tokenizer, "token counts and exact-length prompts: a tokenizer.json path or folder, or a Hugging Face ORG/NAME, read from the hub cache (HF_HUB_CACHE, HF_HOME) and downloaded into it from the hub (HF_ENDPOINT, HF_TOKEN) when missing, unless HF_HUB_OFFLINE=1; default builtin (o200k_base; cl100k_base also built in)")
	fs.StringVar(&p.TokenizerRevision, "tokenizer-revision", p.TokenizerRevision, "the cached snapshot of an ORG/NAME --tokenizer: a branch or tag under refs/, or a commit (default main)")
	fs.BoolVar(&p.TokenizerTrustRemoteCode, "tokenizer-trust-remote-code", p.TokenizerTrustRemoteCode, "accepted for AIPerf's command lines; no code is run: only tokenizer.json is read")
	fs.BoolVar(&p.UseServerTokenCount, "use-server-token-count", p.UseServerTokenCount, "take ISL/OSL from the server's usage (adds stream_options.include_usage to streams)")
	fs.StringArrayVar(&p.ServerMetrics, "server-metrics", p.ServerMetrics, "Prometheus /metrics URL to scrape during the run (repeatable; default <url>/metrics when it answers)")
	fs.BoolVar(&p.NoServerMetrics, "no-server-metrics", p.NoServerMetrics, "don't scrape the server's /metrics")
	fs.StringVar(&p.ExportLevel, "export-level", p.ExportLevel, "AIPerf's export files: summary (profile_export_aiperf.json and .csv) or records (and profile_export.jsonl, one line a request in AIPerf's shape; default); run.json, records.jsonl and inputs.json are always written")
	fs.StringVar(&p.ExportLevel, "profile-export-level", p.ExportLevel, "alias of --export-level (AIPerf's name)")
	fs.StringVar(&p.ExportPrefix, "profile-export-prefix", p.ExportPrefix, "name AIPerf's export files P.json, P.csv and P.jsonl instead of profile_export_aiperf.json/.csv and profile_export.jsonl")
	fs.StringVar(&p.ExportPrefix, "profile-export-file", p.ExportPrefix, "alias of --profile-export-prefix (AIPerf's name)")
	fs.Var(&gpuTelemetryFlag{p}, "gpu-telemetry", "DCGM exporter URLs (host:port or http://host:port/metrics) to scrape for GPU telemetry besides localhost:9400 and :9401, which are always tried; a .csv of DCGM fields (dcgm-exporter's counters file) to add; \"dashboard\" accepted (the summary table is printed); bare: print the table")
	fs.Lookup("gpu-telemetry").NoOptDefVal = gpuTelemetryOn
	fs.BoolVar(&p.NoGPUTelemetry, "no-gpu-telemetry", p.NoGPUTelemetry, "don't scrape any DCGM exporter")
	fs.StringVar(&p.OTelURL, "otel-url", p.OTelURL, "stream each request's GenAI metrics (OpenTelemetry semantic conventions: operation duration, token usage, time to first chunk, time per output chunk) to this OTLP/HTTP collector as the run goes: host, host:port (default port 4318) or URL; an unreachable collector is a warning, and run.json is never made from it")
	fs.StringArrayVar(&p.OTelHeaders, "otel-headers", p.OTelHeaders, "headers sent with every OTLP export, Name:Value or Name=Value (repeatable; OTEL_EXPORTER_OTLP_HEADERS is honoured too); their values are never written")
	fs.BoolVar(&p.AutoPlot, "auto-plot", p.AutoPlot, "after the run, draw its charts into <artifact-dir>/plots as PNG (aiperf-action plot's single-run set)")
	fs.StringVar(&p.GenAIProvider, "gen-ai-provider", p.GenAIProvider, "gen_ai.provider.name on the exported metrics (default: from the server's host, openai for api.openai.com, else unknown)")
}

// percentFlag is a flag holding a percentage (0 to 100) read by
// percent.Parse, so that a percentage flag means the same in every command.
type percentFlag struct{ p *float64 }

func (f percentFlag) String() string {
	if f.p == nil {
		return ""
	}
	return strconv.FormatFloat(*f.p, 'g', -1, 64) + "%"
}

func (f percentFlag) Set(s string) error {
	v, err := percent.Parse("", s)
	if err != nil {
		return errors.New("want a percentage such as 5%")
	}
	*f.p = 100 * v
	return nil
}

func (percentFlag) Type() string { return "percent" }

// GroupAnnotation is the pflag annotation naming a flag's group in --help.
const GroupAnnotation = "aiperf-action/group"

// The profile flags' groups, in the order --help shows them: AIPerf's
// (endpoint, input, load generator, output), then this tool's own.
var groupOrder = []string{"Endpoint", "Input", "Tokenizer", "Load generator", "Output", "Server metrics", "Tool"}

var flagGroups = map[string][]string{
	"Endpoint": {"model", "model-names", "model-selection-strategy", "url", "url-strategy", "endpoint", "custom-endpoint", "endpoint-type", "request-template", "response-field", "streaming", "header", "api-key", "request-timeout-seconds"},
	"Input": {"synthetic-input-tokens-mean", "isl", "synthetic-input-tokens-stddev", "output-tokens-mean", "osl", "output-tokens-stddev", "sequence-distribution", "seq-dist",
		"num-prefix-prompts", "prefix-prompt-length", "shared-system-prompt-length", "system-prompt", "system-prompt-file", "user-context-prompt-length",
		"audio-length-mean", "audio-length-stddev", "audio-format", "audio-sample-rates", "audio-depths", "audio-num-channels", "audio-batch-size", "batch-size-audio",
		"image-width-mean", "image-width-stddev", "image-height-mean", "image-height-stddev", "image-format", "image-batch-size", "batch-size-image",
		"video-width", "video-height", "video-fps", "video-duration", "video-synth-type", "video-format", "video-codec", "prompt-batch-size", "video-batch-size", "batch-size-video", "video-audio-num-channels", "video-audio-sample-rate", "video-audio-depth", "video-audio-codec",
		"rankings-passages-mean", "rankings-passages-stddev", "rankings-passages-prompt-token-mean", "rankings-passages-prompt-token-stddev",
		"rankings-query-prompt-token-mean", "rankings-query-prompt-token-stddev",
		"extra-inputs", "input-file", "custom-dataset-type", "public-dataset", "hf-subset", "dataset-sampling-strategy", "isl-block-size", "synthesis-speedup-ratio", "synthesis-max-isl", "synthesis-max-osl", "fixed-schedule", "fixed-schedule-auto-offset", "fixed-schedule-start-offset", "fixed-schedule-end-offset",
		"num-dataset-entries", "random-seed", "payload-seed",
		"conversation-num", "num-conversations", "num-sessions", "conversation-turn-mean", "session-turns-mean", "conversation-turn-stddev", "session-turns-stddev",
		"conversation-turn-delay-mean", "conversation-turn-delay-stddev", "conversation-turn-delay-ratio"},
	"Tokenizer": {"tokenizer", "tokenizer-revision", "tokenizer-trust-remote-code"},
	"Load generator": {"num-users", "user-centric-rate", "prefill-concurrency", "concurrency", "request-count", "request-rate", "arrival-pattern", "arrival-smoothness", "benchmark-duration",
		"benchmark-grace-period", "warmup-request-count", "num-warmup-sessions", "warmup-duration", "warmup-concurrency", "warmup-request-rate",
		"request-rate-ramp-duration", "concurrency-ramp-duration", "request-cancellation-rate", "request-cancellation-delay"},
	"Output":         {"output-artifact-dir", "artifact-dir", "auto-plot", "slice-duration", "goodput", "max-error-rate", "export-level", "profile-export-level", "profile-export-prefix", "profile-export-file"},
	"Server metrics": {"server-metrics", "no-server-metrics", "use-server-token-count", "gpu-telemetry", "no-gpu-telemetry", "otel-url", "otel-headers", "gen-ai-provider"},
	"Tool":           {"workers", "worker-listen", "worker-weights"},
}

// GroupRank is a group's place in --help.
func GroupRank(g string) int {
	if i := slices.Index(groupOrder, g); i >= 0 {
		return i
	}
	return len(groupOrder)
}

// NoteSet records which of the flags that change a default's meaning were
// given (a seed, a concurrency next to a rate, a request count next to a
// duration).
func (p *Profile) NoteSet(fs *pflag.FlagSet) {
	p.SeedSet = p.SeedSet || fs.Changed("random-seed")
	p.ConcurrencySet = fs.Changed("concurrency")
	p.RequestCountSet = fs.Changed("request-count") || fs.Changed("num-requests")
	if p.CustomDatasetType == RandomPool && p.ConversationNum > 0 && p.ConversationTurnMean <= 1 {
		// AIPerf's --num-conversations N with a random_pool file draws N
		// one-turn requests from the pool (a pool has no sessions).
		if !p.RequestCountSet {
			p.RequestCount, p.RequestCountSet = p.ConversationNum, true
		}
		p.ConversationNum = 0
	}
}

// urlList is --url, repeatable: the first is Profile.URL, the others
// MoreURLs; the first given replaces a default.
type urlList struct {
	p   *Profile
	set bool
}

func (u *urlList) String() string {
	if u.p == nil {
		return ""
	}
	return strings.Join(append([]string{u.p.URL}, u.p.MoreURLs...), ",")
}

func (u *urlList) Set(s string) error {
	if !u.set {
		u.p.URL, u.p.MoreURLs, u.set = s, nil, true
		return nil
	}
	u.p.MoreURLs = append(u.p.MoreURLs, s)
	return nil
}

func (u *urlList) Type() string { return "string" }
