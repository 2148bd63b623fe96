package cli

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aiperf-action/aiperf-action/internal/result"
)

// AIPerf's per-request profile_export.jsonl, key for key with its
// reference's records (metadata, metrics as {value, unit}, error): one
// line a profiling request, warmup left out, cancelled ones with their
// error; --export-level summary writes none; --profile-export-prefix
// names the files; raw is refused by name.
func TestAIPerfRecordsExport(t *testing.T) {
	_, url := startSim(t, 5*time.Millisecond, 2*time.Millisecond)
	dir := filepath.Join(t.TempDir(), "run")
	before := time.Now().UnixNano()
	res := runCLI(t, time.Minute, "profile", "-m", "sim", "-u", url, "--streaming", "--concurrency", "2", "--request-count", "10",
		"--warmup-request-count", "3", "--isl", "16", "--osl", "8", "--extra-inputs", "ignore_eos:true",
		"--request-cancellation-rate", "30", "--request-cancellation-delay", "0.01", "--random-seed", "8", "--artifact-dir", dir)
	if res.code != 0 {
		t.Fatalf("exit %d\n%s", res.code, res.stderr)
	}
	after := time.Now().UnixNano()
	f, err := os.Open(filepath.Join(dir, "profile_export.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	metaKeys := []string{"benchmark_phase", "cancellation_time_ns", "conversation_id", "record_processor_id", "request_ack_ns", "request_end_ns",
		"request_start_ns", "session_num", "turn_index", "was_cancelled", "worker_id", "x_correlation_id", "x_request_id"}
	n, cancelled := 0, 0
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		n++
		var rec struct {
			Metadata map[string]any `json:"metadata"`
			Metrics  map[string]struct {
				Value any    `json:"value"`
				Unit  string `json:"unit"`
			} `json:"metrics"`
			Error *struct {
				Code    int    `json:"code"`
				Type    string `json:"type"`
				Message string `json:"message"`
			} `json:"error"`
		}
		var top map[string]json.RawMessage
		json.Unmarshal(sc.Bytes(), &top)
		if len(top) != 3 || top["metadata"] == nil || top["metrics"] == nil || top["error"] == nil {
			t.Fatalf("line %d: top-level keys %v, want metadata, metrics, error", n, top)
		}
		if err := json.Unmarshal(sc.Bytes(), &rec); err != nil {
			t.Fatal(err)
		}
		var keys []string
		for k := range rec.Metadata {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		if !slices.Equal(keys, metaKeys) {
			t.Fatalf("line %d: metadata keys %v\nwant %v", n, keys, metaKeys)
		}
		start, end := int64(rec.Metadata["request_start_ns"].(float64)), int64(rec.Metadata["request_end_ns"].(float64))
		if start < before || end > after || end < start || rec.Metadata["benchmark_phase"] != "profiling" {
			t.Errorf("line %d: times %d..%d outside the run %d..%d, or phase %v", n, start, end, before, after, rec.Metadata["benchmark_phase"])
		}
		if rec.Metadata["was_cancelled"] == true {
			cancelled++
			if rec.Error == nil || rec.Error.Code != 499 || rec.Error.Type != "cancelled" || rec.Metrics["error_isl"].Value != float64(16) || rec.Metadata["cancellation_time_ns"] == nil {
				t.Errorf("line %d: cancelled record %s", n, sc.Bytes())
			}
			continue
		}
		ttft, lat := rec.Metrics["time_to_first_token"], rec.Metrics["request_latency"]
		icl, _ := rec.Metrics["inter_chunk_latency"].Value.([]any)
		if rec.Error != nil || ttft.Unit != "ms" || ttft.Value.(float64) < 5 || lat.Value.(float64) <= ttft.Value.(float64) ||
			len(icl) != 7 || rec.Metrics["output_token_count"].Value != float64(8) || rec.Metrics["output_sequence_length"].Value != float64(8) ||
			rec.Metrics["output_token_throughput_per_user"].Unit != "tokens/sec/user" || rec.Metadata["request_ack_ns"] == nil {
			t.Errorf("line %d: %s", n, sc.Bytes())
		}
	}
	run, _ := result.Read(dir)
	if n != run.Counts.Requests || n != 10 || cancelled != run.Counts.Cancelled || cancelled == 0 {
		t.Errorf("%d lines (%d cancelled); run.json: %d requests, %d cancelled", n, cancelled, run.Counts.Requests, run.Counts.Cancelled)
	}

	dir2 := filepath.Join(t.TempDir(), "summary")
	res = runCLI(t, time.Minute, "profile", "-m", "sim", "-u", url, "--request-count", "2", "--isl", "8", "--osl", "2",
		"--export-level", "summary", "--profile-export-prefix", "my_run.json", "--artifact-dir", dir2)
	if res.code != 0 {
		t.Fatalf("summary: exit %d\n%s", res.code, res.stderr)
	}
	for name, want := range map[string]bool{"my_run.json": true, "my_run.csv": true, "my_run.jsonl": false, "profile_export.jsonl": false,
		"profile_export_aiperf.json": false, "run.json": true, "records.jsonl": true} {
		if _, err := os.Stat(filepath.Join(dir2, name)); (err == nil) != want {
			t.Errorf("--export-level summary --profile-export-prefix my_run.json: %s there: %v, want %v", name, err == nil, want)
		}
	}
	for _, c := range []struct{ flag, val, want string }{
		{"--export-level", "raw", "--export-level raw: the workers keep no response bodies"},
		{"--profile-export-level", "all", `--export-level "all": want summary, records or raw`},
		{"--profile-export-file", "../x", "--profile-export-prefix \"../x\": want a file name"},
	} {
		res = runCLI(t, time.Minute, "profile", "-m", "sim", "-u", url, c.flag, c.val, "--artifact-dir", t.TempDir())
		if res.code != ExitError || !strings.Contains(res.stderr, c.want) {
			t.Errorf("%s %s: exit %d %s", c.flag, c.val, res.code, res.stderr)
		}
	}
}
