package endpoint

import (
	"bytes"
	"encoding/json"
	"testing"
)

// The chunk scanner never panics and never writes to its input; a chunk
// that is not JSON is an error unless it passes the well-formedness check;
// and a chunk carrying any string as its content gives that string back
// exactly (escapes, unicode, a quoted key inside the text), as the full
// decoder reads it.
func FuzzScan(f *testing.F) {
	f.Add([]byte(`{"choices":[{"index":0,"delta":{"content":" hello"},"logprobs":null,"finish_reason":null}]}`), " hello")
	f.Add([]byte(`{"choices":[{"index":0,"delta":{"reasoning_content":"think","content":" more"}}]}`), `say "hi"`+"\n\u00e9")
	f.Add([]byte(`{"choices":[{"text":"","index":0,"finish_reason":"length"}],"usage":{"completion_tokens":5}}`), `the key "content":"x"`)
	f.Add([]byte(`{"choices":[{"delta":{"content":"x"}]]}`), `\u0000`)
	f.Add([]byte(`{"error":{"message":"boom"}}`), "")
	f.Fuzz(func(t *testing.T, data []byte, text string) {
		in := append([]byte(nil), data...)
		_, _, _, err := Scan(data, make([]byte, 0, 16))
		if !bytes.Equal(in, data) {
			t.Fatalf("Scan wrote to its input: %q became %q", in, data)
		}
		if err == nil && !json.Valid(data) && !wellFormed(data) {
			t.Fatalf("%q: neither JSON nor well formed, and no error", data)
		}

		v, _ := json.Marshal(text)
		chunk := []byte(`{"choices":[{"index":0,"delta":{"content":` + string(v) + `},"finish_reason":null}]}`)
		var want string
		if err := json.Unmarshal(v, &want); err != nil {
			t.Fatal(err)
		}
		got, reasoning, full, err := Scan(chunk, nil)
		if err != nil || full != nil || reasoning != 0 {
			t.Fatalf("%s: err %v, fallback %v, reasoning %d", chunk, err, full != nil, reasoning)
		}
		if string(got) != want {
			t.Fatalf("%s: content %q, want %q", chunk, got, want)
		}
		dec, err := parseOpenAI(chunk)
		if err != nil || dec.Content != want {
			t.Fatalf("%s: decoder %q (%v), want %q", chunk, dec.Content, err, want)
		}
		// The same text as reasoning, before an answer: split where it ends.
		chunk = []byte(`{"choices":[{"index":0,"delta":{"reasoning":` + string(v) + `,"content":"ok"},"finish_reason":null}]}`)
		got, reasoning, _, err = Scan(chunk, nil)
		if err != nil || string(got[:reasoning]) != want || string(got[reasoning:]) != "ok" {
			t.Fatalf("%s: reasoning %q and content %q (%v), want %q and \"ok\"", chunk, got[:reasoning], got[reasoning:], err, want)
		}
	})
}
