package tokenizer

import (
	"maps"
	"testing"

	"github.com/tiktoken-go/tokenizer/codec"
)

// The rank table read in place from the codec is the one its public Decode
// gives, id for id, for both encodings; and the in-place read is the one
// taken with the module version go.mod pins (if a new release moves the
// field, this test says so instead of the load quietly slowing down).
func TestCodecRanksMatchDecode(t *testing.T) {
	for _, tc := range []struct {
		name string
		c    *codec.Codec
		size int
	}{
		{O200k, codec.NewO200kBase(), 200000},
		{CL100k, codec.NewCl100kBase(), 100256},
	} {
		got, ok := codecRanks(tc.c)
		if !ok {
			t.Fatalf("%s: the codec's rank table was not found in place; loading falls back to Decode", tc.name)
		}
		want := decodeRanks(tc.c, tc.size)
		if len(got) != len(want) || !maps.Equal(got, want) {
			t.Fatalf("%s: in-place table has %d ranks, Decode gives %d, or they differ", tc.name, len(got), len(want))
		}
	}
}

// Another shape is refused, so the caller falls back to Decode: no such
// field, a map to another type, not a map, not a pointer to a struct.
func TestRankFieldShape(t *testing.T) {
	type vocab map[string]uint
	right := &struct{ vocabulary vocab }{vocab{"a": 7}}
	if m, ok := rankField(right); !ok || m["a"] != 7 {
		t.Fatalf("the right shape: %v %v", m, ok)
	}
	for name, p := range map[string]any{
		"no field":    &struct{ other vocab }{},
		"int values":  &struct{ vocabulary map[string]int }{},
		"int keys":    &struct{ vocabulary map[int]uint }{},
		"a slice":     &struct{ vocabulary []string }{},
		"not pointer": struct{ vocabulary vocab }{},
		"nil":         nil,
	} {
		if _, ok := rankField(p); ok {
			t.Errorf("%s: taken", name)
		}
	}
}
