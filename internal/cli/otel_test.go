package cli

import (
	"bufio"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aiperf-action/aiperf-action/internal/otelexport"
	"github.com/aiperf-action/aiperf-action/internal/otelexport/oteltest"
	"github.com/aiperf-action/aiperf-action/internal/record"
	"github.com/aiperf-action/aiperf-action/internal/result"
)

// AIPerf's OTel command line (its tutorial's flags, --stream aside) against
// a stand-in OTLP/HTTP collector: every profiled request arrives in the
// GenAI metrics, their sums equal to records.jsonl's, the warmup left out,
// the header sent and its value kept out of run.json.
func TestOTelExportEndToEnd(t *testing.T) {
	rc := oteltest.New()
	defer rc.Close()
	_, url := startSim(t, 20*time.Millisecond, 5*time.Millisecond)
	dir := filepath.Join(t.TempDir(), "run")
	host := strings.TrimPrefix(rc.URL, "http://")
	res := runCLI(t, time.Minute, "profile", "--url", url, "--model", "my-model", "--endpoint-type", "chat", "--streaming",
		"--synthetic-input-tokens-mean", "32", "--output-tokens-mean", "8", "--extra-inputs", "ignore_eos:true", "--concurrency", "4",
		"--request-count", "24", "--warmup-request-count", "4", "--otel-url", host, "--otel-headers", "x-team:perf", "Authorization:Bearer s3cret",
		"--gen-ai-provider", "vllm", "--artifact-dir", dir)
	if res.code != 0 {
		t.Fatalf("exit %d\n%s\n%s", res.code, res.stdout, res.stderr)
	}
	run, err := result.Read(dir)
	if err != nil {
		t.Fatal(err)
	}
	rep := run.ToolHealth.OTel
	if rep == nil || rep.Records != 24 || rep.Failed != 0 || rep.Exports == 0 || len(rep.Headers) != 2 {
		t.Fatalf("tool_health.otel %+v", rep)
	}
	b, _ := os.ReadFile(filepath.Join(dir, result.RunFile))
	if strings.Contains(string(b), "s3cret") {
		t.Error("run.json holds an --otel-headers value")
	}
	// The records' own figures.
	f, err := os.Open(filepath.Join(dir, result.RecordsFile))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var dur, ttft float64
	var n, out int
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var r record.Record
		if json.Unmarshal(sc.Bytes(), &r) != nil || r.Warmup {
			continue
		}
		n++
		dur += float64(r.End-r.Sent) / 1e9
		ttft += float64(r.FirstToken-r.Sent) / 1e9
		out += r.OSL
	}
	attrs := map[string]string{"gen_ai.request.model": "my-model", "gen_ai.provider.name": "vllm", "gen_ai.operation.name": "chat", "server.address": "127.0.0.1"}
	for _, c := range []struct {
		metric string
		match  map[string]string
		count  int
		sum    float64
	}{{otelexport.MetricDuration, attrs, n, dur}, {otelexport.MetricFirstChunk, attrs, n, ttft},
		{otelexport.MetricTokens, map[string]string{"gen_ai.token.type": "output"}, n, float64(out)},
		{otelexport.MetricPerChunk, attrs, n, -1}} {
		cnt, sum := rc.Total(c.metric, c.match)
		if int(cnt) != c.count || c.sum >= 0 && math.Abs(sum-c.sum) > 1e-6*math.Max(1, c.sum) {
			t.Errorf("%s: %d points, sum %g; records say %d, %g", c.metric, cnt, sum, c.count, c.sum)
		}
	}
	if _, hs := rc.Requests(); len(hs) == 0 || hs[0].Get("x-team") != "perf" {
		t.Errorf("headers %v", hs)
	}

	// A collector that is not there (port 1 on loopback): a warning, and
	// the run as it would be.
	dir2 := filepath.Join(t.TempDir(), "run")
	res = runCLI(t, time.Minute, "profile", "-m", "my-model", "-u", url, "--request-count", "4", "--otel-url", "127.0.0.1:1", "--artifact-dir", dir2)
	if res.code != 0 || !strings.Contains(res.stderr, "the collector is not reachable") {
		t.Errorf("unreachable collector: exit %d\n%s", res.code, res.stderr)
	}
	if run, err := result.Read(dir2); err != nil || run.Counts.Requests != 4 || run.ToolHealth.OTel == nil || run.ToolHealth.OTel.Records != 0 {
		t.Errorf("unreachable collector: %v %+v", err, run)
	}
	// Bad input is refused before any load, naming the flag.
	res = runCLI(t, time.Minute, "profile", "-m", "m", "-u", url, "--otel-url", "grpc://x:4317", "--artifact-dir", t.TempDir())
	if res.code != ExitError || !strings.Contains(res.stderr, "--otel-url grpc://x:4317") {
		t.Errorf("grpc URL: exit %d %s", res.code, res.stderr)
	}
	res = runCLI(t, time.Minute, "profile", "-m", "m", "-u", url, "--mlflow-tracking-uri", "http://localhost:5000", "--artifact-dir", t.TempDir())
	if res.code != ExitError || !strings.Contains(res.stderr, "no maintained Go client") {
		t.Errorf("mlflow: exit %d %s", res.code, res.stderr)
	}
}
