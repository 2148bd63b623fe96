package dataset

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sort"
	"time"
)

// SageMakerDataCapture is AIPerf's sagemaker_data_capture: the JSONL that
// an Amazon SageMaker real-time endpoint's data capture writes, one
// invocation a line ({"captureData": {"endpointInput": {"data",
// "encoding"}, "endpointOutput": …}, "eventMetadata": {"eventId",
// "inferenceTime"}}), replayed on its inference times.
const SageMakerDataCapture = "sagemaker_data_capture"

// capture is what a data capture line holds that a replay uses.
type capture struct {
	CaptureData struct {
		EndpointInput struct {
			Data     *string `json:"data"`
			Encoding string  `json:"encoding"`
		} `json:"endpointInput"`
	} `json:"captureData"`
	EventMetadata struct {
		EventID       string `json:"eventId"`
		InferenceTime string `json:"inferenceTime"`
	} `json:"eventMetadata"`
}

// captureInput decodes a line's endpointInput (JSON or BASE64, AIPerf's
// two) and its time, naming the line and the event in every error.
func captureInput(path string, n int, line []byte) (map[string]json.RawMessage, time.Time, error) {
	var c capture
	if err := json.Unmarshal(line, &c); err != nil {
		return nil, time.Time{}, fmt.Errorf("%s:%d: not a SageMaker data capture record: %v", path, n, err)
	}
	ev := c.EventMetadata.EventID
	at, err := time.Parse(time.RFC3339Nano, c.EventMetadata.InferenceTime)
	if err != nil {
		return nil, time.Time{}, fmt.Errorf("%s:%d (event %q): eventMetadata.inferenceTime %q: want an ISO 8601 time", path, n, ev, c.EventMetadata.InferenceTime)
	}
	in := c.CaptureData.EndpointInput
	if in.Data == nil {
		return nil, time.Time{}, fmt.Errorf("%s:%d (event %q): no captureData.endpointInput.data", path, n, ev)
	}
	raw := []byte(*in.Data)
	switch in.Encoding {
	case "JSON":
	case "BASE64", "":
		if raw, err = base64.StdEncoding.DecodeString(*in.Data); err != nil {
			return nil, time.Time{}, fmt.Errorf("%s:%d (event %q): endpointInput.data is not base64: %v", path, n, ev, err)
		}
	default:
		return nil, time.Time{}, fmt.Errorf("%s:%d (event %q): endpointInput.encoding %q: only JSON and BASE64 captures hold a chat request", path, n, ev, in.Encoding)
	}
	var body map[string]json.RawMessage
	if err := json.Unmarshal(raw, &body); err != nil {
		return nil, time.Time{}, fmt.Errorf("%s:%d (event %q): the captured request is not a JSON object: %v", path, n, ev, err)
	}
	var msgs []json.RawMessage
	if json.Unmarshal(body["messages"], &msgs) != nil || len(msgs) == 0 {
		return nil, time.Time{}, fmt.Errorf("%s:%d (event %q): the captured request has no \"messages\" list: only OpenAI-compatible chat captures are replayed (as AIPerf's)", path, n, ev)
	}
	return body, at, nil
}

// indexSageMaker reads a capture file as AIPerf replays one: each
// request's literal messages, tools and max_tokens (or
// max_completion_tokens), sent to --model with --streaming and
// --extra-inputs, on its inference time from the earliest. Other captured
// fields are not sent (AIPerf rebuilds the body too). The bodies go
// through a derived JSONL read as raw payloads; the times are read from
// the capture itself.
func indexSageMaker(path string, o Options) (*Index, error) {
	extra, _ := json.Marshal(o.Extra) // (map keys sorted: one key per set)
	key := fmt.Sprintf("model=%q streaming=%v extra=%s", o.Model, o.Streaming, extra)
	x, err := derivedWith(path, "sagemaker", key, func(w io.Writer) error { return sageMakerBodies(path, o, w) },
		func(jsonl string) (*Index, error) { return indexRawPayload(jsonl, o.Tokenizer, o.Streaming) })
	if err != nil {
		return nil, err
	}
	times, err := sageMakerTimes(path)
	if err != nil {
		return nil, err
	}
	if len(times) != len(x.Lines) {
		return nil, fmt.Errorf("%s: %d capture records but %d bodies (the file changed while it was read?)", path, len(times), len(x.Lines))
	}
	first := times[0]
	for _, t := range times {
		if t.Before(first) {
			first = t
		}
	}
	for i, t := range times {
		x.Lines[i].TimestampMs = float64(t.Sub(first).Microseconds()) / 1000
		x.Lines[i].HasTime = true
	}
	return x, nil
}

// sageMakerBodies writes each record's request body, a line each.
func sageMakerBodies(path string, o Options, w io.Writer) error {
	return eachCapture(path, func(n int, line []byte) error {
		in, _, err := captureInput(path, n, line)
		if err != nil {
			return err
		}
		body := map[string]json.RawMessage{"messages": in["messages"]}
		model, _ := json.Marshal(o.Model)
		body["model"] = model
		for _, k := range []string{"max_tokens", "max_completion_tokens"} {
			if v, ok := in[k]; ok && string(v) != "null" {
				body["max_tokens"] = v
				break
			}
		}
		if v, ok := in["tools"]; ok && string(v) != "null" {
			body["tools"] = v
		}
		stream, _ := json.Marshal(o.Streaming)
		body["stream"] = stream
		for k, v := range o.Extra {
			body[k] = v
		}
		keys := make([]string, 0, len(body))
		for k := range body {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		var b bytes.Buffer
		b.WriteByte('{')
		for i, k := range keys {
			if i > 0 {
				b.WriteByte(',')
			}
			kb, _ := json.Marshal(k)
			b.Write(kb)
			b.WriteByte(':')
			if err := json.Compact(&b, body[k]); err != nil {
				return fmt.Errorf("%s:%d: %q: %v", path, n, k, err)
			}
		}
		b.WriteString("}\n")
		_, err = w.Write(b.Bytes())
		return err
	})
}

// sageMakerTimes reads each record's inference time, in file order.
func sageMakerTimes(path string) ([]time.Time, error) {
	var out []time.Time
	err := eachCapture(path, func(n int, line []byte) error {
		_, at, err := captureInput(path, n, line)
		out = append(out, at)
		return err
	})
	if err == nil && len(out) == 0 {
		err = fmt.Errorf("%s: no capture records", path)
	}
	return out, err
}

// eachCapture calls f with each non-empty line of a capture file.
func eachCapture(path string, f func(n int, line []byte) error) error {
	st, err := os.Stat(path)
	if err != nil {
		return fmt.Errorf("--input-file: %w", err)
	}
	if st.IsDir() {
		return fmt.Errorf("--input-file %s: a folder of capture files is not read here: give one file (cat its *.jsonl files into one)", path)
	}
	fh, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("--input-file: %w", err)
	}
	defer fh.Close()
	sc := bufio.NewScanner(fh)
	sc.Buffer(make([]byte, 64<<10), 64<<20)
	for n := 1; sc.Scan(); n++ {
		if line := bytes.TrimSpace(sc.Bytes()); len(line) > 0 {
			if err := f(n, line); err != nil {
				return err
			}
		}
	}
	return sc.Err()
}
