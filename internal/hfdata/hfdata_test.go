package hfdata_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
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
	hfdatatest.AddPublic(t, h, "spec_al_gsm8k", "spec_al_mtbench", "mmstar", "blazedit_5k", "vision_arena", "llava_onevision")
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
	if rows := read(f); err != nil || len(rows) != 2 || rows[0]["text"] != "Rename f to g." {
		t.Errorf("blazedit_5k: %v %v", err, rows)
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

func TestLookup(t *testing.T) {
	for name, want := range map[string]string{
		"speed_bench_coding":                 "placeholder prompts",
		"speed_bench_throughput_8k_mixed":    "placeholder prompts",
		"librispeech":                        "speech dataset",
		"semianalysis_cc_traces_weka_060226": "Weka agentic trace",
		"spec_bench":                         "GitHub",
		"nope":                               "supported: sharegpt, aimo",
	} {
		if _, err := hfdata.Lookup(name); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", name, err, want)
		}
	}
}
