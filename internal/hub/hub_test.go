package hub_test

import (
	"bytes"
	"context"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aiperf-action/aiperf-action/internal/hub"
	"github.com/aiperf-action/aiperf-action/internal/hub/hubtest"
)

func config(h *hubtest.Hub, cache string) hub.Config {
	return hub.Config{Endpoint: h.URL, CacheDir: cache}
}

func TestFirstUseDownloadsSecondServesFromCacheOffline(t *testing.T) {
	h := hubtest.New()
	tok := []byte(`{"model":{"type":"BPE"}}`)
	commit := h.Add(hub.Model, "Org/Tiny", "main", map[string]hubtest.File{"tokenizer.json": {Data: tok}, "config.json": {Data: []byte("{}")}})
	cache := t.TempDir()
	var progress bytes.Buffer
	c := config(h, cache)
	c.Progress = &progress

	p, err := c.File(context.Background(), hub.Model, "Org/Tiny", "", "tokenizer.json")
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(p); !bytes.Equal(b, tok) {
		t.Fatalf("read %q", b)
	}
	folder := filepath.Join(cache, "models--Org--Tiny")
	if want := filepath.Join(folder, "snapshots", commit, "tokenizer.json"); p != want {
		t.Fatalf("path %s, want %s", p, want)
	}
	// The snapshot is a relative link into blobs/, named by the ETag (the
	// git blob hash of a small file), and refs/main holds the commit.
	target, err := os.Readlink(p)
	if err != nil || !strings.HasPrefix(target, "../../blobs/") {
		t.Fatalf("link %q, %v", target, err)
	}
	sum := sha1Blob(tok)
	if filepath.Base(target) != sum {
		t.Fatalf("blob %s, want the git blob hash %s", filepath.Base(target), sum)
	}
	if b, _ := os.ReadFile(filepath.Join(folder, "refs", "main")); string(b) != commit {
		t.Fatalf("refs/main = %q, want %s", b, commit)
	}
	if h.Downloads.Load() != 1 || !strings.Contains(progress.String(), "Org/Tiny tokenizer.json") {
		t.Fatalf("downloads %d, progress %q", h.Downloads.Load(), progress.String())
	}

	// Second use: the hub is gone and the process is offline; the cache
	// serves, with no request.
	before := h.Requests.Load()
	h.Close()
	c.Offline = true
	p2, err := c.File(context.Background(), hub.Model, "Org/Tiny", "main", "tokenizer.json")
	if err != nil || p2 != p {
		t.Fatalf("offline: %q, %v", p2, err)
	}
	c.Offline = false
	c.Refresh = true // asks the hub, which is unreachable: the cached copy serves
	if p3, err := c.File(context.Background(), hub.Model, "Org/Tiny", "main", "tokenizer.json"); err != nil || p3 != p {
		t.Fatalf("hub down, refresh: %q, %v", p3, err)
	}
	if h.Requests.Load() != before {
		t.Fatalf("requests after close: %d", h.Requests.Load()-before)
	}
	// Offline with a file the cache lacks: the error names the repo and
	// the cache, and says how to get it.
	c.Offline = true
	_, err = c.File(context.Background(), hub.Model, "Org/Tiny", "main", "vocab.json")
	if err == nil || !strings.Contains(err.Error(), "Org/Tiny vocab.json") || !strings.Contains(err.Error(), "HF_HUB_OFFLINE") || !strings.Contains(err.Error(), folder) {
		t.Fatalf("offline miss: %v", err)
	}
}

// sha1Blob is git's blob hash, the ETag the hub gives a small file.
func sha1Blob(b []byte) string {
	s := sha1.New()
	fmt.Fprintf(s, "blob %d\x00", len(b))
	s.Write(b)
	return hex.EncodeToString(s.Sum(nil))
}

func TestRevisionsTagsAndRefresh(t *testing.T) {
	h := hubtest.New()
	defer h.Close()
	v1 := h.Add(hub.Model, "Org/M", "main", map[string]hubtest.File{"tokenizer.json": {Data: []byte("one")}})
	h.Tag(hub.Model, "Org/M", "v1", v1)
	v2 := h.Add(hub.Model, "Org/M", "main", map[string]hubtest.File{"tokenizer.json": {Data: []byte("two")}})
	c := config(h, t.TempDir())
	read := func(rev string) string {
		t.Helper()
		p, err := c.File(context.Background(), hub.Model, "Org/M", rev, "tokenizer.json")
		if err != nil {
			t.Fatalf("%s: %v", rev, err)
		}
		b, _ := os.ReadFile(p)
		return string(b)
	}
	if read("main") != "two" || read("v1") != "one" || read(v1) != "one" || read(v2) != "two" {
		t.Fatal("revisions read the wrong commits")
	}
	if got := hub.Cached(c.CacheDir, hub.Model, "Org/M", "v1", "tokenizer.json"); !strings.Contains(got, v1) {
		t.Fatalf("refs/v1 → %q", got)
	}
	// main moves on the hub: a cached main serves until Refresh asks.
	h.Add(hub.Model, "Org/M", "main", map[string]hubtest.File{"tokenizer.json": {Data: []byte("three")}})
	n := h.Requests.Load()
	if read("main") != "two" || h.Requests.Load() != n {
		t.Fatal("a cached branch should serve with no request")
	}
	c.Refresh = true
	if read("main") != "three" {
		t.Fatal("Refresh should follow the branch")
	}
	// A commit in the cache is served with no request, even with Refresh.
	n = h.Requests.Load()
	if read(v1) != "one" || h.Requests.Load() != n {
		t.Fatal("a cached commit should serve with no request")
	}
	_, err := c.File(context.Background(), hub.Model, "Org/M", "v9", "tokenizer.json")
	var he *hub.Error
	if !errors.As(err, &he) || he.Code != "RevisionNotFound" || he.Status != 404 || !strings.Contains(err.Error(), "Org/M tokenizer.json at v9: HTTP 404") || !hub.NotFound(err) {
		t.Fatalf("missing revision: %v", err)
	}
}

func TestPrivateGatedAndMissing(t *testing.T) {
	h := hubtest.New()
	defer h.Close()
	h.Add(hub.Model, "Org/Private", "main", map[string]hubtest.File{"tokenizer.json": {Data: []byte("p")}})
	h.Protect(hub.Model, "Org/Private", "hf_secret", false)
	h.Add(hub.Model, "Org/Gated", "main", map[string]hubtest.File{"tokenizer.json": {Data: []byte("g")}})
	h.Protect(hub.Model, "Org/Gated", "hf_secret", true)
	c := config(h, t.TempDir())
	cases := []struct {
		repo, file, token string
		status            int
		want              string
	}{
		{"Org/Private", "tokenizer.json", "", 401, "set HF_TOKEN"},
		{"Org/Private", "tokenizer.json", "hf_wrong", 401, "the token (HF_TOKEN) has no access"},
		{"Org/Gated", "tokenizer.json", "", 403, "gated"},
		{"Org/Nope", "tokenizer.json", "", 401, "repository not found"},
		{"Org/Private", "tokenizer.model", "hf_secret", 404, "no such file"},
	}
	for _, tc := range cases {
		c.Token = tc.token
		_, err := c.File(context.Background(), hub.Model, tc.repo, "main", tc.file)
		var he *hub.Error
		if !errors.As(err, &he) || he.Status != tc.status || !strings.Contains(err.Error(), tc.repo) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s %s token %q: %v, want HTTP %d and %q", tc.repo, tc.file, tc.token, err, tc.status, tc.want)
		}
		if tc.token != "" && strings.Contains(err.Error(), tc.token) {
			t.Errorf("the error prints the token: %v", err)
		}
	}
	c.Token = "hf_secret"
	if _, err := c.File(context.Background(), hub.Model, "Org/Gated", "main", "tokenizer.json"); err != nil {
		t.Fatalf("with the token: %v", err)
	}
	if _, err := c.File(context.Background(), hub.Model, "../etc", "main", "tokenizer.json"); err == nil || !strings.Contains(err.Error(), "not a hub repository id") {
		t.Fatalf("bad repo id: %v", err)
	}
	if _, err := c.File(context.Background(), hub.Model, "Org/Gated", "main", "../../x"); err == nil || !strings.Contains(err.Error(), "bad file name") {
		t.Fatalf("bad file: %v", err)
	}
}

func TestLargeFileRedirectAndChecksum(t *testing.T) {
	h := hubtest.New()
	defer h.Close()
	data := make([]byte, hubtest.LargeFile+12345)
	r := rand.New(rand.NewPCG(1, 2))
	for i := range data {
		data[i] = byte(r.UintN(256))
	}
	commit := h.Add(hub.Dataset, "Org/Big", "main", map[string]hubtest.File{"data/part-0.json": {Data: data}})
	cache := t.TempDir()
	c := config(h, cache)
	p, err := c.File(context.Background(), hub.Dataset, "Org/Big", "main", "data/part-0.json")
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(cache, "datasets--Org--Big", "snapshots", commit, "data", "part-0.json"); p != want {
		t.Fatalf("path %s, want %s", p, want)
	}
	sum := sha256.Sum256(data)
	target, _ := os.Readlink(p)
	if target != "../../../blobs/"+hex.EncodeToString(sum[:]) {
		t.Fatalf("link %q, want the blob named by the SHA-256 (X-Linked-Etag)", target)
	}
	if b, _ := os.ReadFile(p); !bytes.Equal(b, data) {
		t.Fatal("bytes differ")
	}
	// A second file with the same bytes in a new commit reuses the blob.
	n := h.Downloads.Load()
	h.Add(hub.Dataset, "Org/Big", "main", map[string]hubtest.File{"data/part-0.json": {Data: data}, "README.md": {Data: []byte("x")}})
	c.Refresh = true
	if _, err := c.File(context.Background(), hub.Dataset, "Org/Big", "main", "data/part-0.json"); err != nil || h.Downloads.Load() != n {
		t.Fatalf("same blob downloaded again: %v, %d", err, h.Downloads.Load()-n)
	}
	entries, _ := os.ReadDir(filepath.Join(cache, "datasets--Org--Big", "blobs"))
	if len(entries) != 1 {
		t.Fatalf("blobs: %d (an .incomplete left behind?)", len(entries))
	}
}

func TestEnvironment(t *testing.T) {
	home := t.TempDir()
	for _, k := range []string{"HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE", "HF_TOKEN", "HUGGING_FACE_HUB_TOKEN", "HF_TOKEN_PATH", "HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "HF_HUB_DISABLE_PROGRESS_BARS"} {
		t.Setenv(k, "")
	}
	t.Setenv("HF_HOME", home)
	t.Setenv("HF_ENDPOINT", "http://127.0.0.1:9/")
	os.WriteFile(filepath.Join(home, "token"), []byte("hf_fromfile\n"), 0o600)
	c := hub.FromEnv()
	if c.Endpoint != "http://127.0.0.1:9" || c.CacheDir != filepath.Join(home, "hub") || c.Token != "hf_fromfile" || c.Offline || c.Progress == nil {
		t.Fatalf("%+v", c)
	}
	t.Setenv("HF_TOKEN", "hf_env")
	t.Setenv("HF_HUB_OFFLINE", "1")
	t.Setenv("HF_HUB_CACHE", "/x/cache")
	t.Setenv("HF_HUB_DISABLE_PROGRESS_BARS", "true")
	c = hub.FromEnv()
	if c.Token != "hf_env" || !c.Offline || c.CacheDir != "/x/cache" || c.Progress != nil {
		t.Fatalf("%+v", c)
	}
	// An unreachable hub with nothing cached: the error says so and how to
	// use a mirror or the cache only.
	c = hub.Config{Endpoint: "http://127.0.0.1:9", CacheDir: t.TempDir()}
	_, err := c.File(context.Background(), hub.Model, "Org/M", "", "tokenizer.json")
	if err == nil || !strings.Contains(err.Error(), "Org/M tokenizer.json at main") || !strings.Contains(err.Error(), "HF_ENDPOINT") {
		t.Fatalf("unreachable: %v", err)
	}
}

// The cache is found the way huggingface_hub finds it: the first of
// HF_HUB_CACHE, HUGGINGFACE_HUB_CACHE, HF_HOME/hub, XDG_CACHE_HOME/
// huggingface/hub and ~/.cache/huggingface/hub that is set.
func TestCacheDirPrecedence(t *testing.T) {
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
		if got := hub.CacheDir(); got != e.want {
			t.Errorf("with %s and those below it set: %v, want %s", e.name, got, e.want)
		}
		t.Setenv(e.name, "")
	}
	if got := hub.CacheDir(); got != filepath.Join(home, ".cache", "huggingface", "hub") {
		t.Errorf("nothing set: %v", got)
	}
}
