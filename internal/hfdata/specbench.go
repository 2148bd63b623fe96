package hfdata

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"

	"github.com/aiperf-action/aiperf-action/internal/result"
)

// specBenchCommit is the Spec-Bench commit AIPerf pins its questions at.
const specBenchCommit = "fd2c1cd7d2201ef71db4c5f4e455008f017967bf"

// SpecBenchURL is where spec_bench's question.jsonl is downloaded from:
// AIPERF_SPEC_BENCH_URL (a mirror of the file), else the file in the
// Spec-Bench repository on GitHub at the commit AIPerf pins.
func SpecBenchURL() string {
	if u := os.Getenv("AIPERF_SPEC_BENCH_URL"); u != "" {
		return u
	}
	return "https://raw.githubusercontent.com/hemingkx/Spec-Bench/" + specBenchCommit + "/data/spec_bench/question.jsonl"
}

// maxSpecBench bounds the download (the real file is under 1 MB).
const maxSpecBench = 64 << 20

// fetchSpecBench downloads spec_bench's questions (once; offline, only
// the kept copy serves) and writes each line's first turn as a prompt,
// as AIPerf's loader does.
func fetchSpecBench(ctx context.Context, offline bool) (Fetched, error) {
	src := SpecBenchURL()
	out := Fetched{Repo: "hemingkx/Spec-Bench", Commit: specBenchCommit, Files: []string{"data/spec_bench/question.jsonl"},
		Path: filepath.Join(CacheDir(), "spec_bench", specBenchCommit+".jsonl")}
	if st, err := os.Stat(out.Path); err == nil && st.Size() > 0 {
		out.Rows = -1
		return out, nil
	}
	if offline {
		return Fetched{}, fmt.Errorf("spec_bench: not downloaded yet, and HF_HUB_OFFLINE is set (it comes from %s)", src)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, src, nil)
	if err != nil {
		return Fetched{}, fmt.Errorf("spec_bench: %v", err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return Fetched{}, fmt.Errorf("spec_bench: %v (AIPERF_SPEC_BENCH_URL names a mirror of %s)", err, "question.jsonl")
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return Fetched{}, fmt.Errorf("spec_bench: %s answered %s", src, resp.Status)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxSpecBench+1))
	if err != nil {
		return Fetched{}, fmt.Errorf("spec_bench: reading %s: %v", src, err)
	}
	if len(body) > maxSpecBench {
		return Fetched{}, fmt.Errorf("spec_bench: %s is over %d MiB, not the question file", src, maxSpecBench>>20)
	}
	var lines []string
	sc := bufio.NewScanner(strings.NewReader(string(body)))
	sc.Buffer(nil, maxSpecBench)
	for n := 1; sc.Scan(); n++ {
		if strings.TrimSpace(sc.Text()) == "" {
			continue
		}
		var q struct {
			Turns []any `json:"turns"`
		}
		if err := json.Unmarshal(sc.Bytes(), &q); err != nil {
			return Fetched{}, fmt.Errorf("spec_bench: question.jsonl line %d: %v", n, err)
		}
		first := ""
		if len(q.Turns) > 0 && q.Turns[0] != nil {
			first = fmt.Sprint(q.Turns[0])
		}
		if strings.TrimSpace(first) == "" {
			if out.Skipped == nil {
				out.Skipped = map[string]int{}
			}
			out.Skipped["with no prompt"]++
			continue
		}
		b, _ := json.Marshal(map[string]string{"text": first})
		lines = append(lines, string(b))
	}
	if len(lines) == 0 {
		return Fetched{}, fmt.Errorf("spec_bench: %s holds no question with a first turn", src)
	}
	out.Rows = len(lines)
	if err := os.MkdirAll(filepath.Dir(out.Path), 0o755); err != nil {
		return Fetched{}, err
	}
	return out, result.WriteFileAtomic(out.Path, []byte(strings.Join(lines, "\n")+"\n"))
}
