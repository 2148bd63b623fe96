package cli

import (
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aiperf-action/aiperf-action/internal/calibrate"
)

// truthStandIn is a streaming chat server that keeps its own timings and
// reports them at /stats the way truthmock does (percentiles, reset and
// skip), so calibrate --against can be tested where truthmock is not.
// Its TTFT is dated from the handler's start, later than the kernel's
// receipt of the request: the tester's TTFT can only be longer.
type truthStandIn struct {
	mu         sync.Mutex
	ttfts, gps []float64
	reqs, skip int
	ignoreSkip bool
}

func (s *truthStandIn) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch r.URL.Path {
	case "/stats":
		s.mu.Lock()
		defer s.mu.Unlock()
		sort.Float64s(s.ttfts)
		sort.Float64s(s.gps)
		q := func(v []float64, p float64) float64 {
			if len(v) == 0 {
				return 0
			}
			return v[int(p*float64(len(v)-1))]
		}
		fmt.Fprintf(w, `{"requests":%d,"server_ttft_ms_p50":%.3f,"server_ttft_ms_p99":%.3f,"server_gap_ms_p50":%.3f,"server_gap_ms_p99":%.3f,"cfg_ttft_ms":4,"cfg_itl_ms":2}`,
			s.reqs, q(s.ttfts, .5), q(s.ttfts, .99), q(s.gps, .5), q(s.gps, .99))
		if r.URL.Query().Get("reset") == "1" {
			s.ttfts, s.gps, s.reqs = nil, nil, 0
			if !s.ignoreSkip {
				s.skip, _ = strconv.Atoi(r.URL.Query().Get("skip"))
			}
		}
		return
	case "/v1/chat/completions":
	default:
		http.NotFound(w, r)
		return
	}
	t0 := time.Now()
	var body struct {
		MaxTokens int `json:"max_tokens"`
	}
	json.NewDecoder(r.Body).Decode(&body)
	n := max(body.MaxTokens, 2)
	w.Header().Set("Content-Type", "text/event-stream")
	fl := w.(http.Flusher)
	time.Sleep(4*time.Millisecond - time.Since(t0))
	var first float64
	var gaps []float64
	last := time.Now()
	for i := range n {
		if i > 0 {
			time.Sleep(2 * time.Millisecond)
		}
		fmt.Fprint(w, `data: {"choices":[{"index":0,"delta":{"content":" tok"},"finish_reason":null}]}`+"\n\n")
		fl.Flush()
		now := time.Now()
		if i == 0 {
			first = float64(now.Sub(t0).Microseconds()) / 1000
		} else {
			gaps = append(gaps, float64(now.Sub(last).Microseconds())/1000)
		}
		last = now
	}
	fmt.Fprint(w, `data: {"choices":[{"index":0,"delta":{},"finish_reason":"length"}]}`+"\n\ndata: [DONE]\n\n")
	fl.Flush()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.skip > 0 {
		s.skip--
		return
	}
	s.reqs++
	s.ttfts = append(s.ttfts, first)
	s.gps = append(s.gps, gaps...)
}

// calibrate --against loads a server that is not serve and holds the run's
// percentiles against the server's own: the same requests on both sides
// (the warmup left out by the skip count), the ideal rate from the
// server's own settings, and errors that say the tester saw no token
// before the server wrote it.
func TestCalibrateAgainstATruthServer(t *testing.T) {
	usePlainWorkers(t)
	srv := httptest.NewServer(&truthStandIn{})
	defer srv.Close()
	out := filepath.Join(t.TempDir(), "cal.json")
	res := runCLI(t, 2*time.Minute, "calibrate", "--against", srv.URL, "--steps", "2,4", "--max-concurrency", "4", "--duration", "0.2",
		"--osl", "8", "--output", out)
	if res.code != 0 {
		t.Fatalf("exit %d\n%s\n%s", res.code, res.stdout, res.stderr)
	}
	var cal calibrate.Calibration
	b, err := os.ReadFile(out)
	if err != nil || json.Unmarshal(b, &cal) != nil {
		t.Fatalf("--output: %v", err)
	}
	if cal.Against != srv.URL || cal.TTFTMs != 4 || cal.ITLMs != 2 || !strings.Contains(res.stdout, "against "+srv.URL+"/stats") {
		t.Errorf("header: %+v\n%s", cal, res.stdout)
	}
	if len(cal.Steps) != 2 {
		t.Fatalf("steps %+v", cal.Steps)
	}
	for _, s := range cal.Steps {
		// 0.2 s of 18 ms requests: 11 rounds.
		if s.Requests != 11*s.Concurrency || s.Errors != 0 {
			t.Errorf("c=%d: %d requests, %d errors; want %d and none", s.Concurrency, s.Requests, s.Errors, 11*s.Concurrency)
		}
		if want := float64(s.Concurrency) / 0.018; math.Abs(s.IdealRate-want) > 1e-6 {
			t.Errorf("ideal rate %v, want %v", s.IdealRate, want)
		}
		if s.TTFTP50ErrMs < -1 || s.TTFTWriteP50ErrMs < -1 || s.RatePct <= 0 || s.RatePct > 105 || s.CPUUsPerChunk <= 0 {
			t.Errorf("c=%d: %+v", s.Concurrency, s)
		}
	}
}

// A truth server whose counts do not match the run's (here: one that does
// not leave the warmup out) is an error, not a comparison of other requests.
func TestCalibrateAgainstCountsMustMatch(t *testing.T) {
	usePlainWorkers(t)
	srv := httptest.NewServer(&truthStandIn{ignoreSkip: true})
	defer srv.Close()
	res := runCLI(t, 2*time.Minute, "calibrate", "--against", srv.URL, "--steps", "2", "--max-concurrency", "2", "--duration", "0.1", "--osl", "4")
	if res.code == 0 || !strings.Contains(res.stderr, "the truth server counted 22 measured streamed requests, the run 20") {
		t.Errorf("exit %d\n%s", res.code, res.stderr)
	}
	notStats := httptest.NewServer(http.NotFoundHandler())
	defer notStats.Close()
	res = runCLI(t, time.Minute, "calibrate", "--against", notStats.URL, "--steps", "2")
	if res.code == 0 || !strings.Contains(res.stderr, "/stats: HTTP 404") {
		t.Errorf("no /stats: exit %d\n%s", res.code, res.stderr)
	}
}
