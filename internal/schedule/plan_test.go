package schedule

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/aiperf-action/aiperf-action/internal/config"
	"github.com/aiperf-action/aiperf-action/internal/tokenizer"
)

func profile() *config.Profile {
	p := config.DefaultProfile
	p.Model, p.URL, p.RequestCount = "m", "127.0.0.1:1", 20
	p.ISLMean, p.ISLStddev, p.OSLMean, p.OSLStddev = 50, 10, 16, 4
	return &p
}

func TestBuildDeterministic(t *testing.T) {
	t.Parallel()
	p := profile()
	a, err := Build(p, 7)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := Build(p, 7)
	ja, _ := a.InputsJSON()
	jb, _ := b.InputsJSON()
	if !bytes.Equal(ja, jb) || a.Hash(p) != b.Hash(p) {
		t.Fatal("same seed, different plan")
	}
	c, _ := Build(p, 8)
	if c.Hash(p) == a.Hash(p) {
		t.Fatal("different seed, same hash")
	}
	q := *p
	q.Workers, q.URL = 5, "other:2"
	if a.Hash(&q) != a.Hash(p) {
		t.Fatal("workers or URL changed the profile hash")
	}
	for _, e := range a.Profiling().Entries {
		if e.ISL < 1 || e.MaxTokens < 1 {
			t.Fatalf("entry %d lengths %d/%d", e.Index, e.ISL, e.MaxTokens)
		}
	}
}

func TestISLMatchesTokenizer(t *testing.T) {
	t.Parallel()
	p := profile()
	p.ISLStddev = 0
	pl, _ := Build(p, 1)
	for _, e := range pl.Profiling().Entries {
		var body struct {
			Messages []struct{ Content string } `json:"messages"`
		}
		if err := json.Unmarshal(e.Body, &body); err != nil {
			t.Fatal(err)
		}
		if e.ISL != 50 || tokenizer.Count(body.Messages[0].Content) != 50 {
			t.Fatalf("ISL %d, prompt has %d tokens", e.ISL, tokenizer.Count(body.Messages[0].Content))
		}
	}
}
