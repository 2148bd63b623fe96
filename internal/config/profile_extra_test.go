package config

import (
	"strings"
	"testing"
)

// An --extra-inputs value that looks like JSON but is not, or one that
// would contradict --streaming, is an error naming the flag, not a
// request changed without a word.
func TestExtraInputsRefused(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{`stop:["a",`, "looks like JSON but is not"},
		{`logit_bias:{"1": 2`, "looks like JSON but is not"},
		{`stream:false`, "streaming is set by --streaming"},
	} {
		if _, err := ParseExtraInputs([]string{c.in}); err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "--extra-inputs") {
			t.Errorf("%q: %v", c.in, err)
		}
	}
	got, err := ParseExtraInputs([]string{`stop:["a","b"]`, "ignore_eos:true", "user:alice"})
	if err != nil || string(got["stop"]) != `["a","b"]` || string(got["ignore_eos"]) != "true" || string(got["user"]) != `"alice"` {
		t.Fatalf("%v %v", got, err)
	}
}
