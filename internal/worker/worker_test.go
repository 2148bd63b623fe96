package worker

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-zeromq/zmq4"

	"github.com/aiperf-action/aiperf-action/internal/record"
	"github.com/aiperf-action/aiperf-action/internal/schedule"
	"github.com/aiperf-action/aiperf-action/internal/wire"
)

// ctrl is a controller's two sockets, bound on loopback, driven by hand.
type ctrl struct {
	t      *testing.T
	router zmq4.Socket
	pull   zmq4.Socket
	msgs   chan wire.Control
	recs   chan record.Batch
	exited atomic.Int32 // the worker's Exit code, once it called it
}

func newCtrl(t *testing.T) (*ctrl, Options) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	c := &ctrl{t: t, router: zmq4.NewRouter(ctx, zmq4.WithID(zmq4.SocketIdentity("controller"))), pull: zmq4.NewPull(ctx),
		msgs: make(chan wire.Control, 64), recs: make(chan record.Batch, 256)}
	t.Cleanup(func() { cancel(); c.router.Close(); c.pull.Close() })
	if err := c.router.Listen("tcp://127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	if err := c.pull.Listen("tcp://127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	go func() {
		for {
			m, err := c.router.Recv()
			if err != nil {
				return
			}
			var cm wire.Control
			if json.Unmarshal(m.Frames[len(m.Frames)-1], &cm) == nil && cm.Type != wire.Heartbeat {
				c.msgs <- cm
			}
		}
	}()
	go func() {
		for {
			m, err := c.pull.Recv()
			if err != nil {
				return
			}
			for _, f := range m.Frames {
				var b record.Batch
				if json.Unmarshal(f, &b) == nil {
					c.recs <- b
				}
			}
		}
	}()
	return c, Options{ID: 3, Control: "tcp://" + c.router.Addr().String(), Records: "tcp://" + c.pull.Addr().String(),
		Version: "test", Stderr: io.Discard, Exit: func(code int) { c.exited.Store(int32(code)) }}
}

// run starts the worker; its error comes on the channel when Run returns.
func run(opt Options) <-chan error {
	errc := make(chan error, 1)
	go func() { errc <- Run(context.Background(), opt) }()
	return errc
}

// bye says BYE and checks that Run then returns cleanly, never having
// taken the fatal exit.
func (c *ctrl) bye(errc <-chan error) {
	c.t.Helper()
	c.send(wire.Control{Type: wire.Bye})
	select {
	case err := <-errc:
		if err != nil {
			c.t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		c.t.Fatal("Run did not return after BYE")
	}
	if code := c.exited.Load(); code != 0 {
		c.t.Fatalf("the worker took its fatal exit (%d)", code)
	}
}

func (c *ctrl) send(m wire.Control) {
	c.t.Helper()
	b, _ := json.Marshal(m)
	if err := c.router.Send(zmq4.NewMsgFrom([]byte(wire.Identity(3)), b)); err != nil {
		c.t.Fatal(err)
	}
}

func (c *ctrl) expect(typ string) wire.Control {
	c.t.Helper()
	select {
	case m := <-c.msgs:
		if m.Type != typ {
			c.t.Fatalf("got %s (%s), want %s", m.Type, m.Error, typ)
		}
		if m.Worker != 3 {
			c.t.Fatalf("%s from worker %d", typ, m.Worker)
		}
		return m
	case <-time.After(10 * time.Second):
		c.t.Fatalf("no %s", typ)
	}
	return wire.Control{}
}

// records drains record batches until want records came, checking their
// sequence numbers run on from 1 with no gap.
func (c *ctrl) records(want int) []record.Record {
	c.t.Helper()
	var out []record.Record
	deadline := time.After(10 * time.Second)
	for len(out) < want {
		select {
		case b := <-c.recs:
			if b.Worker != 3 {
				c.t.Fatalf("batch from worker %d", b.Worker)
			}
			if len(b.Records) > 0 && b.First != uint64(len(out)+1) {
				c.t.Fatalf("batch starts at %d after %d records", b.First, len(out))
			}
			for i, r := range b.Records {
				if r.Seq != b.First+uint64(i) {
					c.t.Fatalf("record seq %d in a batch from %d", r.Seq, b.First)
				}
			}
			out = append(out, b.Records...)
		case <-deadline:
			c.t.Fatalf("%d records of %d", len(out), want)
		}
	}
	return out
}

func chatServer(t *testing.T, delay time.Duration) *httptest.Server {
	quit := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-time.After(delay):
		case <-r.Context().Done():
			return
		case <-quit: // the test is over: Close waits for handlers
			return
		}
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"choices":[{"index":0,"message":{"role":"assistant","content":"a b"},"finish_reason":"stop"}]}`)
	}))
	t.Cleanup(srv.Close)
	t.Cleanup(func() { close(quit) }) // (runs first)
	return srv
}

func handMade(url string, phases ...[]schedule.Entry) *wire.ShardSpec {
	s := &wire.ShardSpec{URL: url, EndpointType: "chat", TimeoutNs: int64(30 * time.Second)}
	for _, es := range phases {
		s.Phases = append(s.Phases, wire.PhaseShard{Phase: schedule.Phase{Entries: es, GraceNs: int64(time.Second)}, Concurrency: 2, Stride: 1, Count: len(es), Total: len(es)})
	}
	return s
}

func entries(n int) []schedule.Entry {
	var es []schedule.Entry
	for i := range n {
		es = append(es, schedule.Entry{Index: i, Body: []byte(`{"messages":[{"role":"user","content":"q"}]}`)})
	}
	return es
}

// The whole protocol from the worker's side: HELLO with its version, READY
// after the shard, STARTED for each phase and PHASE_DONE between them,
// every record shipped in sequence, DONE counting them, and Run returns
// after BYE.
func TestWorkerProtocol(t *testing.T) {
	c, opt := newCtrl(t)
	srv := chatServer(t, 0)
	errc := run(opt)
	if h := c.expect(wire.Hello); h.Version != "test" || h.PID == 0 || h.Clock == 0 {
		t.Fatalf("hello %+v", h)
	}
	c.send(wire.Control{Type: wire.Shard, Shard: handMade(srv.URL, entries(5), entries(7))})
	c.expect(wire.Ready)
	c.send(wire.Control{Type: wire.Start, Phase: 0, T0: time.Now().UnixNano()})
	if m := c.expect(wire.Started); m.Phase != 0 {
		t.Fatalf("started phase %d", m.Phase)
	}
	c.expect(wire.PhaseDone)
	c.send(wire.Control{Type: wire.Start, Phase: 1, T0: time.Now().UnixNano()})
	if m := c.expect(wire.Started); m.Phase != 1 {
		t.Fatalf("started phase %d", m.Phase)
	}
	d := c.expect(wire.Done)
	recs := c.records(12)
	if d.Records != 12 || d.LastSeq != 12 || d.Stamps == nil {
		t.Fatalf("done %+v", d)
	}
	for _, r := range recs {
		if !r.OK() {
			t.Fatalf("record %+v", r)
		}
	}
	c.bye(errc)
}

// STOP mid-phase cancels what is in flight and skips the later phase:
// every request sent is still a record (cancelled ones counted as such),
// and DONE says how many.
func TestWorkerStop(t *testing.T) {
	c, opt := newCtrl(t)
	srv := chatServer(t, time.Hour) // never answers
	errc := run(opt)
	c.expect(wire.Hello)
	c.send(wire.Control{Type: wire.Shard, Shard: handMade(srv.URL, entries(50), entries(5))})
	c.expect(wire.Ready)
	c.send(wire.Control{Type: wire.Start, T0: time.Now().UnixNano()})
	c.expect(wire.Started)
	time.Sleep(100 * time.Millisecond) // two requests in flight (concurrency 2)
	c.send(wire.Control{Type: wire.Stop})
	d := c.expect(wire.Done)
	if d.Records == 0 || d.Records > 50 || d.Records != d.LastSeq {
		t.Fatalf("done %+v", d)
	}
	for _, r := range c.records(int(d.Records)) {
		if r.OK() {
			t.Fatalf("a request to a server that never answers succeeded: %+v", r)
		}
	}
	c.bye(errc)
}

// A shard this worker cannot run is refused in the handshake, before any
// request: no phases, an unknown endpoint type, another build's plan.
func TestWorkerRefusesShard(t *testing.T) {
	srv := chatServer(t, 0)
	for name, tc := range map[string]struct {
		shard *wire.ShardSpec
		want  string
	}{
		"empty":    {&wire.ShardSpec{URL: srv.URL, EndpointType: "chat"}, "empty shard"},
		"endpoint": {func() *wire.ShardSpec { s := handMade(srv.URL, entries(1)); s.EndpointType = "telepathy"; return s }(), "telepathy"},
		"schema": {func() *wire.ShardSpec {
			s := handMade(srv.URL, entries(1))
			s.Plan = &wire.PlanSpec{Schema: "aiperf-action/plan/v0"}
			return s
		}(), `"aiperf-action/plan/v0"`},
	} {
		t.Run(name, func(t *testing.T) {
			c, opt := newCtrl(t)
			errc := run(opt)
			c.expect(wire.Hello)
			c.send(wire.Control{Type: wire.Shard, Shard: tc.shard})
			select {
			case err := <-errc:
				if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "worker 3") {
					t.Fatalf("err %v, want %q", err, tc.want)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("Run did not return")
			}
			select {
			case m := <-c.msgs:
				t.Fatalf("sent %s after a refused shard", m.Type)
			default:
			}
		})
	}
}
