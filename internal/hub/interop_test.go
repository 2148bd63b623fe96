package hub_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aiperf-action/aiperf-action/internal/hub"
	"github.com/aiperf-action/aiperf-action/internal/hub/hubtest"
)

// hfjs is the hub's own JavaScript client (npm @huggingface/hub, pinned in
// tools/hfhub), driven by tools/hfhub/cache.mjs. Without node_modules the
// interop tests skip, unless AIPERF_REQUIRE_HFJS=1 (as .ci/run sets it).
func hfjs(t *testing.T, args ...string) string {
	t.Helper()
	dir, _ := filepath.Abs("../../tools/hfhub")
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "@huggingface", "hub")); err != nil {
		if os.Getenv("AIPERF_REQUIRE_HFJS") == "1" {
			t.Fatalf("AIPERF_REQUIRE_HFJS=1 and tools/hfhub has no node_modules: npm ci --prefix tools/hfhub")
		}
		t.Skip("tools/hfhub/node_modules missing (npm ci --prefix tools/hfhub)")
	}
	cmd := exec.Command("node", append([]string{filepath.Join(dir, "cache.mjs")}, args...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("node cache.mjs %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return strings.TrimSpace(string(out))
}

type scan struct {
	Repos []struct {
		ID, Type  string
		Size      int64
		Revisions []struct {
			Commit string
			Refs   []string
			Files  []struct {
				Path, Blob string
				Size       int64
			}
		}
	}
	Warnings []string
}

func interopHub(t *testing.T) (*hubtest.Hub, string, map[string][]byte) {
	h := hubtest.New()
	t.Cleanup(h.Close)
	big := bytes.Repeat([]byte("0123456789abcdef"), hubtest.LargeFile/16+100)
	files := map[string][]byte{"tokenizer.json": []byte(`{"version":"1.0"}`), "model.safetensors": big}
	hf := map[string]hubtest.File{}
	for k, v := range files {
		hf[k] = hubtest.File{Data: v}
	}
	return h, h.Add(hub.Model, "Org/Interop", "main", hf), files
}

// A cache this package filled reads, to the hub's JavaScript client, as
// its own: the scan finds the repository, the commit, refs/main and both
// files with their sizes and no warning, and a download of either at the
// commit comes from the cache with the hub gone.
func TestJSClientReadsOurCache(t *testing.T) {
	h, commit, files := interopHub(t)
	cache := t.TempDir()
	c := hub.Config{Endpoint: h.URL, CacheDir: cache}
	for name := range files {
		if _, err := c.File(context.Background(), hub.Model, "Org/Interop", "main", name); err != nil {
			t.Fatal(err)
		}
	}
	var s scan
	if err := json.Unmarshal([]byte(hfjs(t, "scan", cache)), &s); err != nil {
		t.Fatal(err)
	}
	if len(s.Warnings) != 0 || len(s.Repos) != 1 || s.Repos[0].ID != "Org/Interop" || s.Repos[0].Type != "model" || len(s.Repos[0].Revisions) != 1 {
		t.Fatalf("scan: %+v", s)
	}
	rev := s.Repos[0].Revisions[0]
	if rev.Commit != commit || strings.Join(rev.Refs, ",") != "main" || len(rev.Files) != 2 {
		t.Fatalf("revision: %+v, want commit %s, refs main, two files", rev, commit)
	}
	for _, f := range rev.Files {
		name := filepath.Base(f.Path) // (the client's scan lists a snapshot's top level only)
		if f.Size != int64(len(files[name])) || filepath.Dir(f.Blob) != filepath.Join(cache, "models--Org--Interop", "blobs") {
			t.Errorf("%s: the client reads %d bytes at %s, the file has %d", name, f.Size, f.Blob, len(files[name]))
		}
	}
	url := h.URL
	h.Close()
	for name, data := range files {
		p := hfjs(t, "download", url, cache, "model", "Org/Interop", commit, name)
		if b, err := os.ReadFile(p); err != nil || !bytes.Equal(b, data) {
			t.Fatalf("the client's %s: %s, %v", name, p, err)
		}
	}
}

// A cache the JavaScript client filled serves this package: with the hub
// up, a revision's HEAD finds the client's snapshot and downloads nothing;
// offline, the commit's copy serves.
func TestOurClientReadsJSCache(t *testing.T) {
	h, commit, files := interopHub(t)
	cache := t.TempDir()
	for name := range files {
		hfjs(t, "download", h.URL, cache, "model", "Org/Interop", "main", name)
	}
	n := h.Downloads.Load()
	if n != 2 {
		t.Fatalf("the client made %d downloads, want 2", n)
	}
	c := hub.Config{Endpoint: h.URL, CacheDir: cache}
	for name, data := range files {
		p, err := c.File(context.Background(), hub.Model, "Org/Interop", "main", name)
		if err != nil {
			t.Fatal(err)
		}
		if b, _ := os.ReadFile(p); !bytes.Equal(b, data) || !strings.Contains(p, commit) {
			t.Fatalf("%s: %s", name, p)
		}
	}
	if h.Downloads.Load() != n {
		t.Fatalf("%d downloads of files the cache held", h.Downloads.Load()-n)
	}
	h.Close()
	c.Offline = true
	for name := range files {
		if _, err := c.File(context.Background(), hub.Model, "Org/Interop", commit, name); err != nil {
			t.Fatalf("offline, by commit: %v", err)
		}
		// refs/main, written on the HEAD above, serves the branch too.
		if _, err := c.File(context.Background(), hub.Model, "Org/Interop", "main", name); err != nil {
			t.Fatalf("offline, main: %v", err)
		}
	}
}
