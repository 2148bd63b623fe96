package cli

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aiperf-action/aiperf-action/internal/fixture"
)

var update = flag.Bool("update", false, "rewrite golden files")

// writeRun writes a deterministic run folder (fixture.WriteRun).
func writeRun(t *testing.T, dir string, seed uint64, ttftScale float64, n, errs int, hash string) {
	t.Helper()
	if err := fixture.WriteRun(dir, seed, ttftScale, n, errs, hash); err != nil {
		t.Fatal(err)
	}
}

const fixtureHash = fixture.Hash

// fixtures writes 3 baseline runs and 3 candidate runs whose TTFT is 30% slower.
func fixtures(t *testing.T) (base, cand string) {
	t.Helper()
	base, cand, err := fixture.Regression(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return base, cand
}

// golden checks got against report's golden file name: the CLI's compare
// prints what report renders.
func golden(t *testing.T, name, got string) {
	t.Helper()
	fixture.Golden(t, filepath.Join("..", "report", "testdata", name), got, *update)
}

func TestCompareGolden(t *testing.T) {
	t.Parallel()
	base, cand := fixtures(t)
	root := filepath.Dir(base)
	for _, f := range []struct{ format, file string }{{"text", "regression.txt"}, {"markdown", "regression.md"}, {"json", "regression.json"}} {
		res := runCLI(t, time.Minute, "compare", "--baseline", base, "--candidate", cand, "--format", f.format)
		if res.code != ExitRegression {
			t.Errorf("%s: exit %d, want 1\n%s%s", f.format, res.code, res.stdout, res.stderr)
		}
		golden(t, f.file, strings.ReplaceAll(res.stdout, root, "$TMP"))
	}
}

func TestCompareSelfPasses(t *testing.T) {
	t.Parallel()
	base, _ := fixtures(t)
	res := runCLI(t, time.Minute, "compare", base, base)
	if res.code != 0 || !strings.Contains(res.stdout, "Verdict: PASS") {
		t.Fatalf("exit %d\n%s%s", res.code, res.stdout, res.stderr)
	}
	one := filepath.Join(base, "r1")
	res = runCLI(t, time.Minute, "compare", "--baseline", one, "--candidate", one+"/run.json")
	if res.code != 0 || !strings.Contains(res.stdout, "Verdict: PASS") {
		t.Fatalf("single run vs itself: exit %d\n%s%s", res.code, res.stdout, res.stderr)
	}
}

func TestCompareBadInput(t *testing.T) {
	t.Parallel()
	base, _ := fixtures(t)
	root := t.TempDir()
	empty := filepath.Join(root, "empty")
	os.Mkdir(empty, 0o755)
	trunc := filepath.Join(root, "trunc")
	os.Mkdir(trunc, 0o755)
	b, _ := os.ReadFile(filepath.Join(base, "r1", "run.json"))
	os.WriteFile(filepath.Join(trunc, "run.json"), b[:len(b)/2], 0o644)
	other := filepath.Join(root, "other")
	writeRun(t, other, 5, 1, 100, 0, "sha256:different")
	cases := []struct {
		name string
		args []string
		want string
	}{
		{"missing path", []string{"--baseline", filepath.Join(root, "nope"), "--candidate", base}, filepath.Join(root, "nope")},
		{"empty folder", []string{"--baseline", base, "--candidate", empty}, empty + ": no run.json"},
		{"truncated run.json", []string{"--baseline", base, "--candidate", trunc}, filepath.Join(trunc, "run.json") + ": not a valid run.json"},
		{"profile mismatch", []string{"--baseline", base, "--candidate", other}, "ran different load profiles"},
		{"bad stat", []string{"--baseline", base, "--candidate", base, "--metric", "time_to_first_token:avgish"}, `stat "avgish"`},
		{"rate with stat", []string{"--baseline", base, "--candidate", base, "--metric", "output_token_throughput:p99"}, "is a rate"},
		{"bad tolerance", []string{"--baseline", base, "--candidate", base, "--max-regression", "lots"}, "--max-regression"},
		{"no candidate", []string{"--baseline", base}, "need --baseline and --candidate"},
	}
	for _, c := range cases {
		res := runCLI(t, time.Minute, append([]string{"compare"}, c.args...)...)
		if res.code != ExitError || !strings.Contains(res.stderr, c.want) {
			t.Errorf("%s: exit %d, stderr %q; want 2 and %q", c.name, res.code, res.stderr, c.want)
		}
	}
	res := runCLI(t, time.Minute, "compare", "--baseline", base, "--candidate", other, "--allow-mismatch")
	if res.code == ExitError || !strings.Contains(res.stdout, "different load profiles") {
		t.Errorf("--allow-mismatch: exit %d\n%s%s", res.code, res.stdout, res.stderr)
	}
}

func TestCompareErrorRateFailsWhateverLatency(t *testing.T) {
	t.Parallel()
	base, _ := fixtures(t)
	cand := filepath.Join(t.TempDir(), "cand")
	writeRun(t, cand, 1, 1.0, 600, 12, fixtureHash) // 2% errors, same latency
	res := runCLI(t, time.Minute, "compare", "--baseline", base, "--candidate", cand)
	if res.code != ExitRegression || !strings.Contains(res.stdout, "error_rate") || !strings.Contains(res.stdout, "above the allowed 1.00%") {
		t.Fatalf("exit %d\n%s%s", res.code, res.stdout, res.stderr)
	}
	res = runCLI(t, time.Minute, "compare", "--baseline", base, "--candidate", cand, "--max-error-rate", "5%", "--metric", "time_to_first_token:p50")
	if res.code == ExitRegression {
		t.Fatalf("with --max-error-rate 5%%: exit %d\n%s", res.code, res.stdout)
	}
}

func TestCompareInconclusiveFlag(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	// One run each, 3% apart: inside a 5% tolerance, but one baseline run
	// (5% noise floor) can't show it: inconclusive and provisional.
	writeRun(t, filepath.Join(root, "b"), 1, 1.0, 600, 0, fixtureHash)
	writeRun(t, filepath.Join(root, "c"), 1, 1.03, 600, 0, fixtureHash)
	args := []string{"compare", filepath.Join(root, "b"), filepath.Join(root, "c"), "--metric", "time_to_first_token:p50"}
	res := runCLI(t, time.Minute, args...)
	if res.code != 0 || !strings.Contains(res.stdout, "INCONCLUSIVE (provisional)") {
		t.Fatalf("exit %d\n%s%s", res.code, res.stdout, res.stderr)
	}
	res = runCLI(t, time.Minute, append(args, "--fail-on-inconclusive")...)
	if res.code != ExitRegression {
		t.Fatalf("--fail-on-inconclusive: exit %d", res.code)
	}
}
