package cli

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aiperf-action/aiperf-action/internal/dataset"
	"github.com/aiperf-action/aiperf-action/internal/hub/hubtest"
	"github.com/aiperf-action/aiperf-action/internal/record"
	"github.com/aiperf-action/aiperf-action/internal/result"
)

// A Mooncake trace (testdata/traces/mooncake.jsonl: 24 requests 40 ms
// apart, their hash_ids sharing prefixes) replayed against engine mode:
// every request is due at its timestamp to the nanosecond and sent within
// a few ms of it, and the shared blocks are served from the prefix cache.
func TestMooncakeTraceReplay(t *testing.T) {
	_, url := engineSim(t, nil)
	dir := filepath.Join(t.TempDir(), "run")
	res := runCLI(t, time.Minute, "profile", "-m", "sim", "-u", url, "--streaming", "--input-file", "testdata/traces/mooncake.jsonl",
		"--custom-dataset-type", "mooncake_trace", "--isl-block-size", "32", "--extra-inputs", "ignore_eos:true",
		"--random-seed", "4", "--artifact-dir", dir, "--server-metrics", url+"/metrics")
	r, err := result.Read(dir)
	if res.code != 0 || err != nil {
		t.Fatalf("exit %d, %v\n%s", res.code, err, res.stderr)
	}
	if r.Counts.OK != 24 || !r.Load.FixedSchedule {
		t.Fatalf("counts %+v, fixed schedule %v", r.Counts, r.Load.FixedSchedule)
	}
	var lags []float64
	for _, rec := range readRecords(t, dir) {
		if want := int64(40*rec.Index) * int64(time.Millisecond); rec.Due != want {
			t.Fatalf("request %d due at %d ns, the trace says %d", rec.Index, rec.Due, want)
		}
		lags = append(lags, float64(rec.Sent-rec.Due)/1e6)
	}
	slices.Sort(lags)
	p99 := lags[len(lags)*99/100]
	t.Logf("send lag behind the trace's timestamps: p50 %.3f ms, p99 %.3f ms; prompt cache %+v", lags[len(lags)/2], p99, r.ToolHealth.PromptCache)
	// A schedule that ignored the trace would send all 24 at once: the
	// median lag would be ~460 ms, the last ~920. The median is held to 20
	// ms; p99, which of 24 requests is the slowest one, only to 200 ms, since
	// one stall of the race detector on a busy machine (21.8 ms in a CI run)
	// is not the schedule.
	if p50 := lags[len(lags)/2]; p50 > 20 || p99 > 200 {
		t.Errorf("send lag p50 %.1f ms, p99 %.1f ms", p50, p99)
	}
	if pc := r.ToolHealth.PromptCache; pc == nil || pc.CachedFraction < 0.2 {
		t.Errorf("shared hash_ids gave no prefix-cache hits: %+v", pc)
	}
}

// AIPerf's input flags as AIPerf means them: --request-count with
// --benchmark-duration stops at whichever comes first (closed and open
// loop), --output-artifact-dir names the folder, and
// --fixed-schedule-start-offset starts the replay at that timestamp.
func TestAIPerfStopConditionsAndOffsets(t *testing.T) {
	_, url := startSim(t, time.Millisecond, time.Millisecond)
	base := t.TempDir()
	run := func(name string, args ...string) *result.Run {
		dir := filepath.Join(base, name)
		res := runCLI(t, time.Minute, append([]string{"profile", "-m", "sim", "-u", url, "--streaming", "--isl", "4", "--osl", "2",
			"--random-seed", "1", "--output-artifact-dir", dir}, args...)...)
		r, err := result.Read(dir)
		if res.code != 0 || err != nil {
			t.Fatalf("%s: exit %d, %v\n%s", name, res.code, err, res.stderr)
		}
		return r
	}
	start := time.Now()
	if r := run("closed", "--concurrency", "2", "--request-count", "10", "--benchmark-duration", "30"); r.Counts.Requests != 10 || time.Since(start) > 20*time.Second {
		t.Errorf("closed loop, 10 requests or 30 s: %d requests in %s", r.Counts.Requests, time.Since(start))
	}
	if r := run("open", "--request-rate", "200", "--request-count", "15", "--benchmark-duration", "30"); r.Counts.Requests != 15 {
		t.Errorf("open loop, 15 requests or 30 s: %d requests", r.Counts.Requests)
	}
	if r := run("open-duration", "--request-rate", "20", "--request-count", "1000", "--benchmark-duration", "0.5"); r.Counts.Requests > 30 {
		t.Errorf("open loop, 1000 requests or 0.5 s: %d requests", r.Counts.Requests)
	}
	trace := filepath.Join(base, "trace.jsonl")
	os.WriteFile(trace, []byte(`{"timestamp": 100, "input_length": 4}
{"timestamp": 500, "input_length": 4}
{"timestamp": 600, "input_length": 4}
`), 0o644)
	run("offset", "--input-file", trace, "--fixed-schedule", "--fixed-schedule-start-offset", "500")
	recs := readRecords(t, filepath.Join(base, "offset"))
	if len(recs) != 2 || recs[0].Due != 0 || recs[1].Due != int64(100*time.Millisecond) {
		t.Fatalf("start offset 500 ms: %d records, dues %v", len(recs), func() []int64 {
			var d []int64
			for _, r := range recs {
				d = append(d, r.Due)
			}
			return d
		}())
	}
}

// --public-dataset sharegpt reads a ShareGPT file: its pairs are the
// prompts, their answers' lengths the max tokens; without --input-file
// the file comes from the hub.
func TestShareGPTDataset(t *testing.T) {
	s, url := startSim(t, time.Millisecond, time.Millisecond)
	f := filepath.Join(t.TempDir(), "sharegpt.json")
	os.WriteFile(f, []byte(`[
 {"id": "a", "conversations": [{"from": "human", "value": "what is the capital of france"}, {"from": "gpt", "value": "the capital of france is paris"}]},
 {"id": "b", "conversations": [{"from": "human", "value": "hi"}, {"from": "gpt", "value": "hello there how are you"}]},
 {"id": "c", "conversations": [{"from": "human", "value": "name three primary colours for me"}, {"from": "gpt", "value": "red yellow and blue are the three"}]}
]`), 0o644)
	dir := filepath.Join(t.TempDir(), "run")
	res := runCLI(t, time.Minute, "profile", "-m", "sim", "-u", url, "--streaming", "--public-dataset", "sharegpt", "--input-file", f,
		"--request-count", "4", "--random-seed", "1", "--output-artifact-dir", dir)
	r, err := result.Read(dir)
	if res.code != 0 || err != nil || r.Counts.OK != 4 {
		t.Fatalf("exit %d, %v\n%s", res.code, err, res.stderr)
	}
	for _, tr := range s.Truths() {
		if tr.ISL != 6 {
			t.Fatalf("the server saw a prompt of %d tokens; the kept pairs have 6", tr.ISL)
		}
	}
	// Without --input-file the file is fetched from the hub (here the
	// loopback stand-in) into the hub cache; the hub unreachable and the
	// cache empty, the error names the dataset and how to give a file.
	t.Setenv("HF_HUB_CACHE", t.TempDir())
	if res := runCLI(t, time.Minute, "profile", "-m", "sim", "-u", url, "--public-dataset", "sharegpt"); res.code != ExitError ||
		!strings.Contains(res.stderr, "dataset "+dataset.ShareGPTRepo+" "+dataset.ShareGPTFile+" at main") || !strings.Contains(res.stderr, "--input-file") {
		t.Errorf("no --input-file, no hub: exit %d\n%s", res.code, res.stderr)
	}
	h := hubtest.New()
	defer h.Close()
	b, _ := os.ReadFile(f)
	h.Add("dataset", dataset.ShareGPTRepo, "main", map[string]hubtest.File{dataset.ShareGPTFile: {Data: b}, "README.md": {Data: []byte("x")}})
	t.Setenv("HF_ENDPOINT", h.URL)
	dir = filepath.Join(t.TempDir(), "hub")
	res = runCLI(t, time.Minute, "profile", "-m", "sim", "-u", url, "--streaming", "--public-dataset", "sharegpt",
		"--request-count", "4", "--random-seed", "1", "--output-artifact-dir", dir)
	if r, err := result.Read(dir); res.code != 0 || err != nil || r.Counts.OK != 4 || h.Downloads.Load() != 1 {
		t.Fatalf("from the hub: exit %d, %v, %d downloads\n%s", res.code, err, h.Downloads.Load(), res.stderr)
	}
}

// A BurstGPT CSV replayed with --fixed-schedule-auto-offset: its rows are
// due at their timestamps less the first one's.
func TestBurstGPTReplay(t *testing.T) {
	_, url := startSim(t, time.Millisecond, time.Millisecond)
	f := filepath.Join(t.TempDir(), "burst.csv")
	os.WriteFile(f, []byte("Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type\n100.0,ChatGPT,20,3,23,Conversation log\n100.25,ChatGPT,12,0,12,Conversation log\n100.5,GPT-4,8,2,10,API log\n"), 0o644)
	dir := filepath.Join(t.TempDir(), "run")
	res := runCLI(t, time.Minute, "profile", "-m", "sim", "-u", url, "--streaming", "--input-file", f, "--custom-dataset-type", "burst_gpt_trace",
		"--fixed-schedule-auto-offset", "--extra-inputs", "ignore_eos:true", "--random-seed", "2", "--output-artifact-dir", dir)
	if res.code != 0 {
		t.Fatalf("exit %d\n%s", res.code, res.stderr)
	}
	recs := readRecords(t, dir)
	if len(recs) != 2 || recs[0].Due != 0 || recs[1].Due != int64(500*time.Millisecond) || recs[0].ISL != 20 || recs[1].OSL != 2 {
		t.Fatalf("%d records: %+v", len(recs), recs)
	}
}

// A Bailian trace (testdata/traces/bailian.jsonl: 4 sessions of 3 turns,
// timestamps in seconds, 16-token hash_ids blocks, each follow-up's blocks
// extending its parent's; and one 2,000-token request) replayed with
// AIPerf's synthesis flags: twice as fast, the long request left out by
// --synthesis-max-isl, output lengths capped by --synthesis-max-osl.
func TestBailianTraceReplayWithSynthesis(t *testing.T) {
	_, url := engineSim(t, nil)
	dir := filepath.Join(t.TempDir(), "run")
	res := runCLI(t, time.Minute, "profile", "-m", "sim", "-u", url, "--streaming", "--input-file", "testdata/traces/bailian.jsonl",
		"--custom-dataset-type", "bailian_trace", "--synthesis-speedup-ratio", "2", "--synthesis-max-isl", "1000", "--synthesis-max-osl", "4",
		"--extra-inputs", "ignore_eos:true", "--random-seed", "4", "--artifact-dir", dir, "--server-metrics", url+"/metrics")
	r, err := result.Read(dir)
	if res.code != 0 || err != nil {
		t.Fatalf("exit %d, %v\n%s", res.code, err, res.stderr)
	}
	if r.Counts.OK != 12 {
		t.Fatalf("counts %+v: want the 12 session requests, the 2,000-token one left out", r.Counts)
	}
	var trace []struct {
		Timestamp float64 `json:"timestamp"`
	}
	b, _ := os.ReadFile("testdata/traces/bailian.jsonl")
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var x struct {
			Timestamp float64 `json:"timestamp"`
		}
		json.Unmarshal([]byte(l), &x)
		trace = append(trace, x)
	}
	for _, rec := range readRecords(t, dir) {
		want := int64(math.Round(trace[rec.Index].Timestamp * 1e9 / 2))
		if d := rec.Due - want; d < -1000 || d > 1000 {
			t.Errorf("request %d due at %d ns; the trace's %.3f s at 2x is %d", rec.Index, rec.Due, trace[rec.Index].Timestamp, want)
		}
		if rec.MaxTokens != 4 || rec.OSL != 4 {
			t.Errorf("request %d: max_tokens %d, osl %d; want 4 (--synthesis-max-osl)", rec.Index, rec.MaxTokens, rec.OSL)
		}
	}
	t.Logf("prompt cache %+v", r.ToolHealth.PromptCache)
	if pc := r.ToolHealth.PromptCache; pc == nil || pc.CachedFraction < 0.2 {
		t.Errorf("follow-ups extending their parents' hash_ids gave no prefix-cache hits: %+v", pc)
	}
}

// A folder of weka traces (internal/dataset/testdata/weka: two agentic
// sessions, one with a subagent) runs as sessions: each trace's calls in
// order on one slot, a subagent's in its place, each after the trace's
// idle time before it, each prompt exactly its "in" tokens with no
// history threaded before it (its hash ids already hold it), and the
// blocks a trace's calls share served from the engine's prefix cache.
func TestWekaTraceSessions(t *testing.T) {
	_, url := engineSim(t, nil)
	dir := filepath.Join(t.TempDir(), "run")
	res := runCLI(t, time.Minute, "profile", "-m", "sim", "-u", url, "--streaming", "--input-file", "../dataset/testdata/weka",
		"--custom-dataset-type", "weka_trace", "--concurrency", "2", "--random-seed", "3", "--use-server-token-count",
		"--extra-inputs", "ignore_eos:true", "--artifact-dir", dir, "--server-metrics", url+"/metrics")
	r, err := result.Read(dir)
	if res.code != 0 || err != nil {
		t.Fatalf("exit %d, %v\n%s", res.code, err, res.stderr)
	}
	recs := readRecords(t, dir)
	if r.Counts.OK != 7 || len(recs) != 7 {
		t.Fatalf("counts %+v: want the 7 calls of two traces", r.Counts)
	}
	slices.SortFunc(recs, func(a, b record.Record) int { return a.Index - b.Index })
	wantISL := []int{200, 260, 100, 150, 330, 128, 192}
	wantMax := []int{30, 12, 20, 25, 40, 1, 8}
	wantGap := []time.Duration{0, 500, 300, 100, 700, 0, 0}
	for i, rec := range recs {
		if rec.ISL != wantISL[i] || rec.ServerISL != rec.ISL || rec.MaxTokens != wantMax[i] || rec.OSL != wantMax[i] {
			t.Errorf("call %d: ISL %d (server %d), max_tokens %d, OSL %d; want ISL %d and %d tokens out", i, rec.ISL, rec.ServerISL, rec.MaxTokens, rec.OSL, wantISL[i], wantMax[i])
		}
		if k := rec.Turn; k > 0 {
			if gap := time.Duration(rec.Sent - recs[i-1].End); gap < wantGap[i]*time.Millisecond {
				t.Errorf("call %d went %s after call %d's answer, before the trace's %d ms idle time", i, gap, i-1, wantGap[i])
			}
		}
	}
	if recs[0].SessionID != recs[4].SessionID || recs[5].SessionID != recs[6].SessionID || recs[0].SessionID == recs[5].SessionID {
		t.Errorf("session ids %s %s %s %s", recs[0].SessionID, recs[4].SessionID, recs[5].SessionID, recs[6].SessionID)
	}
	if pc := r.ToolHealth.PromptCache; pc == nil || pc.CachedFraction < 0.3 {
		t.Errorf("the calls' shared blocks were not served from the cache: %+v", pc)
	}
}
