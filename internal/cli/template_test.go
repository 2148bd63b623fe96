package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aiperf-action/aiperf-action/internal/record"
	"github.com/aiperf-action/aiperf-action/internal/result"
	"github.com/aiperf-action/aiperf-action/internal/sim"
)

// The template endpoint type reaches an API by the user's own request
// body and response field: here serve's completions, streamed (both
// client paths) and whole, from a template file, with --extra-inputs
// merged into it; a broken template, a missing field path or --endpoint
// are refused before any load, naming the flag.
func TestTemplateEndpoint(t *testing.T) {
	cfg := sim.DefaultConfig
	cfg.TTFT, cfg.ITL = 10*time.Millisecond, 2*time.Millisecond
	url := serveHandler(t, sim.New(cfg))
	tmpl := filepath.Join(t.TempDir(), "body.tmpl")
	os.WriteFile(tmpl, []byte(`{"model": {{json .Model}}, "prompt": {{json .Prompt}}, "max_tokens": {{.MaxTokens}}{{if .Stream}}, "stream": true{{end}}}`), 0o644)
	eachEndpointRun(t, "template", url, 6, []string{"-m", "custom", "--endpoint-type", "template", "--endpoint", "/v1/completions",
		"--request-template", "@" + tmpl, "--response-field", "choices.0.text", "--extra-inputs", "ignore_eos:true",
		"--concurrency", "2", "--request-count", "6", "--isl", "16", "--osl", "7", "--random-seed", "3"},
		func(t *testing.T, er endpointRun, run *result.Run, recs []record.Record) {
			for _, r := range recs {
				if r.OSL != 7 || r.ISL != 16 || (er.stream && len(r.Chunks) != 7) {
					t.Errorf("request %d: OSL %d, ISL %d, %d chunks", r.Index, r.OSL, r.ISL, len(r.Chunks))
				}
			}
		})
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--request-template", `{"p": {{.Prompt`, "--response-field", "text", "--endpoint", "/x"}, "--request-template"},
		{[]string{"--request-template", `{"p": {{json .Prompt}}}`, "--endpoint", "/x"}, "--response-field"},
		{[]string{"--request-template", `{"p": {{json .Prompt}}}`, "--response-field", "choices..text", "--endpoint", "/x"}, "--response-field"},
		{[]string{"--request-template", `{"p": {{json .Prompt}}}`, "--response-field", "text"}, "--endpoint"},
		{[]string{"--request-template", "@/nonexistent/body.tmpl", "--response-field", "text", "--endpoint", "/x"}, "--request-template"},
	} {
		res := runCLI(t, time.Minute, append([]string{"profile", "-m", "m", "-u", url, "--endpoint-type", "template", "--request-count", "1"}, c.args...)...)
		if res.code != 2 || !strings.Contains(res.stderr, c.want) {
			t.Errorf("%v: exit %d, want 2 naming %s\n%s", c.args, res.code, c.want, res.stderr)
		}
	}
	if res := runCLI(t, time.Minute, "profile", "-m", "m", "-u", url, "--response-field", "text", "--request-count", "1"); res.code != 2 || !strings.Contains(res.stderr, "--endpoint-type template") {
		t.Errorf("--response-field with chat: exit %d\n%s", res.code, res.stderr)
	}
}
