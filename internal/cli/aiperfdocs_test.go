package cli

import (
	"bufio"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aiperf-action/aiperf-action/internal/dataset"
	"github.com/aiperf-action/aiperf-action/internal/gputelemetry/dcgmtest"
	"github.com/aiperf-action/aiperf-action/internal/hfdata/hfdatatest"
	"github.com/aiperf-action/aiperf-action/internal/hub/hubtest"
	"github.com/aiperf-action/aiperf-action/internal/server"
)

// docCommand is one `aiperf profile` command line from AIPerf's docs.
type docCommand struct {
	line   int    // in commands.txt
	source string // docs file and commit
	needs  string // why it is not run here ("" runs)
	cwd    string // the folder under files/ it runs in ("" the top)
	args   []string
}

// readDocCommands reads testdata/aiperf-docs/commands.txt.
func readDocCommands(t *testing.T) []docCommand {
	t.Helper()
	f, err := os.Open("testdata/aiperf-docs/commands.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []docCommand
	var source, needs, cwd string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		switch {
		case strings.HasPrefix(line, "# source:"):
			source, needs = strings.TrimSpace(strings.TrimPrefix(line, "# source:")), ""
		case strings.HasPrefix(line, "# needs:"):
			needs = strings.TrimSpace(strings.TrimPrefix(line, "# needs:"))
		case strings.HasPrefix(line, "# cwd:"):
			cwd = strings.TrimSpace(strings.TrimPrefix(line, "# cwd:"))
		case line == "" || strings.HasPrefix(line, "#"):
		default:
			words, err := server.SplitWords(line)
			if err != nil {
				t.Fatalf("commands.txt:%d: %v", n, err)
			}
			if len(words) < 2 || words[0] != "aiperf" || words[1] != "profile" {
				t.Fatalf("commands.txt:%d: not an `aiperf profile` command", n)
			}
			if source == "" {
				t.Fatalf("commands.txt:%d: no `# source:` line above it", n)
			}
			out = append(out, docCommand{n, source, needs, cwd, words[2:]})
			needs, cwd = "", ""
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// docCaps bounds a documented command's size so that the corpus runs in
// CI's minutes: each named flag's value is cut to at most this much. The
// command's shape (its flags, modes and lengths) is kept.
var docCaps = map[string]float64{
	"request-count": 6, "num-requests": 6, "num-prompts": 6,
	"benchmark-duration": 1.5, "duration": 1.5,
	"warmup-request-count": 2, "num-warmup-requests": 2, "warmup-duration": 0.5, "num-warmup-sessions": 1,
	"warmup-grace-period": 1, "benchmark-grace-period": 2, "slice-duration": 0.5,
	"concurrency-ramp-duration": 0.5, "request-rate-ramp-duration": 0.5, "prefill-concurrency-ramp-duration": 0.5,
	"warmup-concurrency-ramp-duration": 0.3, "warmup-request-rate-ramp-duration": 0.3, "warmup-prefill-concurrency-ramp-duration": 0.3,
	"conversation-num": 4, "num-conversations": 4, "num-sessions": 4, "num-dataset-entries": 8,
	"request-timeout-seconds": 30, "search-max-iterations": 6,
	"conversation-turn-delay-mean": 50, "conversation-turn-delay-stddev": 20,
	"session-turn-delay-mean": 50, "session-turn-delay-stddev": 20,
}

// docURLFlags take a server address: each of their values becomes the
// simulator's, its path kept (a template's /custom-endpoint, /metrics).
var docURLFlags = map[string]bool{"url": true, "u": true, "server-metrics": true, "server-metrics-url": true}

// simAddress is u with its scheme and host the simulator's.
func simAddress(u, simURL string) string {
	if _, rest, ok := strings.Cut(u, "://"); ok {
		u = rest
	}
	if i := strings.IndexByte(u, '/'); i >= 0 {
		return simURL + u[i:]
	}
	return simURL
}

// A --tokenizer that is an absolute path is a folder on the docs' user's
// machine: it becomes the test's tokenizers/NAME, which holds a
// tokenizer.json.
func docTokenizer(v, work string) string {
	if filepath.IsAbs(v) {
		return filepath.Join(work, "tokenizers", filepath.Base(v))
	}
	return v
}

// docDirFlags name an output folder: each lands under the test's folder.
var docDirFlags = map[string]bool{"output-dir": true, "artifact-dir": true, "output-artifact-dir": true}

// adaptDocCommand points a documented command at the simulator and caps
// its size (docCaps). Flags that take a value are told apart from
// switches by the word after them.
func adaptDocCommand(args []string, simURL, dir, work string) []string {
	out := make([]string, 0, len(args)+4)
	hasDir, hasURL := false, false
	for i := 0; i < len(args); i++ {
		a := args[i]
		name, val, inline := "", "", false
		if strings.HasPrefix(a, "-") {
			name = strings.TrimLeft(a, "-")
			if k := strings.IndexByte(name, '='); k >= 0 {
				name, val, inline = name[:k], name[k+1:], true
			}
		}
		values := func() []string { // the value words after a flag
			if inline {
				return []string{val}
			}
			var vs []string
			for i+1 < len(args) && !strings.HasPrefix(args[i+1], "-") {
				i++
				vs = append(vs, args[i])
			}
			return vs
		}
		switch {
		case name == "":
			out = append(out, a)
		case docURLFlags[name]:
			vs := values()
			hasURL = hasURL || name == "url" || name == "u"
			out = append(out, "--"+name)
			for _, v := range vs {
				out = append(out, simAddress(v, simURL))
			}
		case docDirFlags[name]:
			hasDir = true
			vs := values()
			out = append(out, "--"+name)
			for _, v := range vs {
				out = append(out, filepath.Join(dir, filepath.Base(v)))
			}
		case name == "tokenizer":
			for _, v := range values() {
				out = append(out, "--tokenizer", docTokenizer(v, work))
			}
		case docCaps[name] > 0:
			vs := values()
			out = append(out, "--"+name)
			for _, v := range vs {
				if f, err := strconv.ParseFloat(v, 64); err == nil && f > docCaps[name] {
					v = strconv.FormatFloat(docCaps[name], 'f', -1, 64)
				}
				out = append(out, v)
			}
		default:
			out = append(out, a)
		}
	}
	if slices.Contains(args, "--search-recipe") && !slices.Contains(args, "--search-max-iterations") && !slices.Contains(args, "prefill-ttft-curve") { // (that recipe is a sweep, its size its input lengths')
		out = append(out, "--search-max-iterations", "6") // (a search's size, capped as docCaps cap a run's)
	}
	if !hasURL { // AIPerf's default, localhost:8000, is where the simulator stands in
		out = append(out, "--url", simURL)
	}
	if !hasDir {
		out = append(out, "--artifact-dir", filepath.Join(dir, "artifacts"))
	}
	return out
}

// docFloor is the number of the corpus's commands that must run: the count
// measured when it was last raised. A change that breaks one fails here.
const docFloor = 135

// AIPerf's own documented command lines (testdata/aiperf-docs) run against
// the simulator as a user would paste them, each with its server address
// pointed at the simulator and its size capped (docCaps). A command this
// project cannot honour must be refused before any load with an error that
// names the flag; none may crash or pass silently. The table of what ran
// and why the rest did not is the test's log (-v).
func TestAIPerfDocsCorpus(t *testing.T) {
	if testing.Short() {
		t.Skip("the docs corpus runs every documented command; not in -short")
	}
	cmds := readDocCommands(t)
	repoDir, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	_, url := startSim(t, time.Millisecond, 200*time.Microsecond)
	customURL, customOK := startCustomAPI(t)
	// The files the docs have a user make or bring (a trace, a dataset)
	// are in testdata/aiperf-docs/files; relative paths resolve there.
	work := t.TempDir()
	if err := os.CopyFS(work, os.DirFS(filepath.Join(repoDir, "internal/cli/testdata/aiperf-docs/files"))); err != nil {
		t.Fatal(err)
	}
	t.Chdir(work)
	// A local tokenizer folder, and the hub: --public-dataset sharegpt
	// downloads its file from a loopback stand-in of the Hugging Face hub
	// (hub/sharegpt.json, a few conversations) into a fresh cache, as it
	// would from the hub for a user.
	tok, err := os.ReadFile(filepath.Join(repoDir, "internal/tokenizer/testdata/qwen3-trimmed.json"))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cmds {
		for i, a := range c.args {
			if a == "--tokenizer" && i+1 < len(c.args) && filepath.IsAbs(c.args[i+1]) {
				d := docTokenizer(c.args[i+1], work)
				if err := os.MkdirAll(d, 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(d, "tokenizer.json"), tok, 0o644); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	share, err := os.ReadFile(filepath.Join(repoDir, "internal/cli/testdata/aiperf-docs/hub/sharegpt.json"))
	if err != nil {
		t.Fatal(err)
	}
	h := hubtest.New()
	t.Cleanup(h.Close)
	h.Add("dataset", dataset.ShareGPTRepo, "main", map[string]hubtest.File{dataset.ShareGPTFile: {Data: share}})
	hfdatatest.AddPublic(t, h, "aimo", "vision_arena", "librispeech", "mmvu")
	t.Setenv("AIPERF_CACHE", t.TempDir())
	// The DCGM exporter the GPU telemetry tutorial starts: a stand-in with
	// two GPUs, where AIPerf looks for one by default.
	t.Setenv("AIPERF_GPU_DEFAULT_DCGM_ENDPOINTS", dcgmtest.Start(t, dcgmtest.H100s(2), []float64{300, 300}).URL)
	t.Setenv("HF_ENDPOINT", h.URL)
	t.Setenv("HF_HUB_CACHE", t.TempDir())
	ran, refused, needs := 0, map[string][]int{}, 0
	for _, c := range cmds {
		if c.needs != "" {
			needs++
			t.Logf("commands.txt:%d NEEDS %s", c.line, c.needs)
			continue
		}
		dir := t.TempDir()
		target := url
		if slices.Contains(c.args, "template") { // --endpoint-type template: the tutorial's custom APIs
			target = customURL
		}
		args := append([]string{"profile"}, adaptDocCommand(c.args, target, dir, work)...)
		if err := os.Chdir(filepath.Join(work, c.cwd)); err != nil {
			t.Fatalf("commands.txt:%d: # cwd: %v", c.line, err)
		}
		res := runCLI(t, 2*time.Minute, args...)
		switch res.code {
		case 0:
			ran++
			t.Logf("commands.txt:%d RAN", c.line)
		case ExitError:
			why := firstLine(res.stderr)
			refused[why] = append(refused[why], c.line)
			t.Logf("commands.txt:%d REFUSED %s", c.line, why)
		default:
			t.Errorf("commands.txt:%d (%s): exit %d, want 0 or a refusal (%d)\n%s\n%s", c.line, c.source, res.code, ExitError,
				strings.Join(args, " "), res.stderr)
		}
	}
	var whys []string
	for w := range refused {
		whys = append(whys, w)
	}
	sort.Slice(whys, func(i, j int) bool { return len(refused[whys[i]]) > len(refused[whys[j]]) })
	for _, w := range whys {
		t.Logf("%3d refused: %s (lines %v)", len(refused[w]), w, refused[w])
	}
	runnable := len(cmds) - needs
	t.Logf("AIPerf docs corpus: %d commands, %d need a GPU or an outside service; %d of %d others ran (%.1f%%)",
		len(cmds), needs, ran, runnable, 100*float64(ran)/float64(max(runnable, 1)))
	// The template tutorial's commands reached their APIs with bodies
	// those APIs accept.
	for _, path := range []string{"/custom-endpoint", "/embed", "/embeddings", "/generate", "/analyze"} {
		if customOK(path) == 0 {
			t.Errorf("the template tutorial's %s API answered no request 200", path)
		}
	}
	if ran < docFloor {
		t.Errorf("%d of the corpus's commands ran, fewer than the %d that ran when docFloor was set", ran, docFloor)
	}
}

// firstLine is the first line a refused run printed, its error, with the
// line after it when it ends in a colon.
func firstLine(s string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			out = append(out, l)
			if !strings.HasSuffix(l, ":") || len(out) == 2 {
				break
			}
		}
	}
	if len(out) == 0 {
		return "(no message)"
	}
	return strings.Join(out, " ")
}
