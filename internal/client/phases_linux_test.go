package client

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aiperf-action/aiperf-action/internal/endpoint"
	"github.com/aiperf-action/aiperf-action/internal/metrics"
	"github.com/aiperf-action/aiperf-action/internal/record"
)

// Each request records its phases in order (sent, connected, written,
// first byte, first token, end), on both paths; the requests that dialled
// say so, one per connection the server accepted, and only they get a
// connection_setup.
func TestRequestPhases(t *testing.T) {
	var conns atomic.Int32
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		time.Sleep(2 * time.Millisecond)
		w.Write([]byte(sseBody(3, true)))
	}))
	countConns(srv, &conns)
	srv.Start()
	defer srv.Close()
	for _, path := range []string{"loop", "net/http"} {
		conns.Store(0)
		c := loopClient(t, srv.URL)
		if path == "net/http" {
			c.Loop = nil
			c.HTTP = &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 8}}
		}
		// 4 slots, 3 requests each: a cold start dials 4, then reuses them.
		var mu sync.Mutex
		var recs []record.Record
		var wg sync.WaitGroup
		for range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for range 3 {
					var rec record.Record
					c.Do(context.Background(), []byte(`{}`), "", 0, 3, &rec)
					mu.Lock()
					recs = append(recs, rec)
					mu.Unlock()
				}
			}()
		}
		wg.Wait()
		dialled := 0
		for i, r := range recs {
			if !r.OK() {
				t.Fatalf("%s: request %d: %+v", path, i, r)
			}
			if !(r.Sent <= r.Connected && r.Connected <= r.Written && r.Written <= r.FirstByte && r.FirstByte <= r.FirstToken && r.FirstToken <= r.End) {
				t.Errorf("%s: request %d out of order: sent %d connected %d written %d first byte %d first token %d end %d", path, i, r.Sent, r.Connected, r.Written, r.FirstByte, r.FirstToken, r.End)
			}
			m := metrics.RecordMetrics(&r)
			if _, ok := m[metrics.ConnSetup]; ok != r.NewConn {
				t.Errorf("%s: request %d: new connection %v, connection_setup %v", path, i, r.NewConn, m[metrics.ConnSetup])
			}
			if m[metrics.TTFTFromWrite] > m[metrics.TTFT] || m[metrics.TTFTFromWrite] <= 0 {
				t.Errorf("%s: request %d: TTFT %.3f ms, from the write %.3f ms", path, i, m[metrics.TTFT], m[metrics.TTFTFromWrite])
			}
			if r.NewConn {
				dialled++
			}
		}
		if n := int(conns.Load()); dialled != n || n < 1 || n > 4 {
			t.Errorf("%s: %d requests say they dialled, the server accepted %d connections (want 1 to 4, equal)", path, dialled, n)
		}
	}
}

// A slow dial is connection set-up, not server time: TTFT (from the send,
// as every peer defines it) includes it, TTFT from the write leaves it out.
func TestSlowDialIsConnectionSetup(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.Write([]byte(sseBody(2, true)))
	}))
	defer srv.Close()
	const dial = 60 * time.Millisecond
	slow := func(ctx context.Context, network, addr string) (net.Conn, error) {
		time.Sleep(dial)
		return (&net.Dialer{}).DialContext(ctx, network, addr)
	}
	c := &Client{URL: srv.URL, Kind: endpoint.Chat{}, Streaming: true, Clock: clock(),
		HTTP: &http.Client{Transport: &http.Transport{DialContext: slow}}}
	var cold, warm record.Record
	c.Do(context.Background(), []byte(`{}`), "", 0, 2, &cold)
	c.Do(context.Background(), []byte(`{}`), "", 0, 2, &warm)
	mc, mw := metrics.RecordMetrics(&cold), metrics.RecordMetrics(&warm)
	if !cold.OK() || !warm.OK() || !cold.NewConn || warm.NewConn {
		t.Fatalf("cold %+v\nwarm %+v", cold, warm)
	}
	if mc[metrics.ConnSetup] < ms(dial) || mc[metrics.TTFT]-mc[metrics.TTFTFromWrite] < ms(dial) {
		t.Errorf("cold: connection setup %.1f ms, TTFT %.1f ms, from the write %.1f ms; the dial took %v", mc[metrics.ConnSetup], mc[metrics.TTFT], mc[metrics.TTFTFromWrite], dial)
	}
	if _, ok := mw[metrics.ConnSetup]; ok {
		t.Errorf("warm: a connection setup on a kept-alive connection: %v", mw)
	}
}

func ms(d time.Duration) float64 { return float64(d) / 1e6 }
