package controller

import (
	"context"
	"encoding/json"
	"flag"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-zeromq/zmq4"

	"github.com/aiperf-action/aiperf-action/internal/record"
	"github.com/aiperf-action/aiperf-action/internal/schedule"
	"github.com/aiperf-action/aiperf-action/internal/wire"
)

const modeEnv = "AIPERF_FAKE_WORKER_MODE"

// skewEnv gives the fake worker a clock this many ns ahead of the
// controller's (a host whose clock disagrees).
const skewEnv = "AIPERF_FAKE_WORKER_SKEW_NS"

// TestMain turns this test binary into a fake worker when the controller
// starts it. The fake speaks the protocol but misbehaves as told, so the
// controller's integrity checks can be tested.
func TestMain(m *testing.M) {
	if os.Getenv(RoleEnv) == "worker" {
		fakeWorker(os.Getenv(modeEnv))
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func fakeWorker(mode string) {
	fs := flag.NewFlagSet("worker", flag.ExitOnError)
	id := fs.Int("id", 0, "")
	ctrl := fs.String("control", "", "")
	recs := fs.String("records", "", "")
	fs.Parse(os.Args[2:])
	ctx := context.Background()
	d := zmq4.NewDealer(ctx, zmq4.WithID(zmq4.SocketIdentity(wire.Identity(*id))), zmq4.WithDialerMaxRetries(-1), zmq4.WithDialerRetry(20*time.Millisecond))
	p := zmq4.NewPush(ctx, zmq4.WithDialerMaxRetries(-1), zmq4.WithDialerRetry(20*time.Millisecond))
	d.Dial(*ctrl)
	p.Dial(*recs)
	token := os.Getenv(TokenEnv)
	of, _ := strconv.Atoi(os.Getenv("AIPERF_FAKE_WORKER_OF"))
	send := func(m wire.Control) {
		m.Worker, m.Token, m.Of = *id, token, of
		b, _ := json.Marshal(m)
		d.Send(zmq4.NewMsg(b))
	}
	skew, _ := strconv.ParseInt(os.Getenv(skewEnv), 10, 64)
	now := func() int64 { return time.Now().UnixNano() + skew }
	recv := func(typ string) *wire.Control {
		for {
			msg, err := d.Recv()
			t2 := now()
			if err != nil {
				os.Exit(4)
			}
			var m wire.Control
			json.Unmarshal(msg.Frames[len(msg.Frames)-1], &m)
			if m.Type == wire.Sync {
				send(wire.Control{Type: wire.SyncAck, T1: m.T1, T2: t2, T3: now()})
				continue
			}
			if m.Type == typ {
				return &m
			}
		}
	}
	send(wire.Control{Type: wire.Hello, Version: "test", PID: os.Getpid()})
	shard := recv(wire.Shard).Shard
	send(wire.Control{Type: wire.Ready})
	start := recv(wire.Start)
	// How far ahead of now, by this worker's clock, its start instant lies:
	// reported as its records' Due, for the clock test.
	lead := start.T0 - now()
	send(wire.Control{Type: wire.Started})
	entries := shard.Phases[0].Entries
	n := len(entries)
	if mode == "die" && *id == 1 {
		// Sends all 5 of its requests, records 2, and dies with 3 in flight.
		send(wire.Control{Type: wire.Heartbeat, Sent: 5})
		b, _ := json.Marshal(record.Batch{Worker: *id, First: 1, Sent: 5, Records: []record.Record{{Worker: *id, Seq: 1, Index: entries[0].Index}, {Worker: *id, Seq: 2, Index: entries[1].Index}}})
		p.Send(zmq4.NewMsg(b))
		time.Sleep(200 * time.Millisecond)
		os.Exit(3)
	}
	var seq uint64
	for i := 0; i < n; i++ {
		seq++
		if mode == "gap" && seq == 2 {
			continue // lose record 2
		}
		b, _ := json.Marshal(record.Batch{Worker: *id, First: seq, Token: token, Records: []record.Record{{Worker: *id, Seq: seq, Index: entries[i].Index, Due: lead}}})
		p.Send(zmq4.NewMsg(b))
	}
	claimed := seq
	if mode == "short" {
		claimed = seq + 3 // claim records that were never sent
	}
	send(wire.Control{Type: wire.Done, Records: claimed, LastSeq: seq})
	recv(wire.Bye)
	time.Sleep(50 * time.Millisecond)
}

func shards(n, per int) []*wire.ShardSpec {
	out := make([]*wire.ShardSpec, n)
	for i := range out {
		ph := wire.PhaseShard{Concurrency: 1}
		for j := 0; j < per; j++ {
			ph.Entries = append(ph.Entries, schedule.Entry{Index: i*per + j})
		}
		out[i] = &wire.ShardSpec{Phases: []wire.PhaseShard{ph}}
	}
	return out
}

func runFake(t *testing.T, mode string) (*Outcome, int, error) {
	t.Setenv(modeEnv, mode)
	got := 0
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out, err := Run(ctx, Options{Version: "test", OnRecord: func(*record.Record) { got++ }}, shards(2, 5))
	return out, got, err
}

func TestIntegrityClean(t *testing.T) {
	out, got, err := runFake(t, "ok")
	if err != nil || got != 10 || len(out.Problems) != 0 || out.Workers[0].Records != 5 || out.Workers[1].Records != 5 {
		t.Fatalf("err %v, got %d, outcome %+v", err, got, out)
	}
}

func TestIntegritySequenceGap(t *testing.T) {
	out, got, err := runFake(t, "gap")
	if err == nil || got != 8 {
		t.Fatalf("err %v, got %d", err, got)
	}
	joined := strings.Join(out.Problems, "\n")
	for _, want := range []string{"worker 0: sequence gap: expected 2, got 3", "worker 1: sequence gap"} {
		if !strings.Contains(joined, want) {
			t.Errorf("problems %q lack %q", joined, want)
		}
	}
}

func TestIntegrityShortDone(t *testing.T) {
	start := time.Now()
	out, _, err := runFake(t, "short")
	if err == nil || !strings.Contains(strings.Join(out.Problems, "\n"), "DONE says 8 records, only 5 arrived (none for") {
		t.Fatalf("err %v, problems %q", err, out.Problems)
	}
	if d := time.Since(start); d > wire.RecordsAfterDone+10*time.Second {
		t.Errorf("took %s", d)
	}
}

func TestVersionMismatch(t *testing.T) {
	t.Setenv(modeEnv, "ok")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, err := Run(ctx, Options{Version: "other"}, shards(1, 1))
	if err == nil || !strings.Contains(err.Error(), `runs version "test"`) {
		t.Fatalf("err %v", err)
	}
}

// A worker that dies is named, and the requests it had sent but never
// recorded are counted as lost in flight, by number.
func TestWorkerDeathCountsInFlight(t *testing.T) {
	out, got, err := runFake(t, "die")
	if err == nil || !strings.Contains(err.Error(), "3 requests it had sent lost in flight") || !strings.Contains(err.Error(), "worker 1") {
		t.Fatalf("error %v", err)
	}
	if out.LostInFlight != 3 || got < 2 {
		t.Fatalf("lost in flight %d, records %d", out.LostInFlight, got)
	}
}

// Workers whose clocks are 1 s ahead of the controller's, or 1 s behind:
// each one's offset is measured within its stated uncertainty (half the
// least of 8 round trips), and its start instant reaches it in its own
// clock, the controller's StartLead ahead, as for a worker on the
// controller's clock; without the offset it would be 1 s early or late.
func TestClockOffsets(t *testing.T) {
	for _, skew := range []time.Duration{time.Second, -time.Second, 0} {
		t.Setenv(modeEnv, "ok")
		t.Setenv(skewEnv, strconv.FormatInt(int64(skew), 10))
		var leads []int64
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		out, err := Run(ctx, Options{Version: "test", OnRecord: func(r *record.Record) { leads = append(leads, r.Due) }}, shards(2, 3))
		cancel()
		if err != nil {
			t.Fatal(err)
		}
		for _, w := range out.Workers {
			c := w.Clock
			if c == nil || c.Samples != wire.SyncRounds || c.UncertaintyNs <= 0 || c.UncertaintyNs > int64(50*time.Millisecond) {
				t.Fatalf("skew %s, worker %d: clock %+v", skew, w.ID, c)
			}
			if d := c.OffsetNs - int64(skew); d > c.UncertaintyNs || -d > c.UncertaintyNs {
				t.Errorf("skew %s, worker %d: offset %d ns ± %d, %d ns from the truth", skew, w.ID, c.OffsetNs, c.UncertaintyNs, d)
			}
			t.Logf("skew %s, worker %d: offset %+.3f ms ± %.3f ms (least round trip %.3f ms)", skew, w.ID, float64(c.OffsetNs-int64(skew))/1e6, float64(c.UncertaintyNs)/1e6, float64(c.RTTNs)/1e6)
		}
		if len(leads) != 6 {
			t.Fatalf("%d records", len(leads))
		}
		for _, l := range leads {
			if l <= 0 || l > int64(wire.StartLead) {
				t.Errorf("skew %s: a worker's start instant was %.1f ms ahead by its own clock, want 0 to %s", skew, float64(l)/1e6, wire.StartLead)
			}
		}
	}
}

// Workers that join by address (Listen): a HELLO without the run's token
// is ignored and said so, and the run waits for the worker with it; with
// every token right, the run completes as a spawned one does.
func TestJoinNeedsTheToken(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv(modeEnv, "ok")
	t.Setenv("AIPERF_FAKE_WORKER_OF", "2")
	for _, tokens := range [][2]string{{"wrong", "right"}, {"right", "right"}} {
		var cmds []*exec.Cmd
		var log strings.Builder
		got := 0
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		out, err := Run(ctx, Options{Version: "test", Listen: "127.0.0.1:0", Token: "right", Stderr: &log, OnRecord: func(*record.Record) { got++ },
			OnListen: func(addr string) {
				ctrl, recs, err := JoinAddrs(addr)
				if err != nil {
					t.Error(err)
					return
				}
				for i, tok := range tokens {
					c := exec.Command(self, "worker", "--id", strconv.Itoa(i), "--control", ctrl, "--records", recs)
					c.Env = append(os.Environ(), RoleEnv+"=worker", TokenEnv+"="+tok)
					if err := c.Start(); err != nil {
						t.Error(err)
					}
					cmds = append(cmds, c)
				}
			}}, shards(2, 5))
		cancel()
		for _, c := range cmds {
			c.Process.Kill()
			c.Wait()
		}
		if tokens[0] == "wrong" {
			if err == nil || !strings.Contains(log.String(), "ignored a HELLO as worker 0: wrong token") || got != 0 {
				t.Errorf("a wrong token: err %v, %d records, log %q", err, got, log.String())
			}
			continue
		}
		if err != nil || got != 10 || out.Workers[0].PID == 0 {
			t.Errorf("right tokens: err %v, %d records, %+v", err, got, out.Workers)
		}
	}
	if _, _, err := JoinAddrs("tcp://host:65535"); err == nil {
		t.Error("port 65535 taken: its records port would be 65536")
	}
}
