// Package wire defines the controller ⇄ worker protocol over ZeroMQ.
//
// Control runs on ROUTER (controller, binds) / DEALER (worker, dials), one
// JSON message per frame, every command acknowledged and every wait bounded:
//
//	worker → HELLO{worker, pid, version, clock}
//	ctrl   → SYNC{t1}            worker → SYNC_ACK{t1, t2, t3}, SyncRounds
//	                             times: the worker's clock offset (clock.go)
//	ctrl   → SHARD{shard}        worker builds its share of the plan from
//	                             the shard's profile and seed → READY
//	ctrl   → START{phase, t0}    worker → STARTED{phase}; t0 in the
//	                             worker's own clock (its offset applied)
//	worker → PHASE_DONE{phase}   (all but the last phase; the controller
//	                              starts the next phase when every worker is done)
//	...    HB both ways, every HeartbeatEvery
//	ctrl   → STOP (early end)    worker cancels in flight, skips later phases,
//	                             flushes, sends DONE
//	worker → DONE{records, last_seq}
//	ctrl   → BYE                 worker exits
//
// Records run on PUSH (worker, dials only the controller) / PULL
// (controller, binds) as JSON record.Batch messages with per-worker sequence
// numbers, so the controller can prove nothing was lost.
package wire

import (
	"os"
	"strconv"
	"time"

	"github.com/aiperf-action/aiperf-action/internal/config"
	"github.com/aiperf-action/aiperf-action/internal/record"
	"github.com/aiperf-action/aiperf-action/internal/schedule"
)

// Message types.
const (
	Hello     = "HELLO"
	Sync      = "SYNC"
	SyncAck   = "SYNC_ACK"
	Shard     = "SHARD"
	Ready     = "READY"
	Start     = "START"
	Started   = "STARTED"
	PhaseDone = "PHASE_DONE"
	Heartbeat = "HB"
	Stop      = "STOP"
	Done      = "DONE"
	Bye       = "BYE"
)

// Timing of the protocol. Every wait in controller and worker is bounded by
// one of these.
const (
	HeartbeatEvery   = 500 * time.Millisecond
	SilenceLimit     = 10 * time.Second // no message for this long: the peer is gone
	HandshakeLimit   = 30 * time.Second // HELLO, READY, STARTED
	DrainLimit       = 10 * time.Second // after STOP, for workers to finish and send DONE
	RecordsAfterDone = 3 * time.Second  // after DONE, with no batch arriving, the rest is lost
	StartLead        = 50 * time.Millisecond
	// JoinLimit bounds the wait for workers that join from other hosts
	// (controller.Options.Listen): they are started by hand or by a
	// scheduler, not by the controller.
	JoinLimit  = 10 * time.Minute
	BatchEvery = 20 * time.Millisecond
	BatchMax   = 64
)

// HandshakeFor is the handshake's limit for shard: HandshakeLimit, and a
// second more for every 5 MB of its --input-file, which each worker reads
// and indexes (tokens counted) before it is READY: a 1 GB file of English
// text took ~20 s to index on a 2-core machine with its other worker
// indexing beside it, so the limit stays well clear of it while a worker
// that truly hangs is still caught.
func HandshakeFor(shard *ShardSpec) time.Duration {
	if shard == nil || shard.Plan == nil || shard.Plan.Profile == nil || shard.Plan.Profile.InputFile == "" {
		return HandshakeLimit
	}
	path := shard.Plan.Profile.InputFile
	st, err := os.Stat(path)
	if err != nil {
		return HandshakeLimit
	}
	size := st.Size()
	if st.IsDir() { // (a folder of weka traces: its files together)
		size = 0
		ents, _ := os.ReadDir(path)
		for _, e := range ents {
			if fi, err := e.Info(); err == nil && !e.IsDir() {
				size += fi.Size()
			}
		}
	}
	return HandshakeLimit + time.Duration(size/(5<<20))*time.Second
}

// Control is one control message.
type Control struct {
	Type    string     `json:"type"`
	Worker  int        `json:"worker"`
	PID     int        `json:"pid,omitempty"`
	Version string     `json:"version,omitempty"`
	Clock   int64      `json:"clock,omitempty"` // sender's wall clock, unix ns
	Shard   *ShardSpec `json:"shard,omitempty"`
	Phase   int        `json:"phase,omitempty"`
	T0      int64      `json:"t0,omitempty"` // the phase's common start instant, unix ns
	Records uint64     `json:"records,omitempty"`
	GCPause int64      `json:"gc_pause_ns,omitempty"` // the worker's total GC pause, at DONE
	Stamps  *Stamps    `json:"stamps,omitempty"`      // how the worker's reads were stamped, at DONE
	LastSeq uint64     `json:"last_seq,omitempty"`
	Sent    uint64     `json:"sent,omitempty"` // requests sent so far (heartbeats): in flight = sent − recorded
	Error   string     `json:"error,omitempty"`
	// A clock sample's stamps (SYNC: t1; SYNC_ACK: t1 echoed, t2, t3),
	// unix ns.
	T1 int64 `json:"t1,omitempty"`
	T2 int64 `json:"t2,omitempty"`
	T3 int64 `json:"t3,omitempty"`
	// Recv is when the controller read the message (its clock), not sent.
	Recv int64 `json:"-"`
	// Token (HELLO) is the run's worker token, from a worker that joined
	// over the network; Of (HELLO) the number of workers it was told of.
	Token string `json:"token,omitempty"`
	Of    int    `json:"of,omitempty"`
}

// Stamps is how a worker's response reads were timed.
type Stamps struct {
	record.Stamps
	ReadDelay string `json:"read_delay_hdr,omitempty"` // HdrHistogram (V2, base64) of kernel receive → read return, µs
}

// Knobs are the AIPERF_ACTION_* environment settings that change how a
// worker sends and times. The controller's process reads them once
// (run.ReadKnobs) and every worker gets them in its shard, so a worker
// never reads its environment.
type Knobs struct {
	Client     string `json:"client,omitempty"`      // AIPERF_ACTION_CLIENT: ClientNetHTTP keeps every request on net/http
	Stamp      string `json:"stamp,omitempty"`       // AIPERF_ACTION_STAMP: StampRead stamps reads when they return
	CPUProfile string `json:"cpu_profile,omitempty"` // AIPERF_ACTION_WORKER_CPUPROFILE: each worker writes <prefix>-w<id>.prof
}

// Knob values.
const (
	ClientNetHTTP = "nethttp" // no epoll loop: for comparisons, and a way out should it misbehave
	StampRead     = "read"    // not the kernel's receive time: for comparisons
)

// ShardSpec is one worker's part of the plan and how to send it.
type ShardSpec struct {
	Knobs Knobs  `json:"knobs"`
	URL   string `json:"url"`
	// URLs, with several servers: request i goes to URLs[i mod n].
	URLs         []string    `json:"urls,omitempty"`
	Headers      [][2]string `json:"headers,omitempty"`
	APIKey       string      `json:"api_key,omitempty"`
	EndpointType string      `json:"endpoint_type"`
	// The template endpoint type's request template and response field.
	RequestTemplate string       `json:"request_template,omitempty"`
	PayloadTemplate string       `json:"payload_template,omitempty"`
	ResponseField   string       `json:"response_field,omitempty"`
	Streaming       bool         `json:"streaming"`
	TimeoutNs       int64        `json:"timeout_ns"`
	Phases          []PhaseShard `json:"phases"`
	// Plan is what the worker builds the plan from, to generate its share
	// of each phase's entries; nil in a hand-made shard, whose phases carry
	// their entries.
	Plan *PlanSpec `json:"plan,omitempty"`
}

// PlanSchema names PlanSpec's shape: its profile's JSON names
// (config.Profile's tags), not its Go names, are the protocol. A change
// that a worker of another build would read otherwise gets a new one.
const PlanSchema = "aiperf-action/plan/v1"

// PlanSpec is the profile and seed a plan is built from (schedule.Build),
// and the sha256 of the input file it read.
type PlanSpec struct {
	Schema      string          `json:"schema"` // PlanSchema
	Profile     *config.Profile `json:"profile"`
	Seed        uint64          `json:"seed"`
	InputDigest string          `json:"input_digest,omitempty"`
	Tokenizer   string          `json:"tokenizer,omitempty"` // the tokenizer's digest, which the worker's must match
}

// PhaseShard is one worker's part of one phase: the phase's parameters,
// and which of its entries are this worker's: those a round robin over
// Weights deals to worker Offset (schedule.Phase.Share), or, for a cycling
// pool, the whole pool. (A hand-made shard carries its entries instead.)
// Concurrency limits are split across workers; slot j of this worker is
// global slot j·Stride+Offset (for the concurrency ramp), and in a cycling
// pool its k-th request is global request k·Stride+Offset.
type PhaseShard struct {
	schedule.Phase
	Concurrency int   `json:"concurrency"`       // this worker's share of the ceiling; 0: none
	Prefill     int   `json:"prefill,omitempty"` // this worker's share of --prefill-concurrency; 0: none
	Stride      int   `json:"stride"`
	Offset      int   `json:"offset"`
	Count       int   `json:"count"`             // this worker's entries (a cycling pool's size)
	Total       int   `json:"total"`             // the phase's entries, every worker's together
	Weights     []int `json:"weights,omitempty"` // every worker's share of the phase's entries
}

// Identity is the ZMQ identity of worker id.
func Identity(id int) string { return "w" + strconv.Itoa(id) }
