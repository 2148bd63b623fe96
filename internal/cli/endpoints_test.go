package cli

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/aiperf-action/aiperf-action/internal/metrics"
	"github.com/aiperf-action/aiperf-action/internal/record"
	"github.com/aiperf-action/aiperf-action/internal/result"
)

// endpointRun is one of the ways an endpoint type's answers are read:
// streamed through the event loop or net/http, or whole.
type endpointRun struct {
	name   string
	stream bool
	env    string // AIPERF_ACTION_CLIENT
}

var endpointRuns = []endpointRun{{"stream, loop", true, ""}, {"stream, net/http", true, "nethttp"}, {"whole", false, ""}}

// eachEndpointRun runs profile against url with args (and --streaming where
// the run streams) once per endpointRun, as a subtest, and hands check the
// run and its records; every run must finish with wantOK requests, none
// failed.
func eachEndpointRun(t *testing.T, name, url string, wantOK int, args []string, check func(t *testing.T, er endpointRun, run *result.Run, recs []record.Record)) {
	for _, er := range endpointRuns {
		t.Run(name+", "+er.name, func(t *testing.T) {
			if er.env != "" {
				t.Setenv("AIPERF_ACTION_CLIENT", er.env)
			}
			dir := filepath.Join(t.TempDir(), "run")
			a := append([]string{"profile", "-u", url, "--no-server-metrics", "--artifact-dir", dir}, args...)
			if er.stream {
				a = append(a, "--streaming")
			}
			res := runCLI(t, time.Minute, a...)
			if res.code != 0 {
				t.Fatalf("exit %d\n%s", res.code, res.stderr)
			}
			run, err := result.Read(dir)
			if err != nil {
				t.Fatal(err)
			}
			if run.Counts.OK != wantOK || run.Counts.Errors != 0 {
				t.Fatalf("counts %+v", run.Counts)
			}
			check(t, er, run, readRecords(t, dir))
		})
	}
}

// wantTokens checks every record's counts: OSL (ours and the server's),
// reasoning tokens, and ISL (ours, and the server's where it reports one).
func wantTokens(t *testing.T, recs []record.Record, osl, reasoning, isl int, serverISL bool) {
	t.Helper()
	for _, r := range recs {
		if r.OSL != osl || r.ServerOSL != osl || r.ReasoningTokens != reasoning || r.ISL != isl || (serverISL && r.ServerISL != isl) {
			t.Errorf("request %d: OSL %d (server %d), reasoning %d, ISL %d (server %d); want %d, %d, %d", r.Index, r.OSL, r.ServerOSL, r.ReasoningTokens, r.ISL, r.ServerISL, osl, reasoning, isl)
		}
	}
}

// wantFirstTokens checks a streamed run's first tokens by the records'
// structure, not by how fast a busy machine ran: TTFT is the first chunk
// with text, TTFO the chunk after the reasoning's (reasoning chunks of one
// token each), and every record gives both metrics; TTFT is never below
// the server's (it answers ttftMs after arrival, on a timer that is never
// early).
func wantFirstTokens(t *testing.T, run *result.Run, recs []record.Record, ttftMs float64, reasoning int) {
	t.Helper()
	for _, r := range recs {
		if len(r.Chunks) <= reasoning || r.FirstToken != r.Chunks[0] || (reasoning > 0 && r.FirstOutput != r.Chunks[reasoning]) {
			t.Errorf("request %d: first token %d, first output %d, chunks %v (reasoning %d)", r.Index, r.FirstToken, r.FirstOutput, r.Chunks, reasoning)
		}
	}
	ttft, ttfo := run.Metrics[metrics.TTFT].Dist, run.Metrics[metrics.TTFO].Dist
	if ttft == nil || ttfo == nil || ttfo.Count != int64(len(recs)) {
		t.Fatalf("TTFT %+v, TTFO %+v", ttft, ttfo)
	}
	t.Logf("TTFT p50 %.2f ms, TTFO p50 %.2f ms", ttft.P50, ttfo.P50)
	if ttft.P50 < ttftMs-1 || ttfo.P50 < ttft.P50 {
		t.Errorf("TTFT p50 %.2f ms below the server's %g, or TTFO p50 %.2f ms before it", ttft.P50, ttftMs, ttfo.P50)
	}
	if reasoning == 0 {
		return
	}
	// The server spaces the answer's first token `reasoning` ITLs after the
	// first, but a stalled VM can hand both to the client in one read, with
	// one arrival time. TTFO p50 must come after TTFT p50 when every request
	// saw them apart by more than the histogram's resolution (then each
	// request's TTFO exceeds its TTFT, and so does every order statistic).
	apart := true
	gaps := make([]float64, 0, len(recs))
	for _, r := range recs {
		if len(r.Chunks) <= reasoning {
			return // reported above
		}
		gap, ttftR := r.Chunks[reasoning]-r.Chunks[0], r.Chunks[0]-r.Sent
		gaps = append(gaps, float64(gap)/1e6)
		apart = apart && gap > ttftR/100 && gap > int64(50*time.Microsecond)
	}
	if apart && ttfo.P50 <= ttft.P50 {
		t.Errorf("every request's answer came %v ms after its first token, yet TTFO p50 %.2f ms is not after TTFT p50 %.2f ms", gaps, ttfo.P50, ttft.P50)
	} else if !apart {
		t.Logf("the first token and the answer shared an arrival in some request (gaps %v ms): TTFO only checked not before TTFT", gaps)
	}
}
