// Package cli is aiperf-action's command line: one binary, one subcommand
// per job, and exit codes that CI can act on.
//
//	0    success
//	1    regression detected (compare, gate)
//	2    usage, config or tool error, or a run that failed (too many errors,
//	     lost records, a dead worker)
//	130  interrupted (partial results were written)
package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/spf13/pflag"

	"github.com/aiperf-action/aiperf-action/internal/config"
	"github.com/aiperf-action/aiperf-action/internal/run"
)

// Version is the tool version written into every run.
var Version = run.Version

// Exit codes.
const (
	ExitOK          = run.ExitOK
	ExitRegression  = run.ExitRegression
	ExitError       = run.ExitError
	ExitInterrupted = run.ExitInterrupted
)

type command struct {
	name, summary string
	run           func(ctx context.Context, args []string, stdout, stderr io.Writer) int
}

func commands() []command {
	return []command{
		{"profile", "run one load profile against a server and write its artifacts", runProfile},
		{"compare", "compare candidate runs with baseline runs; exit 0 pass, 1 regression, 2 error", runCompare},
		{"gate", "the CI gate: run the config's scenarios, compare with baselines, report, comment, refresh", runGate},
		{"search", "find the highest request rate a server holds within latency objectives, with an interval (probes of open-loop load)", runSearch},
		{"plot", "draw a run's charts as PNG or SVG (AIPerf's plot names), or several runs side by side", runPlot},
		{"report", "write one self-contained HTML report of runs, a comparison or a capacity search (charts drawn in, nothing fetched)", runReport},
		{"calibrate", "measure the tester against the simulator's or a truth server's figures: up to what load can this runner be trusted", runCalibrate},
		{"serve", "run the built-in OpenAI-compatible simulator (exact mode)", runServe},
		{"kube", "kube render / kube run: a run whose workers are pods on many nodes, as Kubernetes objects or applied, followed and collected", runKube},
		{"demo", "start the simulator in process and profile it (no GPU, no network)", runDemo},
		{"worker", "internal: one load-generating worker process, started by profile", runWorker},
		{"version", "print the version", func(_ context.Context, _ []string, out, _ io.Writer) int {
			fmt.Fprintln(out, "aiperf-action", Version)
			return ExitOK
		}},
	}
}

// Run runs the command line args (without the program name).
func Run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		usage(stderr)
		return ExitError
	}
	if args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		usage(stdout)
		return ExitOK
	}
	for _, c := range commands() {
		if c.name == args[0] {
			return c.run(ctx, args[1:], stdout, stderr)
		}
	}
	fmt.Fprintf(stderr, "aiperf-action: unknown command %q\n\n", args[0])
	usage(stderr)
	return ExitError
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "aiperf-action: LLM inference load tester and CI regression gate")
	fmt.Fprintln(w, "\nUsage: aiperf-action <command> [flags]\n\nCommands:")
	for _, c := range commands() {
		fmt.Fprintf(w, "  %-9s %s\n", c.name, c.summary)
	}
	fmt.Fprintln(w, "\nRun 'aiperf-action <command> --help' for a command's flags and examples.")
	fmt.Fprint(w, "\n"+exitCodes)
}

// parseFlags parses args into fs, reporting errors the same way everywhere;
// --help goes to stdout. It returns ok=false with the exit code to use when
// parsing stopped.
func parseFlags(fs *pflag.FlagSet, args []string, stdout, stderr io.Writer) (int, bool) {
	if code, ok := parseFlagsArgs(fs, args, stdout, stderr); !ok {
		return code, false
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "aiperf-action %s: unexpected argument %q\n", fs.Name(), strings.Join(fs.Args(), " "))
		return ExitError, false
	}
	return 0, true
}

// parseFlagsArgs is parseFlags that allows positional arguments.
func parseFlagsArgs(fs *pflag.FlagSet, args []string, stdout, stderr io.Writer) (int, bool) {
	fs.SetOutput(io.Discard)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			commandHelp(stdout, fs)
			return ExitOK, false
		}
		err = config.ExplainFlagError(err)
		fmt.Fprintf(stderr, "aiperf-action %s: %v\nRun 'aiperf-action %s --help' for the flags.\n", fs.Name(), err, fs.Name())
		return ExitError, false
	}
	return 0, true
}

// help is what a command's --help says around its flags.
type help struct {
	usage, about string
	examples     []string
}

var helps = map[string]help{
	"profile": {"aiperf-action profile [MODEL] [-m MODEL] [-u URL] [flags]",
		"Runs one seeded load profile against an OpenAI-compatible server, from worker processes that time every request on their own clocks, and writes run.json (AIPerf's metrics, with HdrHistograms and per-window data), records.jsonl, inputs.json and AIPerf's profile_export files. The flags are AIPerf's, in its forms: the model as -m or one positional word (with neither, the server's first at /v1/models), -u default http://localhost:8000, several values after a list flag. The same seed and flags send the same requests at the same offsets.",
		[]string{
			"aiperf-action profile -m Qwen/Qwen3-0.6B -u http://127.0.0.1:8000 --streaming --concurrency 32 --request-count 2000 --isl 512 --osl 128",
			"aiperf-action profile -m m -u http://127.0.0.1:8000 --streaming --request-rate 20 --benchmark-duration 60 --random-seed 7",
			"aiperf-action profile Qwen/Qwen3-0.6B --streaming --extra-inputs temperature:0 ignore_eos:true --num-requests 100",
		}},
	"compare": {"aiperf-action compare [flags] BASELINE CANDIDATE  |  --baseline P ... --candidate P ...",
		"Compares candidate runs with baseline runs, statistic by statistic (run-level replication, order-statistic intervals within runs, Hommel across metrics), and says PASS, FAIL or INCONCLUSIVE with each change's interval and the smallest worsening it can detect. A path is a run folder, a run.json, a folder of run folders, or the baseline folder the gate writes (its root, a scenario's folder or a profile's).",
		[]string{
			"aiperf-action compare artifacts/base artifacts/candidate",
			"aiperf-action compare --baseline baselines/chat-c8 --candidate aiperf-results/chat-c8 --metric time_to_first_token:p99:10% --format markdown",
		}},
	"gate": {"aiperf-action gate [--config .github/aiperf.yml] [flags]",
		"The CI gate, as the GitHub Action runs it: brings the server up, runs each scenario of the config repeats times, compares them with the stored baselines, and reports (report.md, comparison.json, and in Actions the PR comment, check run, job summary and outputs); on a push to the default branch it refreshes the baselines. Each flag is the action input of its name and overrides the config. Outside Actions it prints the comment it would post.",
		[]string{
			"aiperf-action gate",
			"aiperf-action gate --config .github/aiperf.yml --url http://127.0.0.1:8000 --repeats 5 --mode run",
		}},
	"search": {"aiperf-action search [MODEL] [-m MODEL] [-u URL] --ttft-sla-ms MS [flags]",
		"Finds the capacity: the highest Poisson request rate at which the share of requests meeting every objective (from when each was due, so queueing counts; errors are misses) is at least --search-attainment. Each probe is a profile run of --request-count requests at one rate (default 300), in its own folder under --artifact-dir; a staircase up by --search-step until the attainment crosses the target, then replicates (each with its own seed, the same at every rate) and probes between rates until the interval is within --search-precision. The interval is simultaneous over the rates probed, from each rate's exact binomial interval of its effective count and the t interval of its runs. search.json keeps every probe: run the same command again to resume.",
		[]string{
			"aiperf-action search -m m -u http://127.0.0.1:8000 --streaming --ttft-sla-ms 500 --isl 512 --osl 128 --search-start 2",
			"aiperf-action search -m m --streaming --ttft-sla-ms 300 --itl-sla-ms 30 --search-attainment 99 --request-count 600 --artifact-dir artifacts/cap",
		}},
	"plot": {"aiperf-action plot [PATH...] [-o DIR] [--format png|svg] [--theme light|dark]",
		"Draws charts from run folders alone (run.json and records.jsonl): for one run AIPerf's single-run set (ttft_over_time, itl_over_time, latency_over_time, dispersed_throughput_over_time, ttft_timeline) and more (errors_over_time, cdf_ttft, cdf_itl, cdf_latency, timeslices_*); for several, ttft_vs_throughput and the CDFs overlaid; for a search folder, attainment_vs_load. A series of more requests than --max-points is drawn as buckets of send time (median, p99, least and greatest of each), and the chart says so. Default folder: the first path's plots/.",
		[]string{"aiperf-action plot artifacts/my-run", "aiperf-action plot artifacts/c1 artifacts/c8 artifacts/c32 -o plots --format svg"}},
	"report": {"aiperf-action report [PATH...] [--baseline P... --candidate P...] [-o report.html]",
		"Writes one self-contained HTML file: each run's figures, warnings and charts; several runs side by side; with --baseline and --candidate, the comparison's verdict table (compare's statistics at their defaults) and the candidate's CDFs over the baseline's runs; for a search folder, the attainment curve and each load's interval. The charts are SVG drawn into the file; there is no script, and nothing is fetched to view it.",
		[]string{"aiperf-action report artifacts/my-run -o report.html", "aiperf-action report --baseline baselines/chat --candidate aiperf-results/chat -o report.html"}},
	"calibrate": {"aiperf-action calibrate [flags]",
		"Measures the tester itself at rising concurrency against the simulator's truth, or with --against against any truth server's own /stats: up to what load this machine's numbers can be trusted.",
		[]string{"aiperf-action calibrate", "aiperf-action calibrate --steps 1,64,512", "aiperf-action calibrate --against http://127.0.0.1:8123 --steps 64,512"}},
	"serve": {"aiperf-action serve [flags]",
		"Runs the built-in OpenAI-compatible simulator (chat and completions, streamed or whole): exact mode (a fixed TTFT and ITL) or engine mode (a continuous-batching model of vLLM), with injectable faults and vLLM's /metrics.",
		[]string{"aiperf-action serve --port 8000 --ttft 20ms --itl 5ms", "aiperf-action serve --port 8000 --mode engine --error-rate 0.01"}},
	"demo": {"aiperf-action demo", "Starts the simulator in this process and profiles it: no GPU, no network.", nil},
}

// exitCodes is every command's exit codes, for --help.
const exitCodes = `Exit codes:
  0    success (gate: pass, no baseline, or inconclusive unless fail-on-inconclusive)
  1    regression detected (compare, gate)
  2    usage, config or tool error, or a run that failed (too many errors, lost records, a dead worker)
  130  interrupted (partial results were written)
`

// commandHelp prints a command's help: what it does, its usage, examples,
// its flags (in groups where they have them) and the exit codes.
func commandHelp(w io.Writer, fs *pflag.FlagSet) {
	h := helps[fs.Name()]
	usage := h.usage
	if usage == "" {
		usage = "aiperf-action " + fs.Name() + " [flags]"
	}
	fmt.Fprintf(w, "Usage: %s\n\n", usage)
	if h.about != "" {
		fmt.Fprintf(w, "%s\n\n", wrap(h.about, 78))
	}
	if len(h.examples) > 0 {
		fmt.Fprintln(w, "Examples:")
		for _, e := range h.examples {
			fmt.Fprintf(w, "  %s\n", e)
		}
		fmt.Fprintln(w)
	}
	groups, order := map[string]*pflag.FlagSet{}, []string{}
	fs.VisitAll(func(f *pflag.Flag) {
		if f.Hidden {
			return // (its group would print with nothing under it)
		}
		g := "Flags"
		if a := f.Annotations[config.GroupAnnotation]; len(a) > 0 {
			g = a[0]
		}
		if groups[g] == nil {
			groups[g] = pflag.NewFlagSet(g, pflag.ContinueOnError)
			groups[g].SortFlags = false
			order = append(order, g)
		}
		groups[g].AddFlag(f)
	})
	if len(order) > 1 {
		slices.SortStableFunc(order, func(a, b string) int { return config.GroupRank(a) - config.GroupRank(b) })
	}
	for _, g := range order {
		fmt.Fprintf(w, "%s:\n%s\n", g, groups[g].FlagUsages())
	}
	fmt.Fprint(w, exitCodes)
}

// wrap breaks s into lines of at most width characters.
func wrap(s string, width int) string {
	var b strings.Builder
	n := 0
	for _, word := range strings.Fields(s) {
		if n > 0 && n+1+len(word) > width {
			b.WriteByte('\n')
			n = 0
		} else if n > 0 {
			b.WriteByte(' ')
			n++
		}
		b.WriteString(word)
		n += len(word)
	}
	return b.String()
}
