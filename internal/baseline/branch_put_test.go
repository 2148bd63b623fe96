package baseline

import (
	"context"
	"testing"

	"github.com/aiperf-action/aiperf-action/internal/ghfake"
)

// PutFiles writes binary files in one commit, and a second call replaces
// the folder's files: one left out is gone, the others untouched.
func TestPutFiles(t *testing.T) {
	gh := ghfake.New(t, "o", "r")
	b := &Branch{Client: gh.Client(), Owner: "o", Repo: "r", Name: "aiperf-baselines", Root: "baselines"}
	png := []byte{0x89, 'P', 'N', 'G', 0, 0xff, 0xfe, '\n'}
	c1, err := b.PutFiles(context.Background(), "aiperf-charts/pr-7", map[string][]byte{"a.png": png, "b.png": []byte("b")}, "charts")
	if err != nil || c1 == "" {
		t.Fatal(c1, err)
	}
	f := gh.Files("aiperf-baselines")
	if f["aiperf-charts/pr-7/a.png"] != string(png) || f["aiperf-charts/pr-7/b.png"] != "b" {
		t.Fatalf("files %q", f)
	}
	c2, err := b.PutFiles(context.Background(), "aiperf-charts/pr-7", map[string][]byte{"a.png": []byte("a2")}, "charts")
	if err != nil || c2 == c1 {
		t.Fatal(c2, err)
	}
	f = gh.Files("aiperf-baselines")
	if _, ok := f["aiperf-charts/pr-7/b.png"]; ok || f["aiperf-charts/pr-7/a.png"] != "a2" {
		t.Fatalf("files %q", f)
	}
}
