package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aiperf-action/aiperf-action/internal/sim"
)

// A SageMaker data capture (testdata/sagemaker/capture.jsonl: BASE64 and
// JSON encodings, as the capture writes them) is replayed as AIPerf
// replays one: told apart without --custom-dataset-type, each request's
// captured messages, tools and max_tokens sent to --model with the
// --extra-inputs, on its inference time from the first (0, 500, 800 ms).
func TestSageMakerCaptureReplay(t *testing.T) {
	cfg := sim.DefaultConfig
	cfg.TTFT, cfg.ITL = time.Millisecond, time.Millisecond
	url, sink := captureBodies(t, sim.New(cfg))
	capture, _ := filepath.Abs("testdata/sagemaker/capture.jsonl")
	for _, typed := range [][]string{nil, {"--custom-dataset-type", "sagemaker_data_capture"}} {
		dir := filepath.Join(t.TempDir(), "run")
		args := append([]string{"profile", "-m", "replayed", "-u", url, "--input-file", capture, "--extra-inputs", "ignore_eos:true", "--artifact-dir", dir}, typed...)
		res := runCLI(t, time.Minute, args...)
		if res.code != 0 {
			t.Fatalf("%v: exit %d\n%s", typed, res.code, res.stderr)
		}
		var got []map[string]json.RawMessage
		for _, sb := range sink.take() {
			if sb.path == "/v1/chat/completions" {
				var m map[string]json.RawMessage
				json.Unmarshal([]byte(sb.body), &m)
				got = append(got, m)
			}
		}
		if len(got) != 3 {
			t.Fatalf("%d requests, want 3", len(got))
		}
		slices.SortFunc(got, func(a, b map[string]json.RawMessage) int {
			return strings.Compare(string(a["max_tokens"]), string(b["max_tokens"]))
		})
		want := []struct{ max, first string }{{"12", `{"role":"system","content":"You are terse."}`}, {"6", `{"role":"user","content":"Translate 'good morning' into French."}`}, {"8", `{"role":"user","content":"What is the boiling point of water at sea level in Celsius?"}`}}
		for i, b := range got {
			var msgs []json.RawMessage
			json.Unmarshal(b["messages"], &msgs)
			if string(b["model"]) != `"replayed"` || string(b["max_tokens"]) != want[i].max || len(msgs) == 0 || string(msgs[0]) != want[i].first ||
				string(b["ignore_eos"]) != "true" || b["temperature"] != nil || (want[i].max == "8") != (b["tools"] != nil) {
				t.Errorf("%v: request %d: %v", typed, i, b)
			}
		}
		var dues []int64
		for _, r := range readRecords(t, dir) {
			dues = append(dues, r.Due)
		}
		slices.Sort(dues)
		for i, ms := range []int64{0, 500, 800} {
			if dues[i] != ms*int64(time.Millisecond) {
				t.Errorf("%v: due times %v, want 0, 500 and 800 ms", typed, dues)
				break
			}
		}
	}
	bad := filepath.Join(t.TempDir(), "bad.jsonl")
	os.WriteFile(bad, []byte(`{"captureData":{"endpointInput":{"data":"{\"prompt\":\"x\"}","encoding":"JSON"}},"eventMetadata":{"eventId":"e1","inferenceTime":"2026-11-30T14:02:11Z"}}`+"\n"), 0o644)
	res := runCLI(t, time.Minute, "profile", "-m", "x", "-u", url, "--input-file", bad, "--artifact-dir", t.TempDir())
	if res.code != ExitError || !strings.Contains(res.stderr, `bad.jsonl:1 (event "e1"): the captured request has no "messages" list`) {
		t.Errorf("a capture without messages: exit %d %s", res.code, res.stderr)
	}
	res = runCLI(t, time.Minute, "profile", "-m", "x", "-u", url, "--input-file", bad, "--custom-dataset-type", "dag_jsonl", "--artifact-dir", t.TempDir())
	if res.code != ExitError || !strings.Contains(res.stderr, `bad.jsonl:1: the conversation: unknown key "captureData"`) {
		t.Errorf("a capture read as dag_jsonl: exit %d %s", res.code, res.stderr)
	}
}
