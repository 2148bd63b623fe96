// Package worker is the load-generating worker process.
//
// A worker dials the controller, receives its shard of the plan and a common
// start instant, and sends every request itself, timing it on its own
// monotonic clock. Records go into a local buffer on the hot path; one sender
// goroutine ships them in batches. Any failed send to the controller is fatal:
// the worker exits at once rather than drop records silently (ZMQ.md).
package worker

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"runtime"
	"runtime/pprof"
	"sync"
	"sync/atomic"
	"time"

	hdr "github.com/HdrHistogram/hdrhistogram-go"
	"github.com/go-zeromq/zmq4"

	"github.com/aiperf-action/aiperf-action/internal/client"
	"github.com/aiperf-action/aiperf-action/internal/endpoint"
	"github.com/aiperf-action/aiperf-action/internal/record"
	"github.com/aiperf-action/aiperf-action/internal/schedule"
	"github.com/aiperf-action/aiperf-action/internal/tokenizer"
	"github.com/aiperf-action/aiperf-action/internal/wire"
)

// Options configure a worker.
type Options struct {
	ID      int
	Control string // controller ROUTER endpoint, tcp://host:port
	Records string // controller PULL endpoint
	Version string
	Stderr  io.Writer
	Exit    func(code int) // called on a fatal protocol failure; os.Exit by default
	// ClockSkew is added to every reading of this worker's wall clock that
	// the protocol sees (its clock samples, and the phases' start instants
	// it is given): a host whose clock is that far ahead, for the tests of
	// the clock offsets. 0 on a real host.
	ClockSkew time.Duration
	// Token and Of, for a worker that joined from another host: the run's
	// worker token (in its HELLO and every record batch) and how many
	// workers the run has (checked by the controller).
	Token string
	Of    int
}

type worker struct {
	opt     Options
	dealer  zmq4.Socket
	push    zmq4.Socket
	sendMu  sync.Mutex
	inbox   chan wire.Control
	stop    chan struct{} // closed on STOP
	seen    atomic.Int64  // unix ns of the last message from the controller
	closing atomic.Bool   // set once Run is returning: socket errors are expected

	recMu    sync.Mutex
	pending  []record.Record
	seq      uint64
	flushMu  sync.Mutex // one flush at a time; guards shipped
	shipped  uint64
	sent     atomic.Uint64 // requests handed to the client
	reported uint64        // the sent count last shipped (guarded by flushMu)

	wg sync.WaitGroup // every goroutine Run starts

	sources []*schedule.Phase    // where each phase's entries come from
	tok     *tokenizer.Tokenizer // the plan's: it counts the responses
}

// Run runs one worker until its shard is done or the controller says stop:
// the handshake, then the transport, then the phases. It returns once
// every goroutine it started has ended.
func Run(ctx context.Context, opt Options) error {
	if opt.Stderr == nil {
		opt.Stderr = os.Stderr
	}
	if opt.Exit == nil {
		opt.Exit = os.Exit
	}
	w := &worker{opt: opt, inbox: make(chan wire.Control, 16), stop: make(chan struct{})}
	defer w.wg.Wait() // last: after the sockets closed, readControl ends too
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	w.dealer = zmq4.NewDealer(ctx, zmq4.WithID(zmq4.SocketIdentity(wire.Identity(opt.ID))),
		zmq4.WithDialerRetry(50*time.Millisecond), zmq4.WithDialerMaxRetries(-1))
	defer w.dealer.Close()
	w.push = zmq4.NewPush(ctx, zmq4.WithDialerRetry(50*time.Millisecond), zmq4.WithDialerMaxRetries(-1))
	defer w.push.Close()
	if err := w.dealer.Dial(opt.Control); err != nil {
		return fmt.Errorf("worker %d: dial control %s: %w", opt.ID, opt.Control, err)
	}
	if err := w.push.Dial(opt.Records); err != nil {
		return fmt.Errorf("worker %d: dial records %s: %w", opt.ID, opt.Records, err)
	}
	w.seen.Store(time.Now().UnixNano())
	defer w.closing.Store(true) // runs before the sockets close
	w.goRun(w.readControl)

	shard, kind, err := w.handshake()
	if err != nil {
		return err
	}
	if prefix := shard.Knobs.CPUProfile; prefix != "" {
		if f, err := os.Create(fmt.Sprintf("%s-w%d.prof", prefix, opt.ID)); err == nil {
			pprof.StartCPUProfile(f)
			defer func() { pprof.StopCPUProfile(); f.Close() }()
		}
	}
	tr := newTransport(shard)
	defer tr.close()
	return w.phases(ctx, shard, kind, tr)
}

// goRun runs f on a goroutine that Run waits for.
func (w *worker) goRun(f func()) {
	w.wg.Add(1)
	go func() { defer w.wg.Done(); f() }()
}

// handshake says HELLO, takes the shard and says READY.
func (w *worker) handshake() (*wire.ShardSpec, endpoint.Kind, error) {
	w.send(wire.Control{Type: wire.Hello, PID: os.Getpid(), Version: w.opt.Version, Clock: time.Now().UnixNano(), Token: w.opt.Token, Of: w.opt.Of})
	m, err := w.await(wire.Shard, wire.HandshakeLimit)
	if err != nil {
		return nil, nil, err
	}
	shard := m.Shard
	if shard == nil || len(shard.Phases) == 0 {
		return nil, nil, fmt.Errorf("worker %d: empty shard", w.opt.ID)
	}
	kind, err := endpoint.Make(shard.EndpointType, shard.RequestTemplate, shard.PayloadTemplate, shard.ResponseField)
	if err != nil {
		return nil, nil, fmt.Errorf("worker %d: %w", w.opt.ID, err)
	}
	if w.sources, w.tok, err = sources(shard); err != nil {
		return nil, nil, fmt.Errorf("worker %d: %w", w.opt.ID, err)
	}
	w.send(wire.Control{Type: wire.Ready})
	return shard, kind, nil
}

// sources are the phases the worker takes its entries from: those of the
// plan it builds from the shard's plan spec, checked against the
// controller's, or a hand-made shard's own; and the plan's tokenizer,
// which counts the responses.
func sources(shard *wire.ShardSpec) ([]*schedule.Phase, *tokenizer.Tokenizer, error) {
	out := make([]*schedule.Phase, len(shard.Phases))
	if shard.Plan == nil {
		for k := range shard.Phases {
			out[k] = &shard.Phases[k].Phase
		}
		return out, tokenizer.Builtin(), nil
	}
	if shard.Plan.Schema != wire.PlanSchema || shard.Plan.Profile == nil {
		return nil, nil, fmt.Errorf("the controller's plan is %q, this worker reads %q (a worker of another build?)", shard.Plan.Schema, wire.PlanSchema)
	}
	pl, err := schedule.Build(shard.Plan.Profile, shard.Plan.Seed)
	if err != nil {
		return nil, nil, fmt.Errorf("build the plan: %w", err)
	}
	if pl.InputDigest != shard.Plan.InputDigest {
		return nil, nil, fmt.Errorf("--input-file %s changed since the controller read it", shard.Plan.Profile.InputFile)
	}
	if d := pl.Tokenizer.Digest(); d != shard.Plan.Tokenizer {
		return nil, nil, fmt.Errorf("--tokenizer %s is %s here, %s in the controller", shard.Plan.Profile.Tokenizer, d, shard.Plan.Tokenizer)
	}
	if len(pl.Phases) != len(shard.Phases) {
		return nil, nil, fmt.Errorf("the plan has %d phases here, %d in the controller's", len(pl.Phases), len(shard.Phases))
	}
	for k := range pl.Phases {
		mine, _ := json.Marshal(&pl.Phases[k])
		theirs, _ := json.Marshal(&shard.Phases[k].Phase)
		if !bytes.Equal(mine, theirs) || pl.Phases[k].Len() != shard.Phases[k].Total {
			return nil, nil, fmt.Errorf("phase %d differs from the controller's: %s with %d entries against %s with %d",
				k, mine, pl.Phases[k].Len(), theirs, shard.Phases[k].Total)
		}
		out[k] = &pl.Phases[k]
	}
	return out, pl.Tokenizer, nil
}

// transport is how the worker's requests travel: net/http's pool, and the
// epoll loop that reads streamed plain-HTTP responses (Linux), unless the
// shard's knobs keep every request on net/http.
type transport struct {
	http *http.Transport
	loop *client.Loop
}

func newTransport(shard *wire.ShardSpec) *transport {
	client.UseKernelStamps(shard.Knobs.Stamp != wire.StampRead)
	maxConc := 1
	for _, ph := range shard.Phases {
		maxConc = max(maxConc, ph.Concurrency)
	}
	tr := &transport{http: client.NewTransport(maxConc)}
	if shard.Knobs.Client != wire.ClientNetHTTP {
		if l, err := client.NewLoop(); err == nil {
			tr.loop = l
		}
	}
	return tr
}

// stamps is how the transport's reads were stamped; it closes the loop.
func (tr *transport) stamps(viaHTTP, viaHTTPKernel uint64) *wire.Stamps {
	st := &wire.Stamps{Stamps: record.Stamps{NetHTTP: viaHTTP, NetHTTPKernel: viaHTTPKernel}}
	if tr.loop != nil {
		tr.loop.Close()
		rs := tr.loop.ReadStats()
		st.Add(rs.Stamps)
		if rs.KernelReads > 0 {
			b, _ := rs.Delay.Encode(hdr.V2CompressedEncodingCookieBase)
			st.ReadDelay = string(b)
		}
	}
	return st
}

func (tr *transport) close() {
	if tr.loop != nil {
		tr.loop.Close()
	}
	tr.http.CloseIdleConnections()
}

// phases runs each phase at the controller's START, then says DONE with
// the worker's counts and waits for BYE.
func (w *worker) phases(ctx context.Context, shard *wire.ShardSpec, kind endpoint.Kind, tr *transport) error {
	runCtx, stopRun := context.WithCancel(ctx)
	defer stopRun()
	w.goRun(func() {
		select {
		case <-w.stop:
			stopRun()
		case <-runCtx.Done():
		}
	})
	senderCtx, stopSender := context.WithCancel(ctx)
	senderDone := make(chan struct{})
	w.goRun(func() { w.sender(senderCtx, senderDone) })
	heartbeats := false
	var viaHTTP, viaHTTPKernel uint64
	for k := range shard.Phases {
		// The first START follows the handshake at once; later ones wait for
		// every worker to finish the phase before (liveness is watched by
		// the heartbeat).
		limit := wire.HandshakeFor(shard) // (the others may still be indexing an input file)
		if k > 0 {
			limit = 24 * time.Hour
		}
		m, err := w.awaitOrStop(wire.Start, limit)
		if err != nil {
			stopSender()
			<-senderDone
			return err
		}
		if m == nil {
			break // STOP before this phase
		}
		// The phase's common start instant, carried on this process's monotonic clock.
		start := time.Now().Add(time.Until(time.Unix(0, m.T0).Add(-w.opt.ClockSkew)))
		w.send(wire.Control{Type: wire.Started, Phase: k})
		if !heartbeats {
			w.goRun(func() { w.heartbeat(ctx) })
			heartbeats = true
		}
		c := &client.Client{
			HTTP:      &http.Client{Transport: tr.http},
			URL:       shard.URL,
			URLs:      shard.URLs,
			Headers:   shard.Headers,
			APIKey:    shard.APIKey,
			Kind:      kind,
			Streaming: shard.Streaming,
			Timeout:   time.Duration(shard.TimeoutNs),
			Clock:     func() int64 { return int64(time.Since(start)) },
			Loop:      tr.loop,
			Tok:       w.tok,
			// A multi-turn session threads each answer into its next turn;
			// otherwise the output is counted by the sender, off the slots.
			KeepOutput: shard.Phases[k].Sessions && !shard.Phases[k].Standalone,
			CountLater: true,
		}
		w.runPhase(runCtx, c, &shard.Phases[k], w.sources[k], start)
		all, kernel := c.NetHTTPRequests()
		viaHTTP, viaHTTPKernel = viaHTTP+all, viaHTTPKernel+kernel
		if k < len(shard.Phases)-1 && runCtx.Err() == nil {
			w.flush()
			w.send(wire.Control{Type: wire.PhaseDone, Phase: k})
		}
	}
	stopSender()
	<-senderDone
	w.flush()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	stamps := tr.stamps(viaHTTP, viaHTTPKernel)
	w.send(wire.Control{Type: wire.Done, Records: w.shipped, LastSeq: w.seq, GCPause: int64(ms.PauseTotalNs), Stamps: stamps})
	_, err := w.await(wire.Bye, wire.DrainLimit)
	return err
}

// awaitOrStop waits for typ like await, but returns nil when STOP comes first.
func (w *worker) awaitOrStop(typ string, limit time.Duration) (*wire.Control, error) {
	return w.awaitMsg(typ, limit, w.stop)
}

// awaitMsg waits for typ until limit, or returns nil when stop closes.
func (w *worker) awaitMsg(typ string, limit time.Duration, stop <-chan struct{}) (*wire.Control, error) {
	t := time.NewTimer(limit)
	defer t.Stop()
	for {
		select {
		case m := <-w.inbox:
			if m.Type == typ {
				return &m, nil
			}
		case <-stop:
			return nil, nil
		case <-t.C:
			return nil, fmt.Errorf("worker %d: no %s from the controller within %s", w.opt.ID, typ, limit)
		}
	}
}

// words is the plan's vocabulary (the builtin tokenizer's for a hand-made
// shard).
func (w *worker) words() *tokenizer.Vocab {
	if w.tok == nil {
		return tokenizer.Builtin().Words()
	}
	return w.tok.Words()
}

// add appends a finished record to the outgoing buffer.
func (w *worker) add(r record.Record) {
	w.recMu.Lock()
	w.seq++
	r.Seq = w.seq
	w.pending = append(w.pending, r)
	w.recMu.Unlock()
}

func (w *worker) sender(ctx context.Context, done chan<- struct{}) {
	defer close(done)
	t := time.NewTicker(wire.BatchEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			w.flush()
		}
	}
}

// flush ships everything pending, BatchMax records per message. The
// sender's ticker and a phase's end both flush: flushMu keeps two flushes
// from interleaving, so batches leave in sequence order (two at once sent
// a later batch first, which the controller rightly called a gap).
func (w *worker) flush() {
	w.flushMu.Lock()
	defer w.flushMu.Unlock()
	w.recMu.Lock()
	recs := w.pending
	w.pending = nil
	w.recMu.Unlock()
	for i := range recs {
		client.CountOSL(&recs[i], w.tok)
	}
	if sent := w.sent.Load(); len(recs) == 0 && sent != w.reported {
		// No records, but requests went out: say so, so that the
		// controller knows what was in flight should this process die.
		b := record.Batch{Worker: w.opt.ID, First: w.shipped + 1, Sent: sent, Token: w.opt.Token}
		payload, _ := json.Marshal(&b)
		if err := w.push.Send(zmq4.NewMsg(payload)); err != nil {
			w.fatal(fmt.Errorf("send records: %w", err))
		}
		w.reported = sent
	}
	for len(recs) > 0 {
		n := min(len(recs), wire.BatchMax)
		b := record.Batch{Worker: w.opt.ID, First: recs[0].Seq, Records: recs[:n], Sent: w.sent.Load(), Token: w.opt.Token}
		w.reported = b.Sent
		payload, err := json.Marshal(&b)
		if err != nil {
			w.fatal(fmt.Errorf("encode records: %w", err))
		}
		if err := w.push.Send(zmq4.NewMsg(payload)); err != nil {
			w.fatal(fmt.Errorf("send records: %w", err))
		}
		w.shipped += uint64(n)
		recs = recs[n:]
	}
}

func (w *worker) send(m wire.Control) {
	m.Worker = w.opt.ID
	b, _ := json.Marshal(&m)
	w.sendMu.Lock()
	err := w.dealer.Send(zmq4.NewMsg(b))
	w.sendMu.Unlock()
	if err != nil {
		w.fatal(fmt.Errorf("send %s: %w", m.Type, err))
	}
}

// readControl moves control messages to the inbox; STOP is acted on here so
// that it is never stuck behind other work.
func (w *worker) readControl() {
	var stopped bool
	for {
		msg, err := w.dealer.Recv()
		if err != nil {
			if w.closing.Load() || errors.Is(err, context.Canceled) {
				return
			}
			w.fatal(fmt.Errorf("control channel: %w", err))
		}
		if len(msg.Frames) == 0 {
			continue
		}
		recv := time.Now()
		w.seen.Store(recv.UnixNano())
		var m wire.Control
		if err := json.Unmarshal(msg.Frames[len(msg.Frames)-1], &m); err != nil {
			w.fatal(fmt.Errorf("bad control message: %w", err))
		}
		switch m.Type {
		case wire.Heartbeat:
			continue
		case wire.Bye:
			// The controller closes its sockets once every worker has its
			// BYE: an EOF after it is the end, not a failure (a worker that
			// joined from another host is not waited for as a child is).
			w.closing.Store(true)
		case wire.Sync: // answered here, at once: its stamps bound the offset
			skew := int64(w.opt.ClockSkew)
			w.send(wire.Control{Type: wire.SyncAck, T1: m.T1, T2: recv.UnixNano() + skew, T3: time.Now().UnixNano() + skew})
			continue
		case wire.Stop:
			if !stopped {
				stopped = true
				close(w.stop)
			}
			continue
		}
		select {
		case w.inbox <- m:
		default:
			w.fatal(fmt.Errorf("control inbox full at %s", m.Type))
		}
	}
}

// await waits for one message type, bounded by limit; STOP doesn't end it.
func (w *worker) await(typ string, limit time.Duration) (wire.Control, error) {
	m, err := w.awaitMsg(typ, limit, nil)
	if err != nil {
		return wire.Control{}, err
	}
	return *m, nil
}

// heartbeat tells the controller this worker is alive and exits the process
// when the controller has been silent too long.
func (w *worker) heartbeat(ctx context.Context) {
	t := time.NewTicker(wire.HeartbeatEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if time.Since(time.Unix(0, w.seen.Load())) > wire.SilenceLimit {
				w.fatal(fmt.Errorf("controller silent for %s", wire.SilenceLimit))
			}
			w.send(wire.Control{Type: wire.Heartbeat, Sent: w.sent.Load()})
		}
	}
}

func (w *worker) fatal(err error) {
	if w.closing.Load() {
		return
	}
	fmt.Fprintf(w.opt.Stderr, "aiperf-action worker %d: fatal: %v\n", w.opt.ID, err)
	w.opt.Exit(3)
}
