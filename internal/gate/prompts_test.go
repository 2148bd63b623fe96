package gate_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aiperf-action/aiperf-action/internal/config"
	"github.com/aiperf-action/aiperf-action/internal/gate"
	"github.com/aiperf-action/aiperf-action/internal/result"
	"github.com/aiperf-action/aiperf-action/internal/run"
	"github.com/aiperf-action/aiperf-action/internal/seeds"
	"github.com/aiperf-action/aiperf-action/internal/sim"
)

// A server that outlives the gate's jobs, with a prefix cache keyed by the
// prompts' tokens (the simulator in engine mode, as vLLM's): the
// simulator in this process, up for the whole test.
func longLivedServer(t *testing.T) string {
	t.Helper()
	cfg, err := sim.EngineConfig(sim.DefaultPreset)
	if err != nil {
		t.Fatal(err)
	}
	if !cfg.Engine.PrefixCaching {
		t.Fatalf("preset %s has no prefix cache", sim.DefaultPreset)
	}
	s, err := sim.Start(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Stop)
	return s.URL
}

// cacheConfig is a gate config against url: two scenarios of one shape
// (the same seed and lengths), whose prompts are long enough to fill 32
// of the cache's blocks each.
func cacheConfig(t *testing.T, dir, url, extra string) string {
	t.Helper()
	p := filepath.Join(dir, "gate.yml")
	scenario := func(name string) string {
		return `  - name: ` + name + `
    endpoint-type: completions
    streaming: true
    concurrency: 2
    request-count: 12
    isl: 512
    osl: 4
    extra-inputs: ["ignore_eos:true"]
`
	}
	os.WriteFile(p, []byte(`url: `+url+`
model: aiperf-sim
repeats: 3
max-repeats: 3
seed: 11
warmup: false
`+extra+`scenarios:
`+scenario("first")+scenario("second")+`thresholds:
  max-regression: 50%
  metrics: ["time_to_first_token:p50"]
baseline:
  store: folder
  path: `+filepath.Join(dir, "baselines")+`
`), 0o644)
	return p
}

// refreshed is a long-lived server, a folder and a config whose baselines
// a refresh (commit main0001) has stored.
func refreshed(t *testing.T) (url, dir, cfg string) {
	t.Helper()
	url, dir = longLivedServer(t), t.TempDir()
	cfg = cacheConfig(t, dir, url, "")
	if code, out := runGate(t, "--config", cfg, "--mode", "refresh", "--results-dir", filepath.Join(dir, "main"), "--commit", "main0001"); code != 0 {
		t.Fatalf("refresh: exit %d\n%s", code, out)
	}
	return url, dir, cfg
}

// shape is the scenarios' profile against url, without its seeds.
func shape(url string) config.Profile {
	p := config.DefaultProfile
	p.Model, p.URL, p.EndpointType, p.Streaming = "aiperf-sim", url, "completions", true
	p.Concurrency, p.ConcurrencySet, p.RequestCount, p.RequestCountSet = 2, true, 12, true
	p.ISLMean, p.OSLMean, p.ExtraInputs = 512, 4, []string{"ignore_eos:true"}
	return p
}

type cacheRun struct {
	dir         string
	payloadSeed uint64
	cached      float64
	ttftP50     float64
}

// cacheRuns reads the runs folders of a gate's results, by scenario.
func cacheRuns(t *testing.T, results, scenario, prefix string) []cacheRun {
	t.Helper()
	var out []cacheRun
	for i := 1; ; i++ {
		dir := filepath.Join(results, scenario, fmt.Sprintf("%s-%d", prefix, i))
		r, err := result.Read(dir)
		if os.IsNotExist(err) || (err != nil && strings.Contains(err.Error(), "no such file")) {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		pc := r.ToolHealth.PromptCache
		if pc == nil {
			t.Fatalf("%s: no prompt_cache in run.json (the simulator counts vllm:prefix_cache_hits)", dir)
		}
		out = append(out, cacheRun{dir, r.PayloadSeed, pc.CachedFraction, r.Metrics["time_to_first_token"].Dist.P50})
	}
}

func runGate(t *testing.T, args ...string) (int, string) {
	t.Helper()
	return runGateNonce(t, 0, args...)
}

// runGateNonce runs a gate job whose nonce is nonce (0: drawn).
func runGateNonce(t *testing.T, nonce uint64, args ...string) (int, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := Gate(context.Background(), args, GateOptions{Getenv: func(string) string { return "" }, Stdout: &out, Stderr: &errb, PayloadNonce: nonce})
	if code == ExitError {
		t.Fatalf("gate %v: exit %d\n%s\n%s", args, code, out.String(), errb.String())
	}
	return code, out.String() + errb.String()
}

// A refresh, then a pull request's gate, against one server that outlives
// both jobs: no run of the second job sends a prompt the first (or the
// other scenario, or an earlier repeat) sent, so none is served from the
// cache, and the verdict is not one the cache made. The control: the
// payload seed a run recorded rebuilds its prompts (profile
// --payload-seed), and sent again they are served from the cache, so the
// server would have shown a replay.
func TestGateLongLivedServerSendsFreshPrompts(t *testing.T) {
	skipVerdictUnderShort(t)
	url, dir, cfg := refreshed(t)
	code, out := runGate(t, "--config", cfg, "--mode", "run", "--results-dir", filepath.Join(dir, "pr"))
	seen := map[uint64]string{}
	for _, job := range []string{"main", "pr"} {
		for _, sc := range []string{"first", "second"} {
			runs := cacheRuns(t, filepath.Join(dir, job), sc, "run")
			if len(runs) != 3 {
				t.Fatalf("%s/%s: %d runs, want 3\n%s", job, sc, len(runs), out)
			}
			for _, r := range runs {
				t.Logf("%s/%s %s: payload_seed %d, TTFT p50 %.2f ms, cached %.1f%%", job, sc, filepath.Base(r.dir), r.payloadSeed, r.ttftP50, 100*r.cached)
				if o, ok := seen[r.payloadSeed]; ok {
					t.Errorf("%s sends the prompts of %s (payload_seed %d)", r.dir, o, r.payloadSeed)
				}
				seen[r.payloadSeed] = r.dir
				if r.cached > 0.05 {
					t.Errorf("%s: %.1f%% of its prompt tokens were served from the cache", r.dir, 100*r.cached)
				}
			}
		}
	}
	rep := read(t, filepath.Join(dir, "pr", "report.md"))
	if code == ExitRegression || strings.Contains(rep, "Prefix cache differs") || strings.Contains(out, "again with fresh prompts") {
		t.Fatalf("the unchanged server: exit %d\n%s\n%s", code, rep, out)
	}

	// The control: run 2 of the pull request's first scenario, rebuilt from
	// its run.json's seed and payload_seed, is the same prompts, and the
	// server serves them from its cache.
	r2, err := result.Read(filepath.Join(dir, "pr", "first", "run-2"))
	if err != nil {
		t.Fatal(err)
	}
	p := shape(url)
	p.Seed, p.SeedSet, p.PayloadSeed = r2.Seed, true, r2.PayloadSeed
	p.ArtifactDir = filepath.Join(dir, "replay")
	if err := p.Validate(); err != nil {
		t.Fatal(err)
	}
	res, err := run.Profile(context.Background(), &p, run.Options{Cmdline: "replay"})
	if err != nil {
		t.Fatal(err)
	}
	if res.Run.PayloadSeed != r2.PayloadSeed || res.Run.ProfileHash != r2.ProfileHash {
		t.Errorf("rebuilt: payload_seed %d, profile_hash %s; the run's: %d, %s", res.Run.PayloadSeed, res.Run.ProfileHash, r2.PayloadSeed, r2.ProfileHash)
	}
	pc := res.Run.ToolHealth.PromptCache
	if pc == nil || pc.CachedFraction < 0.9 {
		t.Fatalf("control: run 2's prompts sent again were not served from the cache: %+v", pc)
	}
	t.Logf("control: run 2's prompts again: %.1f%% cached, TTFT p50 %.2f ms (%.2f ms fresh)", 100*pc.CachedFraction, res.Run.Metrics["time_to_first_token"].Dist.P50, r2.Metrics["time_to_first_token"].Dist.P50)
}

// Paired A/A with both arms on one server (the check a user runs first to
// trust the setup): the arms of a pair send prompts of the same lengths
// drawn apart, so neither is served from the other's cache, and the
// verdict is not one the cache made.
func TestGatePairedOnOneServerMissesTheCache(t *testing.T) {
	skipVerdictUnderShort(t)
	url := longLivedServer(t)
	dir := t.TempDir()
	cfg := cacheConfig(t, dir, url, "baseline-server:\n  url: "+url+"\n")
	code, out := runGate(t, "--config", cfg, "--mode", "run", "--results-dir", filepath.Join(dir, "ab"))
	for _, sc := range []string{"first", "second"} {
		cand, base := cacheRuns(t, filepath.Join(dir, "ab"), sc, "run"), cacheRuns(t, filepath.Join(dir, "ab"), sc, "baseline")
		if len(cand) != 3 || len(base) != 3 {
			t.Fatalf("%s: %d candidate and %d baseline runs, want 3 each\n%s", sc, len(cand), len(base), out)
		}
		for i := range cand {
			t.Logf("%s pair %d: baseline payload_seed %d, %.2f ms, %.1f%% cached; candidate %d, %.2f ms, %.1f%% cached", sc, i+1,
				base[i].payloadSeed, base[i].ttftP50, 100*base[i].cached, cand[i].payloadSeed, cand[i].ttftP50, 100*cand[i].cached)
			if cand[i].payloadSeed == base[i].payloadSeed {
				t.Errorf("%s pair %d: both arms send the prompts of payload_seed %d", sc, i+1, cand[i].payloadSeed)
			}
			if cand[i].cached > 0.05 || base[i].cached > 0.05 {
				t.Errorf("%s pair %d: cached %.1f%% (candidate), %.1f%% (baseline)", sc, i+1, 100*cand[i].cached, 100*base[i].cached)
			}
		}
	}
	rep := read(t, filepath.Join(dir, "ab", "report.md"))
	if code == ExitRegression || strings.Contains(rep, "Prefix cache differs") {
		t.Fatalf("paired A/A on one server: exit %d\n%s\n%s", code, rep, out)
	}
}

// Baselines stored before each job drew its own prompts, on a server that
// outlived the job before theirs: their repeats sent the prompts the seed
// alone fixes, and were served from the cache. A pull request's fresh
// runs are not compared with them: the scenario reads INCONCLUSIVE, the
// comment's first lines say why, and nothing is judged a regression. Once
// the default branch stores runs of its own, the replayed ones are left
// out and the scenario is compared.
func TestGateBaselineServedFromTheCache(t *testing.T) {
	skipVerdictUnderShort(t)
	url, dir, cfg := refreshed(t)
	// Replace the stored runs of "first" with runs made as every job made
	// them before: repeat r's prompts from the seed alone, sent by an
	// earlier job first (so the server has them cached), then measured.
	var stored []string
	filepath.WalkDir(filepath.Join(dir, "baselines"), func(path string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.Contains(path, string(filepath.Separator)+"first"+string(filepath.Separator)) && strings.HasSuffix(path, ".json") {
			stored = append(stored, path)
		}
		return nil
	})
	if len(stored) != 3 {
		t.Fatalf("stored runs of first: %v", stored)
	}
	for i, path := range stored {
		var last *run.Result
		for job := range 2 {
			p := shape(url)
			p.Seed, p.SeedSet, p.Repeat = 11, true, i+1
			p.ArtifactDir = filepath.Join(dir, "old", fmt.Sprintf("job%d-run-%d", job, i+1))
			res, err := run.Profile(context.Background(), &p, run.Options{Cmdline: "old", Scenario: "first"})
			if err != nil {
				t.Fatal(err)
			}
			last = res
		}
		if last.Run.PayloadSeed != seeds.PayloadSeed(11, i+1) || last.Run.ToolHealth.PromptCache == nil || last.Run.ToolHealth.PromptCache.CachedFraction < 0.9 {
			t.Fatalf("the old recipe's run %d: payload_seed %d, cache %+v", i+1, last.Run.PayloadSeed, last.Run.ToolHealth.PromptCache)
		}
		old, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		was, err := result.Parse(old, path)
		if err != nil {
			t.Fatal(err)
		}
		b := bytes.Replace(last.JSON, []byte(`"profile_hash": "`+last.Run.ProfileHash+`"`), []byte(`"profile_hash": "`+was.ProfileHash+`"`), 1)
		if last.Run.ProfileHash != was.ProfileHash {
			t.Fatalf("the old recipe's run hashes %s, the stored run %s", last.Run.ProfileHash, was.ProfileHash)
		}
		os.WriteFile(path, b, 0o644)
	}
	code, out := runGate(t, "--config", cfg, "--mode", "run", "--results-dir", filepath.Join(dir, "pr"))
	_, comment, ok := strings.Cut(out, "(the PR comment it would post) ----\n")
	if !ok {
		t.Fatalf("no comment printed:\n%s", out)
	}
	lines := strings.SplitN(strings.TrimLeft(comment, "\n"), "\n", 6)
	head := strings.Join(lines[:min(len(lines), 5)], "\n")
	if code != 0 || !strings.Contains(head, "Prefix cache differs from the baseline's in `first`") || !strings.Contains(head, "stored baseline runs of `first` measured the server's prefix cache") {
		t.Fatalf("against replayed baselines: exit %d; the comment's first lines:\n%s\n\n%s", code, head, out)
	}
	t.Logf("the comment's first lines:\n%s", head)
	rep := read(t, filepath.Join(dir, "pr", "report.md"))
	if !strings.Contains(rep, "### `first`: INCONCLUSIVE") || strings.Contains(rep, "### `second`: INCONCLUSIVE\n\n⚠️ **Prefix cache") {
		t.Fatalf("report:\n%s", rep)
	}
	// The default branch's next refresh stores runs of its own; the
	// replayed ones are then left out.
	if code, out := runGate(t, "--config", cfg, "--mode", "refresh", "--results-dir", filepath.Join(dir, "main2"), "--commit", "main0002"); code != 0 {
		t.Fatalf("second refresh: exit %d\n%s", code, out)
	}
	code, out = runGate(t, "--config", cfg, "--mode", "run", "--results-dir", filepath.Join(dir, "pr2"))
	rep = read(t, filepath.Join(dir, "pr2", "report.md"))
	if code == ExitRegression || strings.Contains(rep, "Prefix cache differs") || !strings.Contains(rep, "3 stored baseline run\\(s\\) left out: they sent the prompts their seed alone fixes") {
		t.Fatalf("after a refresh: exit %d\n%s\n%s", code, rep, out)
	}
}

// sendAs sends the prompts of payload seed ps (seed 11, the scenarios'
// shape) to url once, unmeasured: another client, or an earlier job, that
// sent them first.
func sendAs(t *testing.T, url, dir string, ps uint64) {
	t.Helper()
	p := shape(url)
	p.Seed, p.SeedSet, p.PayloadSeed = 11, true, ps
	p.ArtifactDir = dir
	if _, err := run.Profile(context.Background(), &p, run.Options{Cmdline: "another client"}); err != nil {
		t.Fatal(err)
	}
}

// A pull request's runs that the server answers from its prefix cache
// (their prompts sent before by another client) while the baseline's were
// not: each such run runs again with fresh prompts, and is compared once
// the cache no longer serves it; where the cache serves the fresh prompts
// too, the scenario reads INCONCLUSIVE, saying so in the comment's first
// lines, and is never judged a regression.
func TestGateCandidateServedFromTheCache(t *testing.T) {
	skipVerdictUnderShort(t)
	url, dir, cfg := refreshed(t)
	// The first tries' prompts of "first" were sent before: its runs run
	// again with fresh prompts, which the server has not seen.
	const once = 0x51ed5eed
	for r := 1; r <= 3; r++ {
		sendAs(t, url, filepath.Join(dir, "before", fmt.Sprintf("once-%d", r)), gate.PayloadSeed(11, once, "first", r, 0, false))
	}
	code, out := runGateNonce(t, once, "--config", cfg, "--mode", "run", "--results-dir", filepath.Join(dir, "pr"))
	hot := cacheRuns(t, filepath.Join(dir, "pr"), "first", "run")
	for i := 1; i <= 3; i++ {
		again, err := result.Read(filepath.Join(dir, "pr", "first", fmt.Sprintf("run-%d-fresh-1", i)))
		if err != nil {
			t.Fatalf("run %d was not run again with fresh prompts: %v\n%s", i, err, out)
		}
		t.Logf("run %d: %.1f%% cached, again %.1f%% (payload_seed %d, then %d)", i, 100*hot[i-1].cached, 100*again.ToolHealth.PromptCache.CachedFraction, hot[i-1].payloadSeed, again.PayloadSeed)
		if hot[i-1].cached < 0.9 || again.ToolHealth.PromptCache.CachedFraction > 0.05 {
			t.Errorf("run %d: %.1f%% cached, then %.1f%%", i, 100*hot[i-1].cached, 100*again.ToolHealth.PromptCache.CachedFraction)
		}
	}
	rep := read(t, filepath.Join(dir, "pr", "report.md"))
	if code == ExitRegression || strings.Contains(rep, "Prefix cache differs") {
		t.Fatalf("runs again with fresh prompts: exit %d\n%s\n%s", code, rep, out)
	}
	// Both tries' prompts sent before: the cache serves the runs whatever
	// this job sends.
	const twice = 0x7e57ab1e
	for r := 1; r <= 3; r++ {
		for try := range 2 {
			sendAs(t, url, filepath.Join(dir, "before", fmt.Sprintf("twice-%d-%d", r, try)), gate.PayloadSeed(11, twice, "first", r, try, false))
		}
	}
	code, out = runGateNonce(t, twice, "--config", cfg, "--results-dir", filepath.Join(dir, "pr2"))
	_, comment, _ := strings.Cut(out, "(the PR comment it would post) ----\n")
	lines := strings.SplitN(strings.TrimLeft(comment, "\n"), "\n", 6)
	head := strings.Join(lines[:min(len(lines), 5)], "\n")
	if code != 0 || !strings.Contains(head, "Prefix cache differs from the baseline's in `first`") || !strings.Contains(head, "this job's runs of `first` were served from the server's prefix cache") {
		t.Fatalf("a cache that stays hot: exit %d; the comment's first lines:\n%s\n\n%s", code, head, out)
	}
	t.Logf("the comment's first lines:\n%s", head)
	rep = read(t, filepath.Join(dir, "pr2", "report.md"))
	if !strings.Contains(rep, "### `first`: INCONCLUSIVE") || !strings.Contains(rep, "run again with fresh prompts") {
		t.Fatalf("report:\n%s", rep)
	}
}

// Paired on one server, a pair whose candidate arm the cache served (its
// prompts sent before by another client) and whose baseline arm it did
// not: the pair runs again, both arms with fresh prompts, and is compared
// once they are served alike.
func TestGatePairedRunsAPairAgain(t *testing.T) {
	skipVerdictUnderShort(t)
	url := longLivedServer(t)
	dir := t.TempDir()
	cfg := cacheConfig(t, dir, url, "baseline-server:\n  url: "+url+"\n")
	const nonce = 0xab0ab
	sendAs(t, url, filepath.Join(dir, "before"), gate.PayloadSeed(11, nonce, "first", 2, 0, false))
	code, out := runGateNonce(t, nonce, "--config", cfg, "--mode", "run", "--results-dir", filepath.Join(dir, "ab"))
	for _, arm := range []string{"run-2", "baseline-2"} {
		r, err := result.Read(filepath.Join(dir, "ab", "first", arm+"-fresh-1"))
		if err != nil {
			t.Fatalf("%s was not run again with fresh prompts: %v\n%s", arm, err, out)
		}
		t.Logf("%s again: %.1f%% cached", arm, 100*r.ToolHealth.PromptCache.CachedFraction)
	}
	first, _ := result.Read(filepath.Join(dir, "ab", "first", "run-2"))
	if pc := first.ToolHealth.PromptCache; pc == nil || pc.CachedFraction < 0.9 {
		t.Fatalf("pair 2's candidate arm was not served from the cache: %+v", pc)
	}
	rep := read(t, filepath.Join(dir, "ab", "report.md"))
	if code == ExitRegression || strings.Contains(rep, "Prefix cache differs") || !strings.Contains(rep, "paired A/B: 3 pairs") {
		t.Fatalf("a pair run again: exit %d\n%s\n%s", code, rep, out)
	}
	if _, err := os.Stat(filepath.Join(dir, "ab", "second", "run-2-fresh-1")); err == nil {
		t.Error("the other scenario's pair 2 ran again too")
	}
}
