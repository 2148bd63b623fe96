// Package controller runs a plan across worker processes.
//
// It binds its ZeroMQ sockets before spawning anything, re-executes the same
// binary as `worker` processes, hands each its shard and one common start
// instant, then drains records in a single goroutine. It never trusts
// silence: sequence gaps, short DONE counts, dead or mute workers are all
// reported by worker and count, and every wait has a deadline.
package controller

import (
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/go-zeromq/zmq4"

	"github.com/aiperf-action/aiperf-action/internal/proc"
	"github.com/aiperf-action/aiperf-action/internal/record"
	"github.com/aiperf-action/aiperf-action/internal/wire"
)

// RoleEnv is set in every worker's environment. Test binaries, which re-exec
// themselves as workers, look for it in TestMain.
const RoleEnv = "AIPERF_ACTION_ROLE"

// Options configure a controller run.
type Options struct {
	Exe      string // binary to run as workers; os.Executable() when empty
	Version  string // tool version, checked against each worker's HELLO
	Stderr   io.Writer
	OnRecord func(*record.Record)          // called from one goroutine, in arrival order
	OnStart  func(phase int, t0 time.Time) // each phase's common start instant
	OnSpawn  func(id, pid int)             // each worker process as it starts
	// WorkerArgs, when set, are extra arguments for worker id's command
	// line (the tests give a worker a skewed clock).
	WorkerArgs func(id int) []string
	// Listen (host:port), when set, binds the control socket there and the
	// records socket on the next port (port 0: a free pair), and starts no
	// worker: each joins from wherever it runs (`aiperf-action worker
	// --join tcp://host:port --index i --of N`, the token in TokenEnv) and
	// must present Token. OnListen hears the address to join.
	Listen   string
	Token    string
	OnListen func(addr string)
}

// Outcome describes how the workers did.
type Outcome struct {
	T0       []time.Time // start instant of each phase that started
	Stopped  bool        // STOP was sent (Ctrl-C or a failure)
	Problems []string    // integrity problems, by worker
	Workers  []Worker    // one per worker process started, by id
	// LostInFlight counts the requests that workers which died had sent
	// and never recorded (from their latest batch or heartbeat).
	LostInFlight int
}

// Worker is what the controller learnt of one worker process.
type Worker struct {
	ID, PID int
	Records uint64 // records received
	// From the OS once the process exited (Exited): CPU seconds (user +
	// system) and wall seconds from spawn to exit.
	Exited      bool
	CPUSeconds  float64
	WallSeconds float64
	MaxRSSBytes int64         // peak resident memory, from the OS (0: not known)
	GCPause     time.Duration // the worker's total GC pause, from its DONE
	Stamps      *wire.Stamps  // how its reads were stamped, from its DONE
	// Clock is its clock against the controller's, measured before its
	// shard; its START instants were sent in its own clock.
	Clock *wire.ClockOffset
}

type peer struct {
	id       int
	cmd      *exec.Cmd
	pid      int
	hello    bool
	ready    bool
	started  int // phases started (STARTED received)
	phase    int // phases finished (PHASE_DONE received, or all of them at DONE)
	done     bool
	doneRecs uint64
	doneSeq  uint64
	nextSeq  uint64
	received uint64
	lastSeen time.Time
	doneAt   time.Time // when DONE arrived
	lastRecs time.Time // when the latest batch arrived
	spawned  time.Time
	gcPause  time.Duration
	stamps   *wire.Stamps
	exited   bool
	exitErr  error
	finished bool   // DONE matched by records, or given up on
	sent     uint64 // requests it had sent, as of its latest batch or heartbeat
	remote   bool   // joined from elsewhere: no process of ours (cmd nil)
	syncT1   int64  // the outstanding SYNC's t1
	samples  []wire.SyncSample
	clock    *wire.ClockOffset
}

type exitEvent struct {
	id    int
	err   error
	state *os.ProcessState
	at    time.Time
}

// Run spawns len(shards) workers and runs them to completion.
// It returns an error when a worker failed or records were lost; the
// Outcome is filled either way, and records already delivered were passed
// to OnRecord.
func Run(ctx context.Context, opt Options, shards []*wire.ShardSpec) (*Outcome, error) {
	if opt.Stderr == nil {
		opt.Stderr = os.Stderr
	}
	exe := opt.Exe
	if exe == "" {
		var err error
		if exe, err = os.Executable(); err != nil {
			return nil, fmt.Errorf("find own binary to start workers: %w", err)
		}
	}
	sockCtx, closeSocks := context.WithCancel(context.Background())
	defer closeSocks()
	var router, pull zmq4.Socket
	if opt.Listen == "" {
		router = zmq4.NewRouter(sockCtx, zmq4.WithID(zmq4.SocketIdentity("controller")))
		pull = zmq4.NewPull(sockCtx)
		if err := router.Listen("tcp://127.0.0.1:0"); err != nil {
			router.Close()
			pull.Close()
			return nil, fmt.Errorf("bind control socket: %w", err)
		}
		if err := pull.Listen("tcp://127.0.0.1:0"); err != nil {
			router.Close()
			pull.Close()
			return nil, fmt.Errorf("bind records socket: %w", err)
		}
	} else {
		if opt.Token == "" {
			return nil, errors.New("workers that join from other hosts need a token")
		}
		var err error
		if router, pull, err = bindPair(sockCtx, opt.Listen); err != nil {
			return nil, err
		}
	}
	defer router.Close()
	defer pull.Close()
	ctrlAddr := "tcp://" + router.Addr().String()
	recAddr := "tcp://" + pull.Addr().String()
	if opt.OnListen != nil && opt.Listen != "" {
		opt.OnListen(ctrlAddr)
	}

	out := &Outcome{}
	ctrlCh := make(chan wire.Control, 256)
	batchCh := make(chan []byte, 8192)
	var readers sync.WaitGroup
	readers.Add(2)
	go func() { defer readers.Done(); readControl(sockCtx, router, ctrlCh) }()
	go func() { defer readers.Done(); readRecords(sockCtx, pull, batchCh) }()
	defer func() { closeSocks(); router.Close(); pull.Close(); readers.Wait() }()

	exits := make(chan exitEvent, len(shards))
	peers := make([]*peer, len(shards))
	var logMu sync.Mutex
	for i := range shards {
		if opt.Listen != "" { // (a worker that joins: its process is not ours)
			peers[i] = &peer{id: i, remote: true, lastSeen: time.Now(), nextSeq: 1, spawned: time.Now()}
			out.Workers = append(out.Workers, Worker{ID: i})
			continue
		}
		logs := &lineWriter{mu: &logMu, dst: opt.Stderr, prefix: []byte("[worker " + strconv.Itoa(i) + "] ")}
		args := []string{"worker", "--id", strconv.Itoa(i), "--control", ctrlAddr, "--records", recAddr}
		if opt.WorkerArgs != nil {
			args = append(args, opt.WorkerArgs(i)...)
		}
		cmd := exec.Command(exe, args...)
		cmd.Env = append(os.Environ(), RoleEnv+"=worker")
		cmd.Stdout = logs
		cmd.Stderr = logs
		proc.Child(cmd)
		if err := cmd.Start(); err != nil {
			killAll(peers)
			return out, fmt.Errorf("start worker %d: %w", i, err)
		}
		p := &peer{id: i, cmd: cmd, pid: cmd.Process.Pid, lastSeen: time.Now(), nextSeq: 1, spawned: time.Now()}
		peers[i] = p
		out.Workers = append(out.Workers, Worker{ID: i, PID: p.pid})
		if opt.OnSpawn != nil {
			opt.OnSpawn(i, p.pid)
		}
		go func() {
			err := cmd.Wait() // returns after the output copiers finish
			logs.flush()
			exits <- exitEvent{i, err, cmd.ProcessState, time.Now()}
		}()
	}
	defer killAll(peers)

	r := &run{opt: opt, router: router, peers: peers, out: out, ctrlCh: ctrlCh, batchCh: batchCh, exits: exits}
	err := r.loop(ctx, shards)
	r.reap()
	for _, p := range peers {
		out.Workers[p.id].Records = p.received
	}
	return out, err
}

type run struct {
	opt     Options
	router  zmq4.Socket
	sendMu  sync.Mutex
	peers   []*peer
	out     *Outcome
	ctrlCh  chan wire.Control
	batchCh chan []byte
	exits   chan exitEvent
	failure []string
}

func (r *run) send(id int, m wire.Control) {
	b, _ := json.Marshal(&m)
	r.sendMu.Lock()
	defer r.sendMu.Unlock()
	// A ROUTER send to a gone peer returns nil: liveness is checked separately.
	_ = r.router.Send(zmq4.NewMsgFrom([]byte(wire.Identity(id)), b))
}

func (r *run) broadcast(m wire.Control, pred func(*peer) bool) {
	for _, p := range r.peers {
		if !p.exited && pred(p) {
			r.send(p.id, m)
		}
	}
}

// phase is the stage of the run the loop is in.
type phase int

const (
	phaseHello phase = iota
	phaseSync
	phaseReady
	phaseStarted
	phaseRunning
)

// startPhase sends START for phase k with a common start instant just
// ahead, to each worker in its own clock.
func (r *run) startPhase(k int) {
	t0 := time.Now().Add(wire.StartLead)
	r.out.T0 = append(r.out.T0, t0)
	if r.opt.OnStart != nil {
		r.opt.OnStart(k, t0)
	}
	for _, p := range r.peers {
		if p.exited || p.done {
			continue
		}
		at := t0.UnixNano()
		if p.clock != nil {
			at += p.clock.OffsetNs
		}
		r.send(p.id, wire.Control{Type: wire.Start, Phase: k, T0: at})
	}
}

// sync sends p its next clock sample's SYNC.
func (r *run) sync(p *peer) {
	p.syncT1 = time.Now().UnixNano()
	r.send(p.id, wire.Control{Type: wire.Sync, T1: p.syncT1})
}

func (r *run) loop(ctx context.Context, shards []*wire.ShardSpec) error {
	phases := len(shards[0].Phases)
	ph := phaseHello
	limit := wire.HandshakeFor(shards[0])
	if r.opt.Listen != "" {
		limit += wire.JoinLimit
	}
	deadline := time.Now().Add(limit)
	hb := time.NewTicker(wire.HeartbeatEvery)
	defer hb.Stop()
	var stopDeadline time.Time
	ctxDone := ctx.Done()
	stop := func(reason string) {
		if r.out.Stopped {
			return
		}
		r.out.Stopped = true
		if reason != "" {
			r.failure = append(r.failure, reason)
		}
		r.broadcast(wire.Control{Type: wire.Stop}, func(p *peer) bool { return !p.done })
		stopDeadline = time.Now().Add(wire.DrainLimit)
	}
	for {
		if r.allFinished() {
			break
		}
		now := time.Now()
		if ph < phaseRunning && now.After(deadline) {
			stop(fmt.Sprintf("workers did not finish the handshake within %s: %s", limit, r.describeHandshake(ph)))
			return r.err()
		}
		if r.out.Stopped && !stopDeadline.IsZero() && now.After(stopDeadline) {
			for _, p := range r.peers {
				if !p.finished {
					r.problem(p, "did not finish within %s of STOP", wire.DrainLimit)
					p.finished = true
				}
			}
			break
		}
		select {
		case <-ctxDone:
			ctxDone = nil
			if ph < phaseRunning {
				stop("")
				return errors.New("interrupted before the run started")
			}
			stop("")
		case m := <-r.ctrlCh:
			p := r.peer(m.Worker)
			if p == nil {
				continue
			}
			p.lastSeen = time.Now()
			p.sent = max(p.sent, m.Sent)
			switch m.Type {
			case wire.Hello:
				if p.remote {
					if p.hello || subtle.ConstantTimeCompare([]byte(m.Token), []byte(r.opt.Token)) != 1 {
						fmt.Fprintf(r.opt.Stderr, "aiperf-action: ignored a HELLO as worker %d: %s\n", p.id, map[bool]string{true: "that worker has joined", false: "wrong token"}[p.hello])
						continue
					}
					if m.Of != len(r.peers) {
						stop(fmt.Sprintf("worker %d joined as one of %d; this run has %d (--of)", p.id, m.Of, len(r.peers)))
						return r.err()
					}
					p.pid = m.PID
					r.out.Workers[p.id].PID = m.PID
				}
				if m.Version != r.opt.Version {
					stop(fmt.Sprintf("worker %d runs version %q, controller %q", p.id, m.Version, r.opt.Version))
					return r.err()
				}
				p.hello = true
			case wire.SyncAck:
				if m.T1 != p.syncT1 || p.clock != nil {
					continue // (not the outstanding sample's answer)
				}
				p.samples = append(p.samples, wire.SyncSample{T1: m.T1, T2: m.T2, T3: m.T3, T4: m.Recv})
				if len(p.samples) < wire.SyncRounds {
					r.sync(p)
					continue
				}
				c, err := wire.EstimateOffset(p.samples)
				if err != nil {
					stop(fmt.Sprintf("worker %d (pid %d): its clock: %v", p.id, p.pid, err))
					return r.err()
				}
				p.clock = &c
				r.out.Workers[p.id].Clock = &c
			case wire.Ready:
				p.ready = true
			case wire.Started:
				p.started = max(p.started, m.Phase+1)
			case wire.PhaseDone:
				p.phase = max(p.phase, m.Phase+1)
			case wire.Done:
				p.done, p.doneRecs, p.doneSeq = true, m.Records, m.LastSeq
				p.gcPause = time.Duration(m.GCPause)
				p.stamps = m.Stamps
				p.doneAt = time.Now()
			}
		case b := <-r.batchCh:
			r.batch(b)
		case ev := <-r.exits:
			p := r.peers[ev.id]
			p.exited, p.exitErr = true, ev.err
			r.usage(ev)
			if !p.done {
				lost := p.sent - min(p.sent, p.received)
				reason := fmt.Sprintf("worker %d (pid %d) exited before finishing: %v; %d records received, %d requests it had sent lost in flight",
					p.id, p.pid, exitText(ev.err), p.received, lost)
				r.problem(p, "exited early (%s) with %d requests in flight lost (sent %d, recorded %d)", exitText(ev.err), lost, p.sent, p.received)
				r.out.LostInFlight += int(lost)
				p.finished = true
				stop(reason)
			}
		case <-hb.C:
			r.broadcast(wire.Control{Type: wire.Heartbeat}, func(p *peer) bool { return !p.finished })
			for _, p := range r.peers {
				// (A worker that joins is silent until its HELLO: the join's
				// deadline waits for it.)
				if !p.finished && !p.done && !p.exited && (!p.remote || p.hello) && time.Since(p.lastSeen) > wire.SilenceLimit {
					r.problem(p, "silent for %s", wire.SilenceLimit)
					p.finished = true
					if !p.remote {
						_ = p.cmd.Process.Kill()
						stop(fmt.Sprintf("worker %d (pid %d) stopped answering", p.id, p.pid))
						continue
					}
					// Its process is not ours to watch: its requests in flight
					// are lost with it, counted as a dead local worker's are.
					lost := p.sent - min(p.sent, p.received)
					r.out.LostInFlight += int(lost)
					p.exited = true
					stop(fmt.Sprintf("worker %d (pid %d on its host) stopped answering: %d records received, %d requests it had sent lost in flight", p.id, p.pid, p.received, lost))
				}
			}
		}
		// Advance the handshake.
		switch {
		case ph == phaseHello && r.all(func(p *peer) bool { return p.hello }):
			for _, p := range r.peers {
				r.sync(p)
			}
			ph = phaseSync
		case ph == phaseSync && r.all(func(p *peer) bool { return p.clock != nil }):
			for i, s := range shards {
				r.send(i, wire.Control{Type: wire.Shard, Shard: s})
			}
			ph = phaseReady
		case ph == phaseReady && r.all(func(p *peer) bool { return p.ready }):
			r.startPhase(0)
			ph = phaseStarted
		case ph == phaseStarted && r.all(func(p *peer) bool { return p.started > 0 }):
			ph = phaseRunning
		case ph == phaseRunning && !r.out.Stopped && len(r.out.T0) < phases &&
			r.all(func(p *peer) bool { return p.done || p.phase >= len(r.out.T0) }):
			// Every worker finished the phase: start the next one together.
			r.startPhase(len(r.out.T0))
		}
		r.checkFinished()
	}
	return r.err()
}

// checkFinished marks workers whose DONE count has fully arrived, and says BYE.
func (r *run) checkFinished() {
	for _, p := range r.peers {
		if p.finished || !p.done {
			continue
		}
		if p.received >= p.doneRecs {
			if p.received != p.doneRecs || p.nextSeq-1 != p.doneSeq {
				r.problem(p, "DONE says %d records (last seq %d), received %d (last seq %d)", p.doneRecs, p.doneSeq, p.received, p.nextSeq-1)
			}
			p.finished = true
			r.send(p.id, wire.Control{Type: wire.Bye})
		} else if quiet := time.Since(later(p.doneAt, p.lastRecs)); quiet > wire.RecordsAfterDone {
			r.problem(p, "DONE says %d records, only %d arrived (none for %s after DONE)", p.doneRecs, p.received, wire.RecordsAfterDone)
			p.finished = true
			r.send(p.id, wire.Control{Type: wire.Bye})
		}
	}
}

func (r *run) batch(b []byte) {
	var bt record.Batch
	if err := json.Unmarshal(b, &bt); err != nil {
		r.failure = append(r.failure, fmt.Sprintf("undecodable record batch (%d bytes): %v", len(b), err))
		return
	}
	p := r.peer(bt.Worker)
	if p == nil {
		r.failure = append(r.failure, fmt.Sprintf("records from unknown worker %d", bt.Worker))
		return
	}
	if p.remote && subtle.ConstantTimeCompare([]byte(bt.Token), []byte(r.opt.Token)) != 1 {
		r.failure = append(r.failure, fmt.Sprintf("refused %d records claiming worker %d without the run's token", len(bt.Records), bt.Worker))
		return
	}
	p.lastSeen = time.Now()
	p.lastRecs = p.lastSeen
	p.sent = max(p.sent, bt.Sent)
	if bt.First != p.nextSeq {
		r.problem(p, "sequence gap: expected %d, got %d", p.nextSeq, bt.First)
	}
	for i := range bt.Records {
		rec := &bt.Records[i]
		if r.opt.OnRecord != nil {
			r.opt.OnRecord(rec)
		}
	}
	p.received += uint64(len(bt.Records))
	p.nextSeq = bt.First + uint64(len(bt.Records))
}

func (r *run) peer(id int) *peer {
	if id < 0 || id >= len(r.peers) {
		return nil
	}
	return r.peers[id]
}

func (r *run) all(f func(*peer) bool) bool {
	for _, p := range r.peers {
		if !f(p) {
			return false
		}
	}
	return true
}

func (r *run) allFinished() bool { return r.all(func(p *peer) bool { return p.finished }) }

func (r *run) problem(p *peer, format string, a ...any) {
	r.out.Problems = append(r.out.Problems, fmt.Sprintf("worker %d: ", p.id)+fmt.Sprintf(format, a...))
}

func (r *run) describeHandshake(ph phase) string {
	var missing []string
	for _, p := range r.peers {
		switch {
		case !p.hello:
			missing = append(missing, fmt.Sprintf("worker %d sent no HELLO", p.id))
		case ph == phaseSync && p.clock == nil:
			missing = append(missing, fmt.Sprintf("worker %d answered %d of %d clock samples", p.id, len(p.samples), wire.SyncRounds))
		case ph >= phaseReady && !p.ready:
			missing = append(missing, fmt.Sprintf("worker %d sent no READY", p.id))
		case ph >= phaseStarted && p.started == 0:
			missing = append(missing, fmt.Sprintf("worker %d sent no STARTED", p.id))
		}
	}
	return strings.Join(missing, "; ")
}

func (r *run) err() error {
	var parts []string
	parts = append(parts, r.failure...)
	if len(r.out.Problems) > 0 && len(r.failure) == 0 {
		parts = append(parts, "records were lost: "+strings.Join(r.out.Problems, "; "))
	}
	if len(parts) == 0 {
		return nil
	}
	return errors.New(strings.Join(parts, "; "))
}
