package gate_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/aiperf-action/aiperf-action/internal/ghfake"
	"github.com/aiperf-action/aiperf-action/internal/sim"
)

// vllmNoModel is vLLM's answer to a request for a model it does not
// serve (its OpenAI-compatible server's ErrorResponse, HTTP 404).
const vllmNoModel = `{"error":{"message":"The model ` + "`gpt-4o`" + ` does not exist.","type":"NotFoundError","param":"model","code":404}}`

// chatCounter serves the simulator, but answers every chat request past
// the first `ok` with h's status and body; it counts the chat requests.
func chatCounter(t *testing.T, ok int32, status int, body string) (string, *atomic.Int32) {
	t.Helper()
	s := sim.New(sim.DefaultConfig)
	t.Cleanup(func() { s.Close() })
	var n atomic.Int32
	url := serveHandler(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/chat/completions") && n.Add(1) > ok {
			io.Copy(io.Discard, r.Body)
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(status)
			io.WriteString(w, body)
			return
		}
		s.ServeHTTP(w, r)
	}))
	return url, &n
}

// A server that is up but refuses the configured model stops the gate
// with the server's own message after one request, before any load: no
// run folder, exit 2.
func TestGateProbeRefusesAWrongModel(t *testing.T) {
	url, n := chatCounter(t, 0, http.StatusNotFound, vllmNoModel)
	dir := t.TempDir()
	cfg := tinyConfig(t, dir, "1ms")
	var out, errb bytes.Buffer
	code := Gate(context.Background(), []string{"--config", cfg, "--results-dir", filepath.Join(dir, "r"), "--mode", "run", "--url", url},
		GateOptions{Getenv: func(string) string { return "" }, Stdout: &out, Stderr: &errb})
	all := out.String() + errb.String()
	if code != ExitError || !strings.Contains(all, "does not exist") || !strings.Contains(all, `model "sim"`) || !strings.Contains(all, "HTTP 404") {
		t.Fatalf("exit %d\n%s", code, all)
	}
	if got := n.Load(); got != 1 {
		t.Errorf("%d chat requests sent, want the probe's 1", got)
	}
	if _, err := os.Stat(filepath.Join(dir, "r", "tiny", "run-1")); err == nil {
		t.Error("a measured run was started after the probe failed")
	}
}

// Runs whose requests all failed are no measurement: with no baseline the
// pull request FAILs (never a green NO-BASELINE), its comment says what
// failed, and a refresh stores nothing and fails.
func TestGateAllFailedRunsAreNeverABaseline(t *testing.T) {
	// The probe's request succeeds; every later one is a 500.
	url, _ := chatCounter(t, 1, http.StatusInternalServerError, `{"error":{"message":"CUDA out of memory","type":"InternalServerError","code":500}}`)
	dir := t.TempDir()
	cfg := tinyConfig(t, dir, "1ms")
	gh := ghfake.New(t, "o", "r")
	env := newActionsEnv(t, dir, gh, "pull_request", prEvent(9), map[string]string{"config": cfg, "results-dir": filepath.Join(dir, "pr"), "url": url})
	code, out, errs := env.gate(t)
	if code != ExitRegression {
		t.Fatalf("a pull request whose requests all failed: exit %d, want %d\n%s\n%s", code, ExitRegression, out, errs)
	}
	if len(gh.Comments[9]) != 1 {
		t.Fatalf("%d comments", len(gh.Comments[9]))
	}
	body := gh.Comments[9][0].Body
	for _, want := range []string{"Requests failed in `tiny`", "none of its 48 requests succeeded", "http\\_500 ×48", "CUDA out of memory", "neither compared nor stored"} {
		if !strings.Contains(body, want) {
			t.Errorf("the comment lacks %q:\n%s", want, body)
		}
	}
	if strings.Contains(body, "no baseline yet") || strings.Contains(read(t, env.output), "no-baseline") {
		t.Errorf("all-failed runs passed as no-baseline:\n%s", body)
	}
	if strings.Contains(out, "run 2 of") {
		t.Error("a second run was made after the first had no successes")
	}

	// A refresh of the same (a fresh server: its probe passes again):
	// nothing stored, and it fails.
	url, _ = chatCounter(t, 1, http.StatusInternalServerError, `{"error":{"message":"CUDA out of memory","type":"InternalServerError","code":500}}`)
	var o, e bytes.Buffer
	code = Gate(context.Background(), []string{"--config", cfg, "--mode", "refresh", "--results-dir", filepath.Join(dir, "seed"), "--commit", "main0000", "--url", url},
		GateOptions{Getenv: func(string) string { return "" }, Stdout: &o, Stderr: &e})
	if code != ExitRegression || !strings.Contains(o.String(), "nothing stored in the baselines") {
		t.Fatalf("refresh: exit %d\n%s\n%s", code, o.String(), e.String())
	}
	if files := listFiles(t, filepath.Join(dir, "baselines")); len(files) != 0 {
		t.Errorf("a refresh stored all-failed runs: %v", files)
	}
}

// A gate error after a green run rewrites that run's sticky comment: the
// error with the server's message, the log's last lines, the commits and
// the run's page, and no ✅ left standing; the token appears nowhere.
func TestGateErrorReplacesTheStickyComment(t *testing.T) {
	dir := t.TempDir()
	cfg := tinyConfig(t, dir, "1ms")
	gh := ghfake.New(t, "o", "r")
	env := newActionsEnv(t, dir, gh, "pull_request", prEvent(7), map[string]string{"config": cfg, "results-dir": filepath.Join(dir, "ok")})
	env.vars["GITHUB_SERVER_URL"], env.vars["GITHUB_RUN_ID"], env.vars["GITHUB_RUN_ATTEMPT"] = "https://ghe.example.test", "4242", "2"
	if code, out, errs := env.gate(t); code == ExitError {
		t.Fatalf("the first run: exit %d\n%s\n%s", code, out, errs)
	}
	if len(gh.Comments[7]) != 1 || strings.Contains(gh.Comments[7][0].Body, "could not run") {
		t.Fatalf("after the first run: %+v", gh.Comments[7])
	}
	url, _ := chatCounter(t, 0, http.StatusNotFound, vllmNoModel)
	env.vars["INPUT_URL"], env.vars["INPUT_RESULTS-DIR"] = url, filepath.Join(dir, "bad")
	code, out, errs := env.gate(t)
	if code != ExitError {
		t.Fatalf("a wrong model: exit %d\n%s\n%s", code, out, errs)
	}
	if len(gh.Comments[7]) != 1 {
		t.Fatalf("%d comments, want the one sticky comment edited", len(gh.Comments[7]))
	}
	body := gh.Comments[7][0].Body
	for _, want := range []string{"could not run: no verdict", "This blocks the merge", "does not exist", "HTTP 404",
		"`head000` against base `base000`", "(https://ghe.example.test/o/r/actions/runs/4242/attempts/2)", "The log's last lines", "refused a first request"} {
		if !strings.Contains(body, want) {
			t.Errorf("the comment lacks %q:\n%s", want, body)
		}
	}
	if strings.Contains(body, "✅") || strings.Contains(body, testToken) || strings.Contains(body, "::add-mask::") {
		t.Errorf("the comment keeps the old verdict, the token or a workflow command:\n%s", body)
	}
}
