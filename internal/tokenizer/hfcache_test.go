package tokenizer

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// The cache is found the way the hub library finds it: the first of
// HF_HUB_CACHE, HUGGINGFACE_HUB_CACHE, HF_HOME/hub, XDG_CACHE_HOME/
// huggingface/hub and ~/.cache/huggingface/hub that is set.
func TestCacheDirsPrecedence(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	env := []struct{ name, value, want string }{
		{"HF_HUB_CACHE", "/a", "/a"},
		{"HUGGINGFACE_HUB_CACHE", "/b", "/b"},
		{"HF_HOME", "/c", "/c/hub"},
		{"XDG_CACHE_HOME", "/d", "/d/huggingface/hub"},
	}
	for _, e := range env {
		t.Setenv(e.name, e.value)
	}
	for _, e := range env {
		if got := CacheDirs(); !slices.Equal(got, []string{e.want}) {
			t.Errorf("with %s and those below it set: %v, want %s", e.name, got, e.want)
		}
		t.Setenv(e.name, "")
	}
	if got := CacheDirs(); !slices.Equal(got, []string{filepath.Join(home, ".cache", "huggingface", "hub")}) {
		t.Errorf("nothing set: %v", got)
	}
}

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
