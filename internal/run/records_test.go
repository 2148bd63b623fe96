package run

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aiperf-action/aiperf-action/internal/record"
	"github.com/aiperf-action/aiperf-action/internal/result"
)

// A records.jsonl that cannot be put in place fails the run, where it
// used to be a line on stderr and exit 0.
func TestRecordsWriteFailureFailsTheRun(t *testing.T) {
	dir := t.TempDir()
	rw, err := result.NewRecordWriter(dir)
	if err != nil {
		t.Fatal(err)
	}
	rw.Write(&record.Record{Index: 1})
	os.Mkdir(filepath.Join(dir, result.RecordsFile), 0o755) // in the way of the rename
	g := &gathered{}
	closeRecords(rw, g)
	if g.runErr == nil || !strings.Contains(g.runErr.Error(), "records are lost") {
		t.Fatalf("run error %v", g.runErr)
	}
	ok := t.TempDir()
	rw, _ = result.NewRecordWriter(ok)
	g = &gathered{}
	closeRecords(rw, g)
	if g.runErr != nil {
		t.Fatalf("a good write failed the run: %v", g.runErr)
	}
	if fi, err := os.Stat(filepath.Join(ok, result.RecordsFile)); err != nil || fi.Mode().Perm() != 0o644 {
		t.Fatalf("records.jsonl: %v, mode %v (want 0644, readable by the upload step)", err, fi.Mode().Perm())
	}
}
