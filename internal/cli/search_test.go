package cli

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aiperf-action/aiperf-action/internal/result"
	"github.com/aiperf-action/aiperf-action/internal/run"
	"github.com/aiperf-action/aiperf-action/internal/sim"
)

// search against engine mode (the Qwen3-0.6B preset, in real time): a
// staircase up until the attainment of TTFT ≤ 150 ms falls below 90%,
// then refinement; every probe a run folder, search.json its record with
// a bounded interval around the estimate; the same command again resumes
// (no probe repeated), another command in the folder is refused.
func TestSearchCommand(t *testing.T) {
	if testing.Short() {
		t.Skip("a dozen probes of real-time load")
	}
	cfg, err := sim.EngineConfig("qwen3-0.6b-h100")
	if err != nil {
		t.Fatal(err)
	}
	s := sim.New(cfg)
	t.Cleanup(func() { s.Close() })
	url := serveHandler(t, s)
	dir := filepath.Join(t.TempDir(), "search")
	args := []string{"search", "-m", "sim", "-u", url, "--streaming", "--ttft-sla-ms", "150", "--search-attainment", "90",
		"--isl", "256", "--osl", "16", "--extra-inputs", "ignore_eos:true", "--request-count", "120", "--warmup-request-count", "10",
		"--search-start", "10", "--search-step", "2", "--search-max-iterations", "10", "--search-precision", "0.3", "--random-seed", "3", "--api-key", "sk-search-secret", "--artifact-dir", dir}
	res := runCLI(t, 5*time.Minute, args...)
	if res.code != 0 {
		t.Fatalf("exit %d\n%s\n%s", res.code, res.stdout, res.stderr)
	}
	t.Logf("%s", res.stdout)
	var doc run.SearchDoc
	b, err := os.ReadFile(filepath.Join(dir, SearchFile))
	if err != nil || json.Unmarshal(b, &doc) != nil {
		t.Fatalf("search.json: %v", err)
	}
	if strings.Contains(string(b), "sk-search-secret") {
		t.Error("search.json holds the --api-key")
	}
	e := doc.Estimate
	if len(doc.Probes) < 3 || !e.LoBounded || !e.HiBounded || !(e.Lo <= e.Capacity && e.Capacity <= e.Hi) || doc.Stopped == "" {
		t.Fatalf("search.json: %d probes, %+v, stopped %q", len(doc.Probes), e, doc.Stopped)
	}
	// The staircase: 10, 20, 40, … until one fails the target.
	for i := 1; i < len(doc.Probes) && doc.Probes[i-1].Attainment() >= 0.9; i++ {
		if doc.Probes[i].Load != 2*doc.Probes[i-1].Load {
			t.Errorf("probe %d at %g after %g", i+1, doc.Probes[i].Load, doc.Probes[i-1].Load)
		}
	}
	for _, pb := range doc.Probes {
		run, err := result.Read(filepath.Join(dir, pb.Dir))
		if err != nil || run.Counts.Requests != pb.N || run.Load.RequestCount != 120 {
			t.Errorf("probe %s: %v (%d requests, %d judged)", pb.Dir, err, run.Counts.Requests, pb.N)
		}
	}
	before, _ := filepath.Glob(filepath.Join(dir, "probe-*"))
	res = runCLI(t, 5*time.Minute, args...)
	after, _ := filepath.Glob(filepath.Join(dir, "probe-*"))
	if res.code != 0 || !strings.Contains(res.stdout, "resuming: ") || len(after) < len(before) {
		t.Errorf("resume: exit %d, %d probe folders then %d\n%s%s", res.code, len(before), len(after), res.stdout, res.stderr)
	}
	res = runCLI(t, time.Minute, append(args[:len(args)-2:len(args)-2], "--ttft-sla-ms", "99", "--artifact-dir", dir)...)
	if res.code != ExitError || !strings.Contains(res.stderr, "is another search's") {
		t.Errorf("another search in the folder: exit %d %s", res.code, res.stderr)
	}
	res = runCLI(t, time.Minute, "search", "-m", "sim", "-u", url, "--artifact-dir", t.TempDir())
	if res.code != ExitError || !strings.Contains(res.stderr, "give at least one objective") {
		t.Errorf("no objective: exit %d %s", res.code, res.stderr)
	}
}

// AIPerf's `aiperf profile --search-recipe max-concurrency-under-sla` (and
// its siblings) is a search by concurrency: whole numbers in a closed
// loop, search.json and AIPerf's search_history.json written, the best
// trial the highest concurrency the interval says holds. The recipes and
// styles not built here are refused by name before any load.
func TestSearchRecipes(t *testing.T) {
	if testing.Short() {
		t.Skip("probes of real-time load")
	}
	_, url := engineSim(t, nil)
	dir := filepath.Join(t.TempDir(), "recipe")
	res := runCLI(t, 5*time.Minute, "profile", "-m", "sim", "-u", url, "--streaming", "--isl", "128", "--osl", "16", "--extra-inputs", "ignore_eos:true",
		"--search-recipe", "max-concurrency-under-sla", "--ttft-sla-ms", "300", "--search-style", "smooth_isotonic", "--concurrency-min", "4", "--concurrency-max", "64",
		"--request-count", "80", "--search-max-iterations", "8", "--random-seed", "5", "--artifact-dir", dir)
	if res.code != 0 {
		t.Fatalf("exit %d\n%s\n%s", res.code, res.stdout, res.stderr)
	}
	doc, err := run.ReadSearch(dir)
	if err != nil {
		t.Fatal(err)
	}
	if doc.Param != "concurrency" || len(doc.Probes) < 2 || doc.Probes[0].Load != 4 {
		t.Fatalf("search.json: param %q, %d probes, first at %v", doc.Param, len(doc.Probes), doc.Probes)
	}
	for _, pb := range doc.Probes {
		r, err := result.Read(filepath.Join(dir, pb.Dir))
		if pb.Load != math.Round(pb.Load) || pb.Load > 64 || err != nil || r.Load.Concurrency != int(pb.Load) || r.Load.RequestRate != 0 {
			t.Errorf("probe at %g: %v, its run at concurrency %d, rate %g", pb.Load, err, r.Load.Concurrency, r.Load.RequestRate)
		}
	}
	var hist struct {
		Config struct {
			SearchSpace []struct {
				Path string  `json:"path"`
				Lo   float64 `json:"lo"`
				Hi   float64 `json:"hi"`
				Kind string  `json:"kind"`
			} `json:"search_space"`
		} `json:"config"`
		Iterations []map[string]any `json:"iterations"`
		BestTrials []struct {
			Values map[string]float64 `json:"variation_values"`
		} `json:"best_trials"`
		Boundary struct {
			Lo float64 `json:"lo"`
		} `json:"boundary_summary"`
		Recipe string `json:"recipe"`
	}
	b, err := os.ReadFile(filepath.Join(dir, run.SearchHistoryFile))
	if err != nil || json.Unmarshal(b, &hist) != nil {
		t.Fatalf("search_history.json: %v", err)
	}
	sp := hist.Config.SearchSpace
	if hist.Recipe != "max-concurrency-under-sla" || len(sp) != 1 || sp[0].Path != "phases.profiling.concurrency" || sp[0].Lo != 4 || sp[0].Hi != 64 || sp[0].Kind != "int" ||
		len(hist.Iterations) != len(doc.Probes) {
		t.Errorf("search_history.json: %s", b)
	}
	if e := doc.Estimate; e.LoBounded && (len(hist.BestTrials) != 1 || hist.BestTrials[0].Values["phases.profiling.concurrency"] != e.Lo || hist.Boundary.Lo != e.Lo) {
		t.Errorf("best trial %v, boundary %v; the interval's lower end is %g", hist.BestTrials, hist.Boundary, e.Lo)
	}
	t.Logf("%s", res.stdout)

	for args, want := range map[string]string{
		"--search-recipe max-throughput-ttft-sla":                                       "needs --ttft-sla-ms",
		"--search-recipe concurrency-ramp --ttft-sla-ms 100":                            "characterization recipes",
		"--search-recipe max-concurrency-under-sla --ttft-sla-ms 100 --search-style bo": "Bayesian",
		"--search-recipe nope --ttft-sla-ms 100":                                        "want max-throughput-ttft-sla",
		"--ttft-sla-ms 100 --concurrency-max 8":                                         "add --search-by concurrency",
		"--search-recipe max-throughput-itl-sla --itl-sla-ms 5 --tpot-sla-ms 5":         "give one",
	} {
		res := runCLI(t, 30*time.Second, append([]string{"profile", "-m", "sim", "-u", url, "--streaming"}, strings.Fields(args)...)...)
		if strings.Contains(args, "--concurrency-max 8") && !strings.Contains(args, "--search-recipe") {
			res = runCLI(t, 30*time.Second, append([]string{"search", "-m", "sim", "-u", url, "--streaming"}, strings.Fields(args)...)...)
		}
		if res.code != ExitError || !strings.Contains(res.stderr, want) {
			t.Errorf("%s: exit %d, want %q\n%s", args, res.code, want, res.stderr)
		}
	}
}
