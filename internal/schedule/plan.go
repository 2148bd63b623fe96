// Package schedule makes the plan: every request of a run, decided up front
// from the seed alone.
//
// The plan is the single source of truth for what is sent and when. It is
// built once by the controller and split into shards for the workers; no
// worker ever draws a random number. The same seed and flags give a
// byte-identical plan whatever the worker count and however the run goes,
// and its hash is the run's profile_hash.
//
// A plan has phases (an optional warmup, then profiling). A phase is a closed
// loop (each slot sends its next request when its last one ends) or an open
// loop (each request has an absolute due offset from the phase's start, from
// an arrival process or a fixed schedule, optionally capped by a concurrency
// ceiling). A duration-bound closed loop cannot know its request count up
// front: its entries are a pool reused in order, and everything else about
// request i (payload, cancellation) is still a pure function of (seed, i).
package schedule

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"sort"
	"strings"
	"time"

	"github.com/aiperf-action/aiperf-action/internal/config"
	"github.com/aiperf-action/aiperf-action/internal/dataset"
	"github.com/aiperf-action/aiperf-action/internal/endpoint"
	"github.com/aiperf-action/aiperf-action/internal/tokenizer"
)

// Entry is one planned request.
type Entry struct {
	Index         int             `json:"index"`
	SessionID     string          `json:"session_id"`
	DueNs         int64           `json:"due_ns"` // offset from the phase's start; 0 in a closed loop
	ISL           int             `json:"isl"`
	MaxTokens     int             `json:"max_tokens,omitempty"`
	CancelAfterNs int64           `json:"cancel_after_ns,omitempty"` // cancel this long after sending
	Body          json.RawMessage `json:"body"`
	// FreshAt−1 and FreshLen locate the prompt's first word in Body, in a
	// cycling pool of synthetic prompts (0: none); see Fresh.
	FreshAt  int `json:"fresh_at,omitempty"`
	FreshLen int `json:"fresh_len,omitempty"`
}

// Fresh is the body of the entry's use in cycle c of its pool: from the
// second cycle on, its first word, the o-th of the vocabulary, is replaced
// by the (o+c)-th, so that no request of the first VocabSize cycles resends
// an earlier one's prompt (and hits the server's prefix cache) while every
// length stays.
func (e Entry) Fresh(c int) json.RawMessage {
	if c == 0 || e.FreshAt == 0 || e.FreshAt-1+e.FreshLen > len(e.Body) {
		return e.Body
	}
	at := e.FreshAt - 1
	o, ok := tokenizer.Index(string(e.Body[at : at+e.FreshLen]))
	if !ok {
		return e.Body
	}
	w := tokenizer.Word(o + c)
	out := make([]byte, 0, len(e.Body)-e.FreshLen+len(w))
	out = append(append(append(out, e.Body[:at]...), w...), e.Body[at+e.FreshLen:]...)
	return out
}

// Phase names.
const (
	PhaseWarmup    = "warmup"
	PhaseProfiling = "profiling"
)

// Phase is one stage of the run.
type Phase struct {
	Name        string  `json:"name"`
	Open        bool    `json:"open"`         // send at DueNs; otherwise a closed loop
	Ceiling     int     `json:"ceiling"`      // in-flight limit across all workers; 0: none (open loop only)
	Rate        float64 `json:"rate"`         // requested rate, requests/s (open loop from a rate)
	ConcRampNs  int64   `json:"conc_ramp_ns"` // the ceiling rises linearly from 1 over this long
	DurationNs  int64   `json:"duration_ns"`  // stop sending after this long; 0: when entries run out
	GraceNs     int64   `json:"grace_ns"`     // then wait this long for in-flight requests, and cancel the rest
	Cycle       bool    `json:"cycle"`        // Entries are a pool, reused in order until DurationNs
	Seed        uint64  `json:"seed"`         // decides cancellations of pool requests
	CancelPct   float64 `json:"cancel_pct"`
	CancelDelay int64   `json:"cancel_delay_ns"`
	Entries     []Entry `json:"entries"`
}

// Warmup reports whether the phase is a warmup.
func (ph *Phase) Warmup() bool { return ph.Name == PhaseWarmup }

// Plan is the whole run.
type Plan struct {
	Seed   uint64  `json:"seed"`
	Phases []Phase `json:"phases"`
}

// Profiling is the measured phase (the last).
func (pl *Plan) Profiling() *Phase { return &pl.Phases[len(pl.Phases)-1] }

// Cancelled decides, as a pure function of (seed, i), whether request i is
// one of the pct percent that are cancelled.
func Cancelled(seed uint64, i int, pct float64) bool {
	if pct <= 0 {
		return false
	}
	r := rand.New(Source(seed, StreamCancellations, uint64(i)))
	return r.Float64()*100 < pct
}

// builder carries what every phase's entries need.
type builder struct {
	p     *config.Profile
	kind  endpoint.Kind
	extra map[string]json.RawMessage
}

// Build makes the plan for p with seed.
func Build(p *config.Profile, seed uint64) (*Plan, error) {
	extra, err := config.ParseExtraInputs(p.ExtraInputs)
	if err != nil {
		return nil, err
	}
	kind, err := endpoint.For(p.EndpointType)
	if err != nil {
		return nil, err
	}
	b := &builder{p: p, kind: kind, extra: extra}
	plan := &Plan{Seed: seed}
	if p.WarmupRequestCount > 0 || p.WarmupDuration > 0 {
		// Warmup draws from its own seed, so adding a warmup never changes
		// the profiling plan.
		w, err := b.warmup(Root(seed, StreamWarmup))
		if err != nil {
			return nil, err
		}
		plan.Phases = append(plan.Phases, *w)
	}
	prof, err := b.profiling(seed)
	if err != nil {
		return nil, err
	}
	plan.Phases = append(plan.Phases, *prof)
	return plan, nil
}

func seconds(s float64) int64 { return int64(math.Round(s * float64(time.Second))) }

func (b *builder) lengths() dataset.Lengths {
	p := b.p
	return dataset.Lengths{ISLMean: p.ISLMean, ISLStddev: p.ISLStddev, OSLMean: p.OSLMean, OSLStddev: p.OSLStddev}
}

func (b *builder) warmup(seed uint64) (*Phase, error) {
	p := b.p
	ph := &Phase{Name: PhaseWarmup, Seed: seed, GraceNs: seconds(p.GracePeriod), DurationNs: seconds(p.WarmupDuration)}
	rate := p.WarmupRequestRate
	if rate == 0 {
		rate = p.RequestRate
	}
	conc := p.WarmupConcurrency
	if conc == 0 {
		conc = p.Concurrency
	}
	ph.Ceiling = conc
	n := p.WarmupRequestCount
	var dues []float64
	if rate > 0 {
		ph.Open, ph.Rate = true, rate
		if p.WarmupConcurrency == 0 && !p.ConcurrencySet {
			ph.Ceiling = 0
		}
		dues = Dues(Poisson{}, seed, rate, n, p.WarmupDuration, 0)
		n = len(dues)
	} else if n == 0 {
		ph.Cycle, n = true, p.NumDatasetEntries
	}
	prompts := dataset.Synthetic(n, b.lengths(), Stream(seed, StreamLengths), Stream(PayloadSeed(seed, b.p.Repeat), StreamPayloads))
	return ph, b.fill(ph, prompts, dues, Stream(seed, StreamIDs), true)
}

func (b *builder) profiling(seed uint64) (*Phase, error) {
	p := b.p
	ph := &Phase{Name: PhaseProfiling, Seed: seed, Ceiling: p.Ceiling(), ConcRampNs: seconds(p.ConcurrencyRampDuration),
		DurationNs: seconds(p.BenchmarkDuration), GraceNs: seconds(p.GracePeriod),
		CancelPct: p.CancellationRate, CancelDelay: seconds(p.CancellationDelay)}
	lengths, words := Stream(seed, StreamLengths), Stream(PayloadSeed(seed, p.Repeat), StreamPayloads)
	var file []dataset.Line
	if p.InputFile != "" {
		var err error
		if file, err = dataset.FromFile(p.InputFile, words); err != nil {
			return nil, err
		}
	}
	// prompts returns n prompts: the file's, cycled, or synthetic ones.
	prompts := func(n int) []dataset.Prompt {
		if file == nil {
			return dataset.Synthetic(n, b.lengths(), lengths, words)
		}
		out := make([]dataset.Prompt, n)
		for i := range out {
			out[i] = file[i%len(file)].Prompt
		}
		return out
	}
	var dues []float64
	var pr []dataset.Prompt
	switch {
	case p.FixedSchedule:
		ph.Open = true
		sel, d, err := fixedSchedule(p, file)
		if err != nil {
			return nil, err
		}
		pr, dues = sel, d
	case p.RequestRate > 0:
		ph.Open, ph.Rate = true, p.RequestRate
		arr, err := NewArrival(p.ArrivalPattern, p.ArrivalSmoothness)
		if err != nil {
			return nil, err
		}
		n := p.RequestCount
		if p.BenchmarkDuration > 0 {
			n = 0
		}
		dues = Dues(arr, seed, p.RequestRate, n, p.BenchmarkDuration, p.RateRampDuration)
		pr = prompts(len(dues))
	case p.BenchmarkDuration > 0:
		ph.Cycle = true
		pr = prompts(p.NumDatasetEntries)
	default:
		pr = prompts(p.RequestCount)
	}
	if err := b.fill(ph, pr, dues, Stream(seed, StreamIDs), file == nil); err != nil {
		return nil, err
	}
	if len(ph.Entries) == 0 {
		return nil, fmt.Errorf("the profile plans no requests (check --benchmark-duration, --request-rate and the fixed-schedule offsets)")
	}
	return ph, nil
}

// fixedSchedule selects the file's timestamped lines inside the offsets and
// turns their timestamps into due offsets.
func fixedSchedule(p *config.Profile, file []dataset.Line) ([]dataset.Prompt, []float64, error) {
	type ts struct {
		t float64
		i int
	}
	var sel []ts
	for i, l := range file {
		if !l.HasTime {
			return nil, nil, fmt.Errorf("--fixed-schedule: %s line %d has no \"timestamp\"", p.InputFile, i+1)
		}
		if l.TimestampMs < float64(p.FixedScheduleStartOffset) {
			continue
		}
		if p.FixedScheduleEndOffset > 0 && l.TimestampMs > float64(p.FixedScheduleEndOffset) {
			continue
		}
		sel = append(sel, ts{l.TimestampMs, i})
	}
	sort.SliceStable(sel, func(a, b int) bool { return sel[a].t < sel[b].t })
	var base float64
	if p.FixedScheduleAutoOffset && len(sel) > 0 {
		base = sel[0].t
	}
	prompts := make([]dataset.Prompt, len(sel))
	dues := make([]float64, len(sel))
	for k, s := range sel {
		prompts[k] = file[s.i].Prompt
		dues[k] = (s.t - base) / 1000
	}
	return prompts, dues, nil
}

// fill builds the entries of ph from prompts and (open loop) due offsets.
//
// In a cycling pool of synthetic prompts, each entry says where its
// prompt's first word sits in the body (FreshAt, FreshLen), so that the
// worker can give every cycle after the first its own first word: a prompt
// sent again would otherwise be served from the server's prefix cache.
func (b *builder) fill(ph *Phase, prompts []dataset.Prompt, dues []float64, ids *rand.Rand, synthetic bool) error {
	ph.Entries = make([]Entry, len(prompts))
	for i, pr := range prompts {
		body, err := b.kind.Build(endpoint.Input{Model: b.p.Model, Prompt: pr.Text, MaxTokens: pr.MaxTokens, Stream: b.p.Streaming,
			Usage: b.p.UseServerTokenCount, Extra: b.extra})
		if err != nil {
			return fmt.Errorf("build request %d: %w", i, err)
		}
		e := Entry{Index: i, SessionID: uuid(ids), ISL: pr.ISL, MaxTokens: pr.MaxTokens, Body: body}
		if dues != nil {
			e.DueNs = seconds(dues[i])
		}
		if ph.Cycle && synthetic {
			first, _, _ := strings.Cut(pr.Text, " ")
			if _, word := tokenizer.Index(first); word {
				if at := bytes.Index(body, []byte(pr.Text)); at >= 0 {
					e.FreshAt, e.FreshLen = at+1, len(first)
				}
			}
		}
		if !ph.Cycle && Cancelled(ph.Seed, i, ph.CancelPct) {
			e.CancelAfterNs = ph.CancelDelay
		}
		ph.Entries[i] = e
	}
	return nil
}

// uuid draws a version-4-shaped UUID from r.
func uuid(r *rand.Rand) string {
	var b [16]byte
	for i := 0; i < 16; i += 8 {
		v := r.Uint64()
		for j := 0; j < 8; j++ {
			b[i+j] = byte(v >> (8 * j))
		}
	}
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	h := hex.EncodeToString(b[:])
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}

// inputsFile is AIPerf's inputs.json shape.
type inputsFile struct {
	Data []inputSession `json:"data"`
}

type inputSession struct {
	SessionID string            `json:"session_id"`
	Phase     string            `json:"phase,omitempty"` // "warmup" for warmup sessions
	Payloads  []json.RawMessage `json:"payloads"`
}

// InputsJSON renders every phase's payloads as AIPerf's inputs.json.
func (pl *Plan) InputsJSON() ([]byte, error) {
	var b bytes.Buffer
	err := pl.WriteInputsJSON(&b)
	return b.Bytes(), err
}

// WriteInputsJSON writes inputs.json to w one session at a time, so a plan
// of a million requests is not rendered whole in memory. The bytes are
// json.MarshalIndent's of the whole file, indent two spaces.
func (pl *Plan) WriteInputsJSON(w io.Writer) error {
	n := 0
	for _, ph := range pl.Phases {
		n += len(ph.Entries)
	}
	if n == 0 {
		b, err := json.MarshalIndent(inputsFile{}, "", "  ")
		if err != nil {
			return err
		}
		_, err = w.Write(append(b, '\n'))
		return err
	}
	bw := bufio.NewWriterSize(w, 256<<10)
	bw.WriteString("{\n  \"data\": [\n")
	i := 0
	for _, ph := range pl.Phases {
		for _, e := range ph.Entries {
			s := inputSession{SessionID: e.SessionID, Payloads: []json.RawMessage{e.Body}}
			if ph.Warmup() {
				s.Phase = PhaseWarmup
			}
			b, err := json.MarshalIndent(s, "    ", "  ")
			if err != nil {
				return err
			}
			bw.WriteString("    ")
			bw.Write(b)
			if i++; i < n {
				bw.WriteString(",\n")
			} else {
				bw.WriteString("\n")
			}
		}
	}
	bw.WriteString("  ]\n}\n")
	return bw.Flush()
}

// Hash is the profile_hash: sha256 over the model, endpoint shape and the
// whole plan (every phase's parameters and entries). What doesn't change the
// load (URL, headers, worker count, artifact folder) is left out, so a run
// against a new server build stays comparable with its baseline.
//
// A gate repeat (p.Repeat > 0) is hashed as the lone run's plan (repeat 0)
// marked "payloads per repeat": every repeat of a profile has one hash,
// whatever its own prompts, and it differs from the hash of runs that sent
// the same prompts each time (those were served from the server's cache).
func (pl *Plan) Hash(p *config.Profile) string {
	if p.Repeat != 0 {
		q := *p
		q.Repeat = 0
		if canon, err := Build(&q, pl.Seed); err == nil {
			pl = canon
		}
	}
	h := sha256.New()
	norm := struct {
		Model        string `json:"model"`
		EndpointType string `json:"endpoint_type"`
		Streaming    bool   `json:"streaming"`
		Payloads     string `json:"payloads,omitempty"`
	}{p.Model, p.EndpointType, p.Streaming, ""}
	if p.Repeat != 0 {
		norm.Payloads = "per-repeat"
	}
	enc := json.NewEncoder(h)
	enc.Encode(norm)
	enc.Encode(pl)
	return "sha256:" + hex.EncodeToString(h.Sum(nil))
}
