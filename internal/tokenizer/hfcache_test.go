package tokenizer

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A folder is read as the folder's tokenizer.json, and one without it is
// refused by name; a file is itself; a model id with odd characters is not
// taken for one.
func TestResolvePaths(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if _, err := Resolve(dir, ""); err == nil || !strings.Contains(err.Error(), "has no tokenizer.json") || !strings.Contains(err.Error(), dir) {
		t.Errorf("an empty folder: %v", err)
	}
	p := filepath.Join(dir, "tokenizer.json")
	os.WriteFile(p, []byte("{}"), 0o644)
	if got, err := Resolve(dir, ""); err != nil || got != p {
		t.Errorf("a folder: %q %v", got, err)
	}
	if got, err := Resolve(p, ""); err != nil || got != p {
		t.Errorf("a file: %q %v", got, err)
	}
	for _, bad := range []string{"org/name/extra", ".hidden", "a b", "../up"} {
		if _, err := Resolve(bad, ""); err == nil || !strings.Contains(err.Error(), "not a Hugging Face model id") {
			t.Errorf("%q: %v", bad, err)
		}
	}
}

// TestMain points the hub at a closed loopback port, so no test here can
// reach the network; tests that need a hub start hubtest and say so.
func TestMain(m *testing.M) {
	os.Setenv("HF_ENDPOINT", "http://127.0.0.1:9")
	os.Setenv("HF_HUB_DISABLE_PROGRESS_BARS", "1")
	os.Exit(m.Run())
}
