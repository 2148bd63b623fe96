// Package record defines the per-request record: what one request did, in
// monotonic nanoseconds from the run's common start instant.
//
// A record is data, never an error: a failed request has ErrKind set and is
// counted by kind. Records travel from workers to the controller in batches
// and end up, one per line, in records.jsonl.
package record

// Error kinds. HTTP failures use "http_<status>".
const (
	ErrConnRefused = "connection_refused"
	ErrConnReset   = "connection_reset"
	ErrTimeout     = "timeout"
	ErrCancelled   = "cancelled"
	ErrTransport   = "transport"
	ErrStreamCut   = "stream_truncated"
	ErrMalformed   = "malformed_response"
	ErrServer      = "server_error_in_stream"
	ErrEmpty       = "empty_response"
	// ErrNotStreamed is a whole answer to a request that asked for a stream:
	// it has no first token, so it must not pass for a fast stream.
	ErrNotStreamed = "not_streamed"
	// ErrBuild is a planned request the client could not put on the wire
	// (a form body it could not make): never sent.
	ErrBuild = "request_build"
)

// Record is one request's timeline and outcome. All times are nanoseconds
// since its phase's common start instant (t0), read from the worker's
// monotonic clock.
type Record struct {
	Worker    int    `json:"worker"`
	Seq       uint64 `json:"seq"` // per-worker sequence number, from 1
	Index     int    `json:"index"`
	SessionID string `json:"session_id"`
	Turn      int    `json:"turn,omitempty"` // a multi-turn session's turn, from 0
	Warmup    bool   `json:"warmup,omitempty"`
	SlotWait  bool   `json:"slot_wait,omitempty"` // due, but waited for a free concurrency slot

	Due         int64   `json:"due_ns"`                    // when the plan wanted it sent
	Sent        int64   `json:"sent_ns"`                   // when the request was handed to the connection pool (TTFT counts from here, as every peer's does)
	Connected   int64   `json:"connected_ns,omitempty"`    // it had a connection: at once if kept alive, after the dial if new
	NewConn     bool    `json:"new_conn,omitempty"`        // that connection was dialled for it
	Written     int64   `json:"written_ns,omitempty"`      // it went onto the socket (the event loop: as its write began; net/http: its write returned, no later than the first byte)
	FirstByte   int64   `json:"first_byte_ns,omitempty"`   // response headers arrived
	FirstToken  int64   `json:"first_token_ns,omitempty"`  // the first token of any kind, reasoning too
	FirstOutput int64   `json:"first_output_ns,omitempty"` // the first answer token, after any reasoning (when they differ)
	Chunks      []int64 `json:"chunks_ns,omitempty"`       // arrival of every chunk with content
	End         int64   `json:"end_ns"`

	Streaming bool `json:"streaming"`
	ISL       int  `json:"isl"` // the client's count (the plan's prompt length)
	OSL       int  `json:"osl"` // the client's count of the text received, reasoning included
	// ReasoningTokens is the client's count of the reasoning text
	// (reasoning_content or reasoning), part of OSL.
	ReasoningTokens int `json:"reasoning_tokens,omitempty"`
	// Reasoning is the reasoning text, kept to be counted later with
	// Output (OSLPending); never written.
	Reasoning string `json:"-"`
	// Output is the text received, kept only when the client is asked to
	// (a multi-turn session threads it into the next turn); not written.
	Output string `json:"-"`
	// OSLPending: OSL is still to be counted from Output (client.CountOSL).
	OSLPending bool   `json:"-"`
	MaxTokens  int    `json:"max_tokens,omitempty"`
	ServerISL  int    `json:"server_isl,omitempty"` // from the server's usage, when it sent one
	ServerOSL  int    `json:"server_osl,omitempty"`
	Items      int    `json:"items,omitempty"`        // a non-token answer's items (vectors, ranked passages, images)
	Retried    bool   `json:"conn_retried,omitempty"` // resent once on a fresh connection after the server closed a kept-alive one
	Status     int    `json:"status,omitempty"`
	ErrKind    string `json:"error_kind,omitempty"`
	ErrMsg     string `json:"error,omitempty"`
	// CancelCause says who cancelled a cancelled request: "planned"
	// (--request-cancellation-rate), "grace" (still running when the
	// grace period after --benchmark-duration ran out), "stop" (Ctrl-C,
	// or the run was stopped) or "unsent" (planned, but never sent: still
	// waiting for a concurrency slot when --benchmark-duration ended, or
	// the run stopped first).
	CancelCause string `json:"cancel_cause,omitempty"`
}

// Cancel causes.
const (
	CancelPlanned = "planned"
	CancelGrace   = "grace"
	CancelStop    = "stop"
	CancelUnsent  = "unsent"
)

// OK reports whether the request succeeded.
func (r *Record) OK() bool { return r.ErrKind == "" }

// Batch is what a worker sends over the records socket: consecutive records
// with sequence numbers First..First+len(Records)-1.
type Batch struct {
	Worker  int      `json:"worker"`
	First   uint64   `json:"first"`
	Records []Record `json:"records"`
	// Sent is how many requests the worker had sent when it shipped the
	// batch: should it die, those without a record were in flight.
	Sent uint64 `json:"sent,omitempty"`
	// Token is the run's worker token, from a worker that joined over the
	// network: the controller takes no records without it.
	Token string `json:"token,omitempty"`
}
