package dataset

import (
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
)

// FuzzFromFile: any bytes as an --input-file either load into prompts
// whose token counts are what they say, or give an error; nothing panics.
func FuzzFromFile(f *testing.F) {
	f.Add([]byte(`{"text": "hello world"}` + "\n" + `{"input_length": 12, "output_length": 4}` + "\n"))
	f.Add([]byte(`{"timestamp": 10, "text": "a"}` + "\n\n" + `{"input_length": -1}`))
	f.Add([]byte("not json\n"))
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, b []byte) {
		p := filepath.Join(dir, "in.jsonl")
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Skip()
		}
		lines, err := FromFile(p, rand.New(rand.NewPCG(1, 2)))
		if err != nil {
			return
		}
		for i, l := range lines {
			if l.Prompt.ISL < 0 {
				t.Fatalf("line %d: ISL %d", i, l.Prompt.ISL)
			}
		}
	})
}
