package schedule

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"

	"github.com/aiperf-action/aiperf-action/internal/config"
)

// Hash is the profile_hash: sha256 over the model, endpoint shape and the
// whole plan (every phase's parameters and entries). What doesn't change the
// load (URL, headers, worker count, artifact folder) is left out, so a run
// against a new server build stays comparable with its baseline.
//
// A gate repeat (p.Repeat > 0), or a run with its own payload seed (each
// gate job's, p.PayloadSeed), is hashed as the lone run's plan (repeat 0)
// marked "payloads per repeat": every repeat of a profile in every job has
// one hash, whatever its own prompts, and it differs from the hash of runs
// that sent the same prompts each time (those were served from the
// server's cache).
func (pl *Plan) Hash(p *config.Profile) string {
	perRun := p.Repeat != 0 || p.PayloadSeed != 0
	if perRun {
		q := *p
		q.Repeat, q.PayloadSeed = 0, 0
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
		Tokenizer    string `json:"tokenizer"`
	}{p.Model, p.EndpointType, p.Streaming, "", ""}
	if pl.Tokenizer != nil {
		norm.Tokenizer = pl.Tokenizer.Digest()
	}
	if perRun {
		norm.Payloads = "per-repeat"
	}
	enc := json.NewEncoder(h)
	enc.Encode(norm)
	if err := pl.writeJSON(h); err != nil {
		// (Build made the first entry of every phase; a later one failing
		// is not a plan.)
		return "sha256:unhashable: " + err.Error()
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil))
}

// writeJSON writes the plan, entries and all, as json.Encoder's Encode
// would write the Plan struct with every phase's Entries filled in (the
// bytes every profile_hash so far was made of), one entry at a time.
func (pl *Plan) writeJSON(w io.Writer) error {
	head, _ := json.Marshal(&Plan{Seed: pl.Seed, Phases: []Phase{}})
	w.Write(head[:len(head)-2]) // {"seed":…,"phases":[
	for k := range pl.Phases {
		if k > 0 {
			w.Write([]byte{','})
		}
		ph := pl.Phases[k]
		ph.Entries = []Entry{}
		b, err := json.Marshal(&ph)
		if err != nil {
			return err
		}
		w.Write(b[:len(b)-2]) // {…,"entries":[
		it := pl.Phases[k].Iter()
		for n := 0; it.Next(true); n++ {
			if n > 0 {
				w.Write([]byte{','})
			}
			b, err := json.Marshal(it.Entry())
			if err != nil {
				return err
			}
			w.Write(b)
		}
		if err := it.Err(); err != nil {
			return err
		}
		w.Write([]byte("]}"))
	}
	_, err := w.Write([]byte("]}\n"))
	return err
}
