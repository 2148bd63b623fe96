package cli

import (
	"encoding/json"
	"flag"
	"image/png"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/aiperf-action/aiperf-action/internal/browser"
	"github.com/aiperf-action/aiperf-action/internal/capacity"
	"github.com/aiperf-action/aiperf-action/internal/run"
)

var reportShots = flag.Bool("report-screenshots", false, "write the rendered reports to docs/screenshots")

// The pictures of a user's runs, from their folders alone: --auto-plot
// writes AIPerf's single-run set; plot draws several runs side by side;
// report writes one HTML file for a run, a search and a FAIL comparison,
// which headless Chromium renders with every network cut off: no load
// fails, every chart is there and drawn, the page is not blank.
func TestPlotsAndReports(t *testing.T) {
	if testing.Short() {
		t.Skip("eight runs and two pages in a browser")
	}
	shots, _ := filepath.Abs(filepath.Join("..", "..", "docs", "screenshots")) // (before the chdir below)
	_, fast := startSim(t, 20*time.Millisecond, 4*time.Millisecond)
	_, slow := startSim(t, 45*time.Millisecond, 4*time.Millisecond)
	root := t.TempDir()
	profile := func(url, dir string, extra ...string) {
		t.Helper()
		args := append([]string{"profile", "-m", "sim", "-u", url, "--streaming", "--concurrency", "4", "--request-count", "40",
			"--isl", "32", "--osl", "8", "--extra-inputs", "ignore_eos:true", "--random-seed", "5", "--artifact-dir", dir}, extra...)
		if res := runCLI(t, time.Minute, args...); res.code != 0 {
			t.Fatalf("exit %d\n%s\n%s", res.code, res.stdout, res.stderr)
		}
	}
	// One run with --auto-plot.
	one := filepath.Join(root, "one")
	profile(fast, one, "--auto-plot")
	for _, name := range []string{"ttft_over_time", "itl_over_time", "latency_over_time", "dispersed_throughput_over_time", "load_over_time", "ttft_timeline", "schedule_lag_over_time",
		"cdf_ttft", "cdf_itl", "cdf_latency", "hist_ttft", "hist_itl", "hist_latency",
		"server_requests_over_time"} { // (the simulator's vLLM /metrics, scraped into run.json's series)
		f, err := os.Open(filepath.Join(one, "plots", name+".png"))
		if err != nil {
			t.Errorf("--auto-plot: %v", err)
			continue
		}
		img, err := png.Decode(f)
		f.Close()
		if err != nil || img.Bounds().Dx() < 600 {
			t.Errorf("%s.png: %v", name, err)
		}
		if ink, _ := browser.Ink(filepath.Join(one, "plots", name+".png")); ink < 0.01 {
			t.Errorf("%s.png is blank (%.2f%% drawn)", name, 100*ink)
		}
	}
	// Baseline and candidate runs: the candidate's TTFT more than doubled.
	var base, cand []string
	for i := 1; i <= 3; i++ {
		b, c := filepath.Join(root, "base", "run-"+string(rune('0'+i))), filepath.Join(root, "cand", "run-"+string(rune('0'+i)))
		profile(fast, b)
		profile(slow, c)
		base, cand = append(base, b), append(cand, c)
	}
	res := runCLI(t, time.Minute, "plot", base[0], cand[0], "-o", filepath.Join(root, "side"), "--format", "svg")
	if res.code != 0 || !strings.Contains(res.stdout, "ttft_vs_throughput.svg") {
		t.Errorf("plot of two runs: exit %d\n%s%s", res.code, res.stdout, res.stderr)
	}
	// A capacity search's record (its estimate from probes made up here).
	sdir := filepath.Join(root, "search")
	os.MkdirAll(sdir, 0o755)
	e, err := capacity.EstimateOf([]capacity.Probe{{Load: 4, N: 600, Good: 600}, {Load: 8, N: 600, Good: 597}, {Load: 12, N: 600, Good: 560},
		{Load: 16, N: 600, Good: 200}, {Load: 10, N: 600, Good: 590}}, 0.95, 0.95)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(run.SearchDoc{Schema: "aiperf-action/search/v1", SLO: run.SearchSLO{TTFTms: 500}, Target: 0.95, Estimate: e, Stopped: "precision"})
	os.WriteFile(filepath.Join(sdir, SearchFile), b, 0o644)

	// The demo's two runs, as the README's first command makes them.
	t.Chdir(root)
	if res := runCLI(t, 2*time.Minute, "demo"); res.code != 0 {
		t.Fatalf("demo: exit %d\n%s", res.code, res.stderr)
	}
	pages := map[string][]string{
		"demo":    {"report", filepath.Join(root, "artifacts", "demo"), "-o", filepath.Join(root, "demo.html")},
		"run":     {"report", one, sdir, "-o", filepath.Join(root, "run.html")},
		"compare": {"report", "--baseline", base[0], "--baseline", base[1], "--baseline", base[2], "--candidate", cand[0], "--candidate", cand[1], "--candidate", cand[2], "-o", filepath.Join(root, "compare.html")},
	}
	for name, args := range pages {
		t.Run(name, func(t *testing.T) {
			res := runCLI(t, time.Minute, args...)
			if res.code != 0 {
				t.Fatalf("exit %d\n%s%s", res.code, res.stdout, res.stderr)
			}
			page := args[len(args)-1]
			html, _ := os.ReadFile(page)
			// Nothing to fetch: no script, no external source or style.
			if regexp.MustCompile(`(?i)<script|<link|<img|<iframe|src\s*=|url\(|@import|href="(https?:)?//`).Match(html) {
				t.Errorf("the page refers to something outside it")
			}
			want := 15 // a run's charts (no failure: no errors_over_time), with the search's
			if name == "demo" {
				want = 2*13 + 4 // each run's, and side by side ttft_vs_throughput and three CDFs
			}
			if name == "compare" {
				want = 3
				if !strings.Contains(string(html), "Comparison: FAIL") || !strings.Contains(string(html), `class="fail"`) {
					t.Errorf("the comparison's verdict is not FAIL in the page")
				}
			}
			dom, logs := browser.Run(t, page, append([]string{"--dump-dom", "--enable-logging=stderr", "--v=0"}, browser.Offline...)...)
			if l := string(logs); strings.Contains(l, "Failed to load") || strings.Contains(l, "Uncaught") || strings.Contains(l, "ERR_") {
				t.Errorf("the browser logged a failure:\n%s", l)
			}
			figures := regexp.MustCompile(`(?s)<figure class="chart".*?</figure>`).FindAllString(string(dom), -1)
			if len(figures) < want {
				t.Errorf("%d charts in the page, want at least %d: %q", len(figures), want, regexp.MustCompile(`aria-label="[^"]*"`).FindAllString(string(dom), -1))
			}
			for _, f := range figures {
				if !strings.Contains(f, "<svg") || strings.Count(f, "<path") < 5 {
					t.Errorf("an empty chart: %.200s", f)
				}
			}
			shot := filepath.Join(t.TempDir(), name+".png")
			browser.Run(t, page, append([]string{"--screenshot=" + shot, "--window-size=1150,2600"}, browser.Offline...)...)
			if ink, err := browser.Ink(shot); err != nil || ink < 0.02 {
				t.Errorf("the page is blank: %.2f%% drawn (%v)", 100*ink, err)
			}
			if *reportShots {
				b, _ := os.ReadFile(shot)
				os.MkdirAll(shots, 0o755)
				os.WriteFile(filepath.Join(shots, "report-"+name+".png"), b, 0o644)
			}
		})
	}
	res = runCLI(t, time.Minute, "plot", one, "--dashboard")
	if res.code != ExitError || !strings.Contains(res.stderr, "--dashboard") {
		t.Errorf("--dashboard: exit %d %s", res.code, res.stderr)
	}
}
