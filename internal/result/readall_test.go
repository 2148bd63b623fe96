package result

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aiperf-action/aiperf-action/internal/metrics"
)

// minimal is a run.json that Parse accepts, for profile hash.
func minimal(t *testing.T, path, hash string) {
	t.Helper()
	r := &Run{Schema: Schema, ProfileHash: hash, DurationS: 1, Metrics: map[string]metrics.Metric{},
		Counts: metrics.Counts{Requests: 2, OK: 2}}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := WriteJSON(path, r); err != nil {
		t.Fatal(err)
	}
}

// ReadAll takes a run.json, a run folder, a folder of run folders, or a
// baseline store's folder (from its root, a scenario's or a profile's
// folder, oldest first, one profile only), and names the path of what it
// can't read.
func TestReadAllForms(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	minimal(t, filepath.Join(dir, "runs", "r1", RunFile), "h1")
	minimal(t, filepath.Join(dir, "runs", "r2", RunFile), "h1")
	os.WriteFile(filepath.Join(dir, "runs", "notes.txt"), []byte("x"), 0o644)
	for _, c := range []struct {
		path string
		n    int
	}{{filepath.Join(dir, "runs", "r1", RunFile), 1}, {filepath.Join(dir, "runs", "r1"), 1}, {filepath.Join(dir, "runs"), 2}} {
		got, err := ReadAll(c.path)
		if err != nil || len(got) != c.n {
			t.Fatalf("%s: %d runs, %v; want %d", c.path, len(got), err, c.n)
		}
	}
	store := filepath.Join(dir, "baselines")
	minimal(t, filepath.Join(store, "chat", "p1", "20260102T000000Z-bbbb-r1.json"), "h1")
	minimal(t, filepath.Join(store, "chat", "p1", "20260101T000000Z-aaaa-r1.json"), "h1")
	for _, p := range []string{store, filepath.Join(store, "chat"), filepath.Join(store, "chat", "p1")} {
		got, err := ReadAll(p)
		if err != nil || len(got) != 2 || !strings.Contains(got[0].Path, "aaaa") {
			t.Fatalf("%s: %v, %v; want both runs, the older first", p, got, err)
		}
	}
	minimal(t, filepath.Join(store, "chat", "p2", "20260103T000000Z-cccc-r1.json"), "h2")
	if _, err := ReadAll(store); err == nil || !strings.Contains(err.Error(), "name one of") {
		t.Fatalf("two profiles: %v", err)
	}
	if _, err := ReadAll(filepath.Join(dir, "empty-not-there")); err == nil {
		t.Fatal("a missing path read")
	}
	empty := filepath.Join(dir, "empty")
	os.Mkdir(empty, 0o755)
	if _, err := ReadAll(empty); err == nil || !strings.Contains(err.Error(), "no run.json in it") {
		t.Fatalf("an empty folder: %v", err)
	}
	os.WriteFile(filepath.Join(dir, "runs", "r2", RunFile), []byte(`{"schema":"aiperf-action/run/v1"`), 0o644)
	if _, err := ReadAll(filepath.Join(dir, "runs")); err == nil || !strings.Contains(err.Error(), filepath.Join("r2", RunFile)) {
		t.Fatalf("a broken run among good ones: %v", err)
	}
}

// Parse refuses counts no run can have, naming the count.
func TestParseRefusesImpossibleCounts(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ counts, want string }{
		{`"requests":2,"ok":-1,"errors":3`, "counts.ok is -1"},
		{`"requests":2,"ok":2,"errors":0,"errors_by_kind":{"http_500":-1}`, "counts.errors_by_kind.http_500 is -1"},
		{`"requests":3,"ok":1,"errors":1`, "ok 1 + errors 1 is not requests 3"},
		{`"requests":2,"ok":2,"errors":0,"cancelled":-2`, "counts.cancelled is -2"},
	} {
		b := []byte(`{"schema":"aiperf-action/run/v1","duration_s":1,"metrics":{},"counts":{` + c.counts + `}}`)
		if _, err := Parse(b, "r.json"); err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "r.json") {
			t.Errorf("%s: %v, want %q", c.counts, err, c.want)
		}
	}
	b := []byte(`{"schema":"aiperf-action/run/v1","duration_s":0,"metrics":{},"counts":{"requests":2,"ok":2,"errors":0}}`)
	if _, err := Parse(b, "r.json"); err == nil || !strings.Contains(err.Error(), "want a positive duration") {
		t.Errorf("no duration: %v", err)
	}
}

// An atomic write that fails leaves the old file as it was, and no
// temporary file beside it.
func TestWriteAtomicFuncFailureKeepsTheOldFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	p := filepath.Join(dir, "inputs.json")
	os.WriteFile(p, []byte("old"), 0o644)
	err := WriteAtomicFunc(p, func(w io.Writer) error {
		io.WriteString(w, "half of the new")
		return errors.New("the plan failed")
	})
	if err == nil {
		t.Fatal("a failed write reported success")
	}
	if b, _ := os.ReadFile(p); string(b) != "old" {
		t.Fatalf("the old file is now %q", b)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Fatalf("%d files in the folder, want the old one alone", len(ents))
	}
}
