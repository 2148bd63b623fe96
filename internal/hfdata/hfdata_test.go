package hfdata_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/aiperf-action/aiperf-action/internal/hfdata"

	"github.com/aiperf-action/aiperf-action/internal/hfdata/hfdatatest"
	"github.com/aiperf-action/aiperf-action/internal/hub"
	"github.com/aiperf-action/aiperf-action/internal/hub/hubtest"
)

// The data files are picked as load_dataset picks them: the README's
// configs first, else split names in paths, else every file as train.
func TestDataFiles(t *testing.T) {
	gsm := []string{"README.md", "main/test-00000-of-00001.parquet", "main/train-00000-of-00001.parquet", "socratic/test-00000-of-00001.parquet"}
	for _, c := range []struct {
		files          []string
		readme, subset string
		split          string
		want           []string
		err            string
	}{
		{gsm, hfdatatest.GSM8KReadme, "main", "test", []string{"main/test-00000-of-00001.parquet"}, ""},
		{gsm, hfdatatest.GSM8KReadme, "socratic", "test", []string{"socratic/test-00000-of-00001.parquet"}, ""},
		{gsm, hfdatatest.GSM8KReadme, "", "test", nil, `no subset "default": the README's configs are main, socratic`},
		{gsm, hfdatatest.GSM8KReadme, "main", "validation", nil, `no split "validation"`},
		{[]string{"README.md", "test.jsonl"}, "# MATH-500\n", "", "test", []string{"test.jsonl"}, ""},
		{[]string{"data/train-00000-of-00002.parquet", "data/train-00001-of-00002.parquet", "data/test-00000-of-00001.parquet", ".gitattributes"}, "", "", "train",
			[]string{"data/train-00000-of-00002.parquet", "data/train-00001-of-00002.parquet"}, ""},
		{[]string{"mmstar.parquet"}, "---\nconfigs:\n- config_name: val\n  data_files:\n  - split: val\n    path: mmstar.parquet\n---\n", "", "val", []string{"mmstar.parquet"}, ""},
		{[]string{"question.jsonl", "README.md"}, "", "", "train", []string{"question.jsonl"}, ""},
		{[]string{"raw/question.jsonl"}, "", "", "test", nil, `no data file of subset "default" names split "test"`},
		{[]string{"a/b/c/dev-1.csv", "a/b/training.csv"}, "", "", "validation", []string{"a/b/c/dev-1.csv"}, ""},
		{[]string{"data/x.parquet", "deep/data/y.parquet"}, "---\nconfigs:\n- config_name: default\n  data_files: \"**/*.parquet\"\n---\n", "", "train",
			[]string{"data/x.parquet", "deep/data/y.parquet"}, ""},
	} {
		got, err := hfdata.DataFiles(c.files, []byte(c.readme), c.subset, c.split)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%v %q %q: %v, want %q", c.files, c.subset, c.split, err, c.err)
			}
			continue
		}
		if err != nil || !slices.Equal(got, c.want) {
			t.Errorf("%v %q %q: %v %v, want %v", c.files, c.subset, c.split, got, err, c.want)
		}
	}
}

// Rows reads Parquet (nested too), JSON Lines, a JSON array and CSV.
func TestRows(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, b []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	type turnsRow struct {
		Prompt []string `parquet:"prompt,list"`
	}
	img := hfdatatest.PNG(t)
	files := map[string][]map[string]any{
		write("a.parquet", hfdatatest.Parquet(t, []hfdatatest.MMStarRow{{Index: 1, Question: "q1", Image: hfdatatest.HubImage{Bytes: img, Path: "1.png"}, Answer: "A"}})): {{"index": int64(1), "question": "q1", "image": map[string]any{"bytes": string(img), "path": "1.png"}, "answer": "A"}},
		write("t.parquet", hfdatatest.Parquet(t, []turnsRow{{[]string{"one", "two"}}})):                                                                                   {{"prompt": []any{"one", "two"}}},
		write("b.jsonl", []byte("{\"problem\": \"p1\"}\n\n{\"problem\": \"p2\"}\n")):                                                                                      {{"problem": "p1"}, {"problem": "p2"}},
		write("c.json", []byte(` [{"problem": "p1"}]`)):                                                                                                                   {{"problem": "p1"}},
		write("d.csv", []byte("problem,answer\n\"a, b\",1\n")):                                                                                                            {{"problem": "a, b", "answer": "1"}},
	}
	for path, want := range files {
		var got []map[string]any
		if err := hfdata.Rows(path, func(r map[string]any) error { got = append(got, r); return nil }); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		gb, _ := json.Marshal(got)
		wb, _ := json.Marshal(want)
		if !bytes.Equal(gb, wb) {
			t.Errorf("%s:\n got %s\nwant %s", filepath.Base(path), gb, wb)
		}
	}
	if err := hfdata.Rows(write("bad.jsonl", []byte("{\"a\": 1}\n{oops\n")), func(map[string]any) error { return nil }); err == nil || !strings.Contains(err.Error(), "row 2") {
		t.Errorf("a broken line: %v", err)
	}
}

// A public dataset is fetched from the hub stand-in into the standard
// cache layout and turned into prompts; the second time, with the hub
// gone and HF_HUB_OFFLINE set, the cache serves it.
func TestFetch(t *testing.T) {
	h := hubtest.New()
	hfdatatest.AddPublic(t, h, "spec_al_gsm8k", "spec_al_mtbench", "mmstar", "blazedit_5k", "vision_arena", "llava_onevision", "librispeech", "mmvu")
	cache := t.TempDir()
	t.Setenv("AIPERF_CACHE", t.TempDir())
	c := hub.Config{Endpoint: h.URL, CacheDir: cache}
	read := func(f hfdata.Fetched) []map[string]any {
		b, err := os.ReadFile(f.Path)
		if err != nil {
			t.Fatal(err)
		}
		var out []map[string]any
		for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
			var m map[string]any
			if err := json.Unmarshal([]byte(l), &m); err != nil {
				t.Fatal(err)
			}
			out = append(out, m)
		}
		return out
	}
	ctx := context.Background()
	f, err := hfdata.Fetch(ctx, c, "spec_al_gsm8k", "")
	if err != nil {
		t.Fatal(err)
	}
	rows := read(f)
	if f.Rows != 2 || len(rows) != 2 || rows[0]["text"] != "Janet has 3 apples. How many?" || rows[1]["text"] != "A train leaves at 5. When?" || f.MultiTurn {
		t.Errorf("gsm8k main/test: %+v %v", f, rows)
	}
	// The hub cache layout huggingface_hub reads: a ref and the snapshot.
	ref, err := os.ReadFile(filepath.Join(cache, "datasets--openai--gsm8k", "refs", "main"))
	if err != nil || string(ref) != f.Commit {
		t.Errorf("refs/main: %q %v, want %s", ref, err, f.Commit)
	}
	if _, err := os.Stat(filepath.Join(cache, "datasets--openai--gsm8k", "snapshots", f.Commit, "main", "test-00000-of-00001.parquet")); err != nil {
		t.Error(err)
	}
	if f, err := hfdata.Fetch(ctx, c, "spec_al_gsm8k", "socratic"); err != nil || read(f)[0]["text"] != "socratic question?" {
		t.Errorf("--hf-subset socratic: %v", err)
	}

	f, err = hfdata.Fetch(ctx, c, "spec_al_mtbench", "")
	if rows := read(f); err != nil || !f.MultiTurn || len(rows) != 2 || len(rows[0]["turns"].([]any)) != 2 {
		t.Errorf("mt_bench: %v %v", err, rows)
	}
	f, err = hfdata.Fetch(ctx, c, "mmstar", "")
	if rows := read(f); err != nil || len(rows) != 2 || !strings.HasPrefix(rows[0]["image"].(string), "data:image/png;base64,") || rows[0]["text"] != "What colour is it?" {
		t.Errorf("mmstar: %v %v", err, rows)
	}
	f, err = hfdata.Fetch(ctx, c, "vision_arena", "")
	if rows := read(f); err != nil || len(rows) != 2 || rows[0]["text"] != "What is in this picture?" || !strings.HasPrefix(rows[1]["image"].(string), "data:image/png;base64,") {
		t.Errorf("vision_arena: %v %v", err, rows)
	}
	f, err = hfdata.Fetch(ctx, c, "llava_onevision", "")
	if rows := read(f); err != nil || len(rows) != 1 || rows[0]["text"] != "Describe the chart." || rows[0]["image"] == nil {
		t.Errorf("llava_onevision: %v %v", err, rows)
	}
	f, err = hfdata.Fetch(ctx, c, "blazedit_5k", "")
	if rows := read(f); err != nil || len(rows) != 2 || !strings.Contains(rows[0]["text"].(string), "Original file:\n```python\ndef f(): pass\n```\n\nChange request:\nRename f to g.\n\nPlease generate") {
		t.Errorf("blazedit_5k (AIPerf's template): %v %v", err, rows)
	}
	f, err = hfdata.Fetch(ctx, c, "mmvu", "")
	if rows := read(f); err != nil || len(rows) != 2 || rows[0]["text"] != "What moves first? A.The ball B.The cup C.Nothing" ||
		rows[0]["video"] != "http://127.0.0.1:9/mmvu/1.mp4" || rows[1]["text"] != "Name the process shown." {
		t.Errorf("mmvu: %v %v", err, rows)
	}

	// Speech: AIPerf's prompt and each clip as 16-bit WAV; the 31 s clip
	// and the one that is neither FLAC nor WAV are left out and counted.
	f, err = hfdata.Fetch(ctx, c, "librispeech", "")
	if err != nil {
		t.Fatal(err)
	}
	rows = read(f)
	if len(rows) != 2 || rows[0]["text"] != hfdata.ASRPrompt || f.SkippedText() != "1 with audio neither FLAC nor WAV, 1 with clips over 30 s" {
		t.Fatalf("librispeech: %d rows, skipped %s", len(rows), f.SkippedText())
	}
	for i, want := range []struct {
		rate, ch int
		samples  []int32
	}{{16000, 1, hfdatatest.Tone(1.5, 16000, 16, 1)}, {22050, 2, hfdatatest.Tone(0.5, 22050, 24, 2)}} {
		rate, ch, pcm := parseWAV(t, rows[i]["audio"].(string))
		if rate != want.rate || ch != want.ch || len(pcm) != len(want.samples) {
			t.Fatalf("clip %d: %d Hz, %d channels, %d samples; want %d, %d, %d", i, rate, ch, len(pcm), want.rate, want.ch, len(want.samples))
		}
		for j, v := range want.samples {
			if i == 1 {
				v >>= 8 // 24 bits to 16
			}
			if int32(pcm[j]) != v {
				t.Fatalf("clip %d sample %d: %d, want %d", i, j, pcm[j], v)
			}
		}
	}

	// Offline, the hub closed: the listing and the files come from the
	// cache, with no request.
	before := h.Requests.Load()
	h.Close()
	os.RemoveAll(hfdata.CacheDir()) // the prompts are made again from the hub cache
	off := hub.Config{Endpoint: h.URL, CacheDir: cache, Offline: true}
	if f, err := hfdata.Fetch(ctx, off, "spec_al_gsm8k", ""); err != nil || len(read(f)) != 2 {
		t.Errorf("offline: %v", err)
	}
	if h.Requests.Load() != before {
		t.Errorf("offline fetch asked the hub %d times", h.Requests.Load()-before)
	}
	if _, err := hfdata.Fetch(ctx, off, "aimo", ""); err == nil || !strings.Contains(err.Error(), "HF_HUB_OFFLINE") {
		t.Errorf("offline, uncached: %v", err)
	}
}

// spec_bench is not on the hub: its question.jsonl is downloaded from the
// address AIPerf pins (a mirror in AIPERF_SPEC_BENCH_URL, here a loopback
// stand-in), each question's first turn a prompt, kept for the next run.
func TestSpecBench(t *testing.T) {
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		if r.URL.Path != "/data/spec_bench/question.jsonl" {
			http.NotFound(w, r)
			return
		}
		io.WriteString(w, `{"question_id": 81, "category": "writing", "turns": ["Compose a travel blog post.", "Rewrite it so every sentence starts with A."]}
{"question_id": 82, "category": "roleplay", "turns": [""]}

{"question_id": 83, "category": "math", "turns": ["What is 3 + 4?"]}
`)
	}))
	defer srv.Close()
	t.Setenv("AIPERF_CACHE", t.TempDir())
	t.Setenv("AIPERF_SPEC_BENCH_URL", srv.URL+"/data/spec_bench/question.jsonl")
	ctx := context.Background()
	f, err := hfdata.Fetch(ctx, hub.Config{}, "spec_bench", "")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(f.Path)
	if want := "{\"text\":\"Compose a travel blog post.\"}\n{\"text\":\"What is 3 + 4?\"}\n"; string(b) != want || f.Rows != 2 || f.SkippedText() != "1 with no prompt" {
		t.Errorf("spec_bench: %q (%d rows, skipped %s), want %q", b, f.Rows, f.SkippedText(), want)
	}
	// Kept: offline, with the mirror gone, it serves without a request.
	srv.Close()
	if f2, err := hfdata.Fetch(ctx, hub.Config{Offline: true}, "spec_bench", ""); err != nil || f2.Path != f.Path || hits.Load() != 1 {
		t.Errorf("kept copy: %v, %d requests", err, hits.Load())
	}
	t.Setenv("AIPERF_CACHE", t.TempDir())
	if _, err := hfdata.Fetch(ctx, hub.Config{Offline: true}, "spec_bench", ""); err == nil || !strings.Contains(err.Error(), "HF_HUB_OFFLINE") {
		t.Errorf("offline, not kept: %v", err)
	}
	if _, err := hfdata.Fetch(ctx, hub.Config{}, "spec_bench", ""); err == nil || !strings.Contains(err.Error(), "AIPERF_SPEC_BENCH_URL") {
		t.Errorf("mirror down: %v, want the error to name AIPERF_SPEC_BENCH_URL", err)
	}
	bad := httptest.NewServer(http.NotFoundHandler())
	defer bad.Close()
	t.Setenv("AIPERF_SPEC_BENCH_URL", bad.URL+"/x.jsonl")
	if _, err := hfdata.Fetch(ctx, hub.Config{}, "spec_bench", ""); err == nil || !strings.Contains(err.Error(), "404") {
		t.Errorf("404: %v", err)
	}
}

// parseWAV is a "wav,<base64>" clip's rate, channels and 16-bit samples.
func parseWAV(t *testing.T, ref string) (int, int, []int16) {
	t.Helper()
	data, ok := strings.CutPrefix(ref, "wav,")
	b, err := base64.StdEncoding.DecodeString(data)
	if !ok || err != nil || len(b) < 44 || string(b[:4]) != "RIFF" || string(b[36:40]) != "data" {
		t.Fatalf("not a canonical WAV: %.40q %v", ref, err)
	}
	if bits := binary.LittleEndian.Uint16(b[34:36]); bits != 16 {
		t.Fatalf("%d-bit WAV, want 16", bits)
	}
	pcm := make([]int16, (len(b)-44)/2)
	binary.Read(bytes.NewReader(b[44:]), binary.LittleEndian, pcm)
	return int(binary.LittleEndian.Uint32(b[24:28])), int(binary.LittleEndian.Uint16(b[22:24])), pcm
}

func TestLookup(t *testing.T) {
	for name, want := range map[string]string{
		"speed_bench_coding":                 "placeholder prompts",
		"speed_bench_throughput_8k_mixed":    "placeholder prompts",
		"semianalysis_cc_traces_weka_060226": "Weka agentic trace",
		"nope":                               "supported: sharegpt, aimo",
	} {
		if _, err := hfdata.Lookup(name); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", name, err, want)
		}
	}
}
