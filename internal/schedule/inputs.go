package schedule

import (
	"bufio"
	"encoding/json"
	"io"
)

// inputsFile is AIPerf's inputs.json shape.
type inputsFile struct {
	Data []inputSession `json:"data"`
}

type inputSession struct {
	SessionID string            `json:"session_id"`
	Phase     string            `json:"phase,omitempty"` // "warmup" for warmup sessions
	Payloads  []json.RawMessage `json:"payloads"`
}

// WriteInputsJSON writes inputs.json to w one session at a time, so a plan
// of a million requests is not rendered whole in memory. The bytes are
// json.MarshalIndent's of the whole file, indent two spaces.
func (pl *Plan) WriteInputsJSON(w io.Writer) error {
	n := 0
	for i := range pl.Phases {
		n += pl.Phases[i].Len()
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
	for k := range pl.Phases {
		ph := &pl.Phases[k]
		it := ph.Iter()
		for it.Next(true) {
			e := it.Entry()
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
		if err := it.Err(); err != nil {
			return err
		}
	}
	bw.WriteString("  ]\n}\n")
	return bw.Flush()
}
