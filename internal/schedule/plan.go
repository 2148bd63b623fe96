// Package schedule makes the plan: every request of a run, decided up front
// from the seed alone.
//
// The plan is the single source of truth for what is sent. It is built once
// by the controller and split into shards for the workers; no worker ever
// draws a random number. The same seed and flags give a byte-identical plan
// whatever the worker count, and its hash is the run's profile_hash.
package schedule

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math/rand/v2"

	"github.com/aiperf-action/aiperf-action/internal/config"
	"github.com/aiperf-action/aiperf-action/internal/dataset"
	"github.com/aiperf-action/aiperf-action/internal/endpoint"
)

// Seed streams: one root seed derives an independent stream per purpose.
const (
	StreamLengths = iota + 1
	StreamPayloads
	StreamArrivals
	StreamCancellations
	StreamIDs
)

// Stream returns the seeded generator for one purpose.
func Stream(seed uint64, stream uint64) *rand.Rand {
	return rand.New(rand.NewPCG(seed, 0x9e3779b97f4a7c15*stream))
}

// Entry is one planned request.
type Entry struct {
	Index     int             `json:"index"`
	SessionID string          `json:"session_id"`
	DueNs     int64           `json:"due_ns"` // offset from the run's start; 0 in a closed loop
	ISL       int             `json:"isl"`
	MaxTokens int             `json:"max_tokens,omitempty"`
	Body      json.RawMessage `json:"body"`
}

// Plan is the whole run's requests, in index order.
type Plan struct {
	Seed    uint64
	Entries []Entry
}

// Build makes the plan for p with seed.
func Build(p *config.Profile, seed uint64) (*Plan, error) {
	extra, err := config.ParseExtraInputs(p.ExtraInputs)
	if err != nil {
		return nil, err
	}
	b, err := endpoint.For(p.EndpointType)
	if err != nil {
		return nil, err
	}
	prompts := dataset.Synthetic(p.RequestCount, dataset.Lengths{
		ISLMean: p.ISLMean, ISLStddev: p.ISLStddev,
		OSLMean: p.OSLMean, OSLStddev: p.OSLStddev,
	}, Stream(seed, StreamLengths), Stream(seed, StreamPayloads))
	ids := Stream(seed, StreamIDs)
	plan := &Plan{Seed: seed, Entries: make([]Entry, len(prompts))}
	for i, pr := range prompts {
		body, err := b.Build(endpoint.Input{Model: p.Model, Prompt: pr.Text, MaxTokens: pr.MaxTokens, Stream: p.Streaming, Extra: extra})
		if err != nil {
			return nil, fmt.Errorf("build request %d: %w", i, err)
		}
		plan.Entries[i] = Entry{Index: i, SessionID: uuid(ids), ISL: pr.ISL, MaxTokens: pr.MaxTokens, Body: body}
	}
	return plan, nil
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
	Payloads  []json.RawMessage `json:"payloads"`
}

// InputsJSON renders the plan's payloads as AIPerf's inputs.json.
func (pl *Plan) InputsJSON() ([]byte, error) {
	f := inputsFile{Data: make([]inputSession, len(pl.Entries))}
	for i, e := range pl.Entries {
		f.Data[i] = inputSession{SessionID: e.SessionID, Payloads: []json.RawMessage{e.Body}}
	}
	b, err := json.MarshalIndent(f, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}

// Hash is the profile_hash: sha256 over the load-shaping settings and every
// planned entry. Settings that don't change the load (URL, headers, worker
// count, artifact folder) are left out, so a run against a new server build
// stays comparable with its baseline.
func (pl *Plan) Hash(p *config.Profile) string {
	h := sha256.New()
	norm := struct {
		Model        string  `json:"model"`
		EndpointType string  `json:"endpoint_type"`
		Streaming    bool    `json:"streaming"`
		Concurrency  int     `json:"concurrency"`
		RequestCount int     `json:"request_count"`
		ISLMean      int     `json:"isl_mean"`
		ISLStddev    float64 `json:"isl_stddev"`
		OSLMean      int     `json:"osl_mean"`
		OSLStddev    float64 `json:"osl_stddev"`
		Seed         uint64  `json:"seed"`
	}{p.Model, p.EndpointType, p.Streaming, p.Concurrency, p.RequestCount, p.ISLMean, p.ISLStddev, p.OSLMean, p.OSLStddev, pl.Seed}
	b, _ := json.Marshal(norm)
	h.Write(b)
	for _, e := range pl.Entries {
		eb, _ := json.Marshal(e)
		h.Write(eb)
		h.Write([]byte{'\n'})
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil))
}
