package endpoint

import (
	"encoding/json"
	"testing"
)

// A body is byte for byte what json.Marshal makes of the same fields as a
// map, extra inputs with spaces, HTML characters and U+2028 included.
func TestBodyIsJSONMarshalsBytes(t *testing.T) {
	t.Parallel()
	in := Input{Model: "m<&>", Prompt: "a \u2028 <b> & \"q\"", System: "sys", MaxTokens: 7, Stream: true, Usage: true,
		Extra: map[string]json.RawMessage{"stop": json.RawMessage(`[ "<end>" ,  "&" ]`), "ignore_eos": json.RawMessage("true"), "x\u2028": json.RawMessage(`{ "a" : 1 }`)}}
	for _, k := range []Kind{Chat{}, Completions{}} {
		got, err := k.Build(in)
		if err != nil {
			t.Fatal(err)
		}
		var fields map[string]json.RawMessage
		if err := json.Unmarshal(got, &fields); err != nil {
			t.Fatalf("%T: not JSON: %s", k, got)
		}
		want, _ := json.Marshal(fields)
		if string(got) != string(want) {
			t.Errorf("%T:\n got %s\nwant %s", k, got, want)
		}
	}
}
