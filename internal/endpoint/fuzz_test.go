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

// Anthropic's events (and the Responses API's): the scanner never panics
// or writes to its input, and any string in a text_delta or a
// thinking_delta (an output_text or reasoning_text delta) comes back
// exactly, as the answer or as the reasoning, as the full decoder reads it.
func FuzzMessagesScan(f *testing.F) {
	f.Add([]byte(`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hello"}}`), " hi")
	f.Add([]byte(`{"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":9}}`), `say "x"`)
	f.Add([]byte(`{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`), "\u00e9\n")
	f.Add([]byte(`{"type":"content_block_start","index":1,"content_block":{"type":"text","text":""}}`), `"text":"y"`)
	f.Fuzz(func(t *testing.T, data []byte, text string) {
		in := append([]byte(nil), data...)
		_, _, _, err := Messages{}.Scan(data, make([]byte, 0, 16))
		if !bytes.Equal(in, data) {
			t.Fatalf("Scan wrote to its input: %q became %q", in, data)
		}
		if err == nil && !json.Valid(data) && !wellFormed(data) {
			t.Fatalf("%q: neither JSON nor well formed, and no error", data)
		}
		v, _ := json.Marshal(text)
		var want string
		if err := json.Unmarshal(v, &want); err != nil {
			t.Fatal(err)
		}
		// The Responses API's deltas, likewise (one scanner underneath).
		for _, typ := range []string{"response.output_text.delta", "response.reasoning_text.delta"} {
			ev := []byte(`{"type":"` + typ + `","sequence_number":4,"item_id":"msg_1","output_index":0,"content_index":0,"delta":` + string(v) + `,"logprobs":[]}`)
			got, reasoning, _, err := Responses{}.Scan(ev, nil)
			dec, derr := parseResponsesEvent(ev)
			if err != nil || derr != nil || string(got) != want || (reasoning > 0) != (typ != "response.output_text.delta" && want != "") || dec.Content+dec.Reasoning != want {
				t.Fatalf("%s: %q (reasoning %d), %v, %v; decoder %+v; want %q", ev, got, reasoning, err, derr, dec, want)
			}
		}
		for _, d := range []struct{ typ, key string }{{"text_delta", "text"}, {"thinking_delta", "thinking"}} {
			ev := []byte(`{"type":"content_block_delta","index":0,"delta":{"type":"` + d.typ + `","` + d.key + `":` + string(v) + `}}`)
			got, reasoning, _, err := Messages{}.Scan(ev, nil)
			dec, derr := parseMessages(ev)
			if err != nil || derr != nil {
				t.Fatalf("%s: %v, %v", ev, err, derr)
			}
			answer, thought := string(got[reasoning:]), string(got[:reasoning])
			if d.key == "text" && (answer != want || thought != "" || dec.Content != want) || d.key == "thinking" && (thought != want || answer != "" || dec.Reasoning != want) {
				t.Fatalf("%s: answer %q, reasoning %q (decoder %q, %q), want %q", ev, answer, thought, dec.Content, dec.Reasoning, want)
			}
		}
	})
}

// vLLM's tokens-in events: the scanner never panics or writes to its
// input; what it reads without a decoder is what the decoder reads, for
// any event that is JSON; and any list of ids comes back as the decoder
// joins it.
func FuzzVLLMScan(f *testing.F) {
	f.Add([]byte(`{"request_id":"r","choices":[{"index":0,"logprobs":null,"finish_reason":null,"token_ids":[791]}],"usage":null}`), []byte{1, 2, 3})
	f.Add([]byte(`{"request_id":"r","choices":[],"usage":{"prompt_tokens":7,"completion_tokens":4}}`), []byte{})
	f.Add([]byte(`{"error":{"message":"boom"},"finish_reason":null,"token_ids":[1]}`), []byte{255})
	f.Add([]byte(`{"x":"\"token_ids\":[5]","finish_reason":null,"choices":[{"token_ids":[6]}]}`), []byte{0})
	f.Fuzz(func(t *testing.T, data []byte, ids []byte) {
		in := append([]byte(nil), data...)
		got, _, full, err := VLLMGenerate{}.Scan(data, make([]byte, 0, 16))
		if !bytes.Equal(in, data) {
			t.Fatalf("Scan wrote to its input: %q became %q", in, data)
		}
		if err == nil && full == nil && !wellFormed(data) {
			t.Fatalf("%q: read without a decoder, and not well formed", data)
		}
		if err == nil && full == nil && json.Valid(data) {
			if dec, derr := (VLLMGenerate{}).ParseChunk(data); derr == nil && dec.Content != string(got) {
				t.Fatalf("%s: scanned %q, decoded %q", data, got, dec.Content)
			}
		}
		list := make([]int, len(ids))
		for i, b := range ids {
			list[i] = int(b) * 997
		}
		v, _ := json.Marshal(list)
		ev := []byte(`{"request_id":"r","choices":[{"index":0,"logprobs":null,"finish_reason":null,"token_ids":` + string(v) + `}],"usage":null}`)
		got, _, full, err = VLLMGenerate{}.Scan(ev, nil)
		if err != nil || full != nil || string(got) != joinIDs(list) || CountIDs(string(got)) != len(list) {
			t.Fatalf("%s: %q (fast %v, %v), want %q", ev, got, full == nil, err, joinIDs(list))
		}
	})
}

// The template type's reading of its field path without a decode: it never
// panics or writes to its input, and on any JSON event where it answers
// it gives what the decoder gives (any path, any value, nested, escaped,
// duplicated keys).
func FuzzTemplateScan(f *testing.F) {
	f.Add([]byte(`{"choices":[{"index":0,"text":" hi","finish_reason":null}]}`), "choices.0.text")
	f.Add([]byte(`{"a":{"b":[1,{"c":"x\"y"}]},"a":{"b":[]}}`), "a.b.1.c")
	f.Add([]byte(`{"out":{"text":null},"n":12.5e3,"ok":true}`), "n")
	f.Add([]byte(`{"data":[{"t":"\u00e9"}], "t" : "top"}`), "data.0.t")
	f.Add([]byte(`{"x":[[1,2],[3,{"y":"z"}]]}`), "x.1.1.y")
	f.Fuzz(func(t *testing.T, data []byte, field string) {
		tm, err := NewTemplate(`{"p":{{json .Prompt}}}`, field)
		if err != nil {
			return
		}
		in := append([]byte(nil), data...)
		got, _, full, err := tm.Scan(data, make([]byte, 0, 16))
		if !bytes.Equal(in, data) {
			t.Fatalf("Scan wrote to its input: %q became %q", in, data)
		}
		if err != nil || full != nil || !json.Valid(data) {
			return
		}
		want, derr := tm.parse(data)
		if derr == nil && want.ServerErr == "" && want.Content != string(got) {
			t.Fatalf("%s at %q: scanned %q, decoded %q", data, field, got, want.Content)
		}
		// The walk itself, wherever it answers.
		if text, ok := pathText(data, tm.field); ok && derr == nil && string(text) != want.Content {
			t.Fatalf("%s at %q: walked %q, decoded %q", data, field, text, want.Content)
		}
	})
}
