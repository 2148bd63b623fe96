package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aiperf-action/aiperf-action/internal/hfdata/hfdatatest"
	"github.com/aiperf-action/aiperf-action/internal/hub/hubtest"
	"github.com/aiperf-action/aiperf-action/internal/result"
)

// AIPerf's public datasets on the hub run as a user would run them: the
// data files are fetched from the hub (the loopback stand-in) into its
// cache, each row's prompt is sent (a dataset of turns as conversations,
// an image with its question), and the second run, offline with the hub
// gone, is served from the cache with the same prompts.
func TestPublicDatasetsFromTheHub(t *testing.T) {
	_, url := startSim(t, time.Millisecond, 200*time.Microsecond)
	h := hubtest.New()
	hfdatatest.AddPublic(t, h, "spec_al_gsm8k", "spec_al_mtbench", "mmstar", "blazedit_5k", "vision_arena", "librispeech", "mmvu")
	t.Setenv("HF_ENDPOINT", h.URL)
	t.Setenv("HF_HUB_CACHE", t.TempDir())
	t.Setenv("AIPERF_CACHE", t.TempDir())
	run := func(name string, extra ...string) (string, cliResult) {
		dir := filepath.Join(t.TempDir(), name)
		args := append([]string{"profile", "-m", "sim", "-u", url, "--endpoint-type", "chat", "--streaming", "--public-dataset", name,
			"--concurrency", "2", "--random-seed", "3", "--output-artifact-dir", dir}, extra...)
		return dir, runCLI(t, time.Minute, args...)
	}
	for _, c := range []struct {
		name  string
		extra []string
		ok    int
		want  []string // in inputs.json
	}{
		{"spec_al_gsm8k", []string{"--request-count", "4"}, 4, []string{"Janet has 3 apples. How many?", "A train leaves at 5. When?"}},
		{"spec_al_gsm8k", []string{"--request-count", "2", "--hf-subset", "socratic"}, 2, []string{"socratic question?"}},
		{"spec_al_mtbench", []string{"--request-count", "3"}, 3, []string{"Write a haiku.", "Now make it rhyme.", "Explain TCP."}},
		{"mmstar", []string{"--request-count", "2"}, 2, []string{"What colour is it?", "data:image/png;base64,"}},
		{"blazedit_5k", []string{"--request-count", "2", "--output-tokens-mean", "16"}, 2, []string{"Rename f to g.", `"max_tokens": 16`}},
		{"vision_arena", []string{"--request-count", "2"}, 2, []string{"What is in this picture?", "Read the sign.", "data:image/png;base64,"}},
		{"mmvu", []string{"--request-count", "2"}, 2, []string{"What moves first? A.The ball B.The cup C.Nothing", "http://127.0.0.1:9/mmvu/1.mp4"}},
		// Two clips of four are kept (31 s and not audio are left out),
		// each as a WAV with AIPerf's prompt.
		{"librispeech", []string{"--request-count", "4"}, 4, []string{"Transcribe this audio.", `"input_audio"`, `"format": "wav"`, `"data": "UklGR`}},
	} {
		dir, res := run(c.name, c.extra...)
		r, err := result.Read(dir)
		if res.code != 0 || err != nil || r.Counts.OK != c.ok {
			ok := -1
			if r != nil {
				ok = r.Counts.OK
			}
			t.Errorf("%s %v: exit %d, %v, %d OK (want %d)\n%s", c.name, c.extra, res.code, err, ok, c.ok, res.stderr)
			continue
		}
		in, _ := os.ReadFile(filepath.Join(dir, "inputs.json"))
		for _, w := range c.want {
			if !strings.Contains(string(in), w) {
				t.Errorf("%s: inputs.json lacks %q", c.name, w)
			}
		}
	}
	// Offline, the hub gone: the same prompts from the caches.
	dir, _ := run("spec_al_gsm8k", "--request-count", "4")
	first, _ := os.ReadFile(filepath.Join(dir, "inputs.json"))
	h.Close()
	t.Setenv("HF_HUB_OFFLINE", "1")
	t.Setenv("AIPERF_CACHE", t.TempDir())
	dir, res := run("spec_al_gsm8k", "--request-count", "4")
	again, _ := os.ReadFile(filepath.Join(dir, "inputs.json"))
	if res.code != 0 || string(first) != string(again) {
		t.Errorf("offline: exit %d, inputs.json the same: %v\n%s", res.code, string(first) == string(again), res.stderr)
	}
	// Refused by name, before any load, with the reason.
	for name, want := range map[string]string{"speed_bench_coding": "placeholder prompts", "exgentic": "agentic trace", "nope": "not a public dataset"} {
		if _, res := run(name); res.code != ExitError || !strings.Contains(res.stderr, "--public-dataset "+name+": ") || !strings.Contains(res.stderr, want) {
			t.Errorf("%s: exit %d\n%s", name, res.code, res.stderr)
		}
	}
}
