// Package hub fetches files from a Hugging Face hub (the public one, a
// mirror, or an enterprise hub) into the hub cache, in the layout that
// huggingface_hub reads and writes, so a cache filled by either tool
// serves both:
//
//	<cache>/models--ORG--NAME/
//	  blobs/<etag>                    the file's bytes, named by its ETag
//	  snapshots/<commit>/<file>      a relative link to ../../blobs/<etag>
//	  refs/<revision>                the commit a branch or tag resolved to
//
// (datasets--ORG--NAME for a dataset). A file is looked up as
// huggingface_hub does: a HEAD of <endpoint>/ORG/NAME/resolve/<revision>/
// <file> gives the commit (X-Repo-Commit), the ETag (X-Linked-Etag for a
// large file, whose bytes a redirect puts elsewhere) and the size; a file
// already in the cache under that commit and ETag is not fetched again.
// HF_ENDPOINT, HF_TOKEN (or HUGGING_FACE_HUB_TOKEN, or the token file
// under HF_HOME), HF_HUB_OFFLINE, HF_HUB_CACHE and HF_HOME are honoured
// as huggingface_hub honours them.
package hub

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// DefaultEndpoint is the public hub, which HF_ENDPOINT replaces.
const DefaultEndpoint = "https://huggingface.co"

// Repo types, as the hub names them.
const (
	Model   = "model"
	Dataset = "dataset"
)

// Config is how to reach the hub and where its cache is.
type Config struct {
	Endpoint string // HF_ENDPOINT, default DefaultEndpoint
	Token    string // HF_TOKEN: sent as a bearer token to the endpoint only
	Offline  bool   // HF_HUB_OFFLINE: the cache only
	CacheDir string // HF_HUB_CACHE, HF_HOME/hub, …
	// Progress receives the download's progress bar (nil: none).
	Progress io.Writer
	// Client makes the requests (nil: a client with a 10 s connect and
	// header timeout and no redirects followed on its own).
	Client    *http.Client
	UserAgent string // default DefaultUserAgent
	// Refresh asks the hub what a branch or tag names now even when the
	// cache holds a copy (huggingface_hub's default); without it a cached
	// revision serves with no request.
	Refresh bool
}

// DefaultUserAgent is the User-Agent of requests whose Config names none.
var DefaultUserAgent = "aiperf-action"

// FromEnv reads the hub's settings from the environment, as
// huggingface_hub does.
func FromEnv() Config {
	c := Config{Endpoint: strings.TrimRight(os.Getenv("HF_ENDPOINT"), "/"), CacheDir: CacheDir(), Progress: os.Stderr}
	if c.Endpoint == "" {
		c.Endpoint = DefaultEndpoint
	}
	c.Token = token()
	c.Offline = truthy(os.Getenv("HF_HUB_OFFLINE")) || truthy(os.Getenv("TRANSFORMERS_OFFLINE"))
	if truthy(os.Getenv("HF_HUB_DISABLE_PROGRESS_BARS")) {
		c.Progress = nil
	}
	return c
}

func truthy(s string) bool {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "1", "on", "yes", "true":
		return true
	}
	return false
}

// token is HF_TOKEN, else the older HUGGING_FACE_HUB_TOKEN, else the file
// `hf auth login` writes (HF_TOKEN_PATH, default HF_HOME/token).
func token() string {
	for _, k := range []string{"HF_TOKEN", "HUGGING_FACE_HUB_TOKEN"} {
		if t := strings.TrimSpace(os.Getenv(k)); t != "" {
			return t
		}
	}
	p := os.Getenv("HF_TOKEN_PATH")
	if p == "" {
		p = filepath.Join(home(), "token")
	}
	if b, err := os.ReadFile(p); err == nil {
		return strings.TrimSpace(string(b))
	}
	return ""
}

// home is HF_HOME, else XDG_CACHE_HOME/huggingface, else
// ~/.cache/huggingface.
func home() string {
	if d := os.Getenv("HF_HOME"); d != "" {
		return d
	}
	if d := os.Getenv("XDG_CACHE_HOME"); d != "" {
		return filepath.Join(d, "huggingface")
	}
	if h, err := os.UserHomeDir(); err == nil {
		return filepath.Join(h, ".cache", "huggingface")
	}
	return filepath.Join(os.TempDir(), "huggingface")
}

// CacheDir is the hub cache: HF_HUB_CACHE, then the older
// HUGGINGFACE_HUB_CACHE, then HF_HOME/hub (HF_HOME itself defaulting to
// XDG_CACHE_HOME/huggingface, then ~/.cache/huggingface).
func CacheDir() string {
	for _, k := range []string{"HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE"} {
		if d := os.Getenv(k); d != "" {
			return d
		}
	}
	return filepath.Join(home(), "hub")
}

// Folder is repo's folder in the cache: models--ORG--NAME.
func Folder(cache, typ, repo string) string {
	return filepath.Join(cache, typ+"s--"+strings.ReplaceAll(repo, "/", "--"))
}

var (
	repoID     = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*(/[A-Za-z0-9][A-Za-z0-9._-]*)?$`)
	commitHash = regexp.MustCompile(`^[0-9a-f]{40}$`)
	sha256Hex  = regexp.MustCompile(`^[0-9a-f]{64}$`)
)

// IsRepoID says whether s reads as a hub repository: NAME or ORG/NAME.
func IsRepoID(s string) bool {
	return repoID.MatchString(s) && !strings.Contains(s, "..") && !strings.HasSuffix(s, ".")
}

// Error is a hub's refusal or a file the cache lacks, naming the
// repository, revision and file.
type Error struct {
	Repo, Type, Revision, File string
	Status                     int    // the HTTP status; 0 when no request was answered
	Code                       string // X-Error-Code: RepoNotFound, GatedRepo, RevisionNotFound, EntryNotFound
	Msg                        string
}

func (e *Error) Error() string {
	what := e.Repo
	if e.Type == Dataset {
		what = "dataset " + e.Repo
	}
	s := fmt.Sprintf("%s %s at %s: ", what, e.File, e.Revision)
	if e.Status != 0 {
		s += "HTTP " + strconv.Itoa(e.Status) + ": "
	}
	return s + e.Msg
}

// NotFound says whether err is a hub's answer that the file, revision or
// repository does not exist (as against a refusal or a network failure).
func NotFound(err error) bool {
	var e *Error
	return errors.As(err, &e) && (e.Code == "EntryNotFound" || e.Code == "RevisionNotFound" || e.Code == "RepoNotFound" || e.Status == http.StatusNotFound)
}

// Cached is the path of file at revision in repo's cache folder, or ""
// when the cache lacks it: a commit hash names its snapshot, a branch or
// tag the commit refs/<revision> holds.
func Cached(cache, typ, repo, revision, file string) string {
	folder := Folder(cache, typ, repo)
	commit := revision
	if !commitHash.MatchString(revision) {
		// A branch or tag names the commit its ref holds; without a ref
		// the revision may be a commit's folder itself (a short hash a
		// cache was filled by hand with), as huggingface_hub reads it.
		if b, err := os.ReadFile(filepath.Join(folder, "refs", filepath.FromSlash(revision))); err == nil {
			commit = strings.TrimSpace(string(b))
		}
	}
	if commit == "" || commit == "." || commit == ".." || strings.ContainsAny(commit, `/\`) {
		return ""
	}
	p := filepath.Join(folder, "snapshots", commit, filepath.FromSlash(file))
	if st, err := os.Stat(p); err == nil && !st.IsDir() {
		return p
	}
	return ""
}

// File is the local path of file (a path inside the repository, with
// slashes) in repo (of type typ, Model or Dataset) at revision (a
// branch, tag or commit; "" is main), downloading it into the cache when
// the cache does not hold that commit's copy. Offline, or with the hub
// unreachable, a cached copy of the revision serves; without one the error
// says so.
func (c Config) File(ctx context.Context, typ, repo, revision, file string) (string, error) {
	if revision == "" {
		revision = "main"
	}
	if typ == "" {
		typ = Model
	}
	fail := func(status int, code, format string, a ...any) error {
		return &Error{Repo: repo, Type: typ, Revision: revision, File: file, Status: status, Code: code, Msg: fmt.Sprintf(format, a...)}
	}
	if !IsRepoID(repo) {
		return "", fail(0, "", "not a hub repository id (want ORG/NAME)")
	}
	if err := checkFile(file); err != nil {
		return "", fail(0, "", "%v", err)
	}
	cached := Cached(c.CacheDir, typ, repo, revision, file)
	if cached != "" && (commitHash.MatchString(revision) || !c.Refresh) {
		// A commit's files never change; a branch or tag cached once
		// serves until Refresh asks the hub again, so a run's inputs do
		// not move under it (the run records the file's digest).
		return cached, nil
	}
	if c.Offline {
		if cached != "" {
			return cached, nil
		}
		return "", fail(0, "", "HF_HUB_OFFLINE is set and the cache %s does not hold it (fetch it with the network on, or unset HF_HUB_OFFLINE)", Folder(c.CacheDir, typ, repo))
	}
	m, err := c.head(ctx, typ, repo, revision, file)
	if err != nil {
		var he *Error
		if !errors.As(err, &he) && cached != "" {
			// The hub is unreachable: the cached copy serves, as
			// huggingface_hub's does.
			return cached, nil
		}
		if he == nil {
			return "", fail(0, "", "%v (set HF_HUB_OFFLINE=1 to use only the cache %s, or HF_ENDPOINT for a mirror)", err, c.CacheDir)
		}
		return "", err
	}
	folder := Folder(c.CacheDir, typ, repo)
	pointer := filepath.Join(folder, "snapshots", m.commit, filepath.FromSlash(file))
	blob := filepath.Join(folder, "blobs", m.etag)
	if _, err := os.Stat(pointer); err != nil {
		if _, err := os.Stat(blob); err != nil {
			if err := c.download(ctx, m, repo, file, blob); err != nil {
				return "", fail(0, "", "%v", err)
			}
		}
		if err := link(blob, pointer); err != nil {
			return "", fail(0, "", "%v", err)
		}
	}
	if revision != m.commit {
		if err := writeRef(folder, revision, m.commit); err != nil {
			return "", fail(0, "", "%v", err)
		}
	}
	return pointer, nil
}

func checkFile(f string) error {
	if f == "" || strings.HasPrefix(f, "/") || strings.Contains(f, "\\") {
		return fmt.Errorf("bad file name %q", f)
	}
	for _, part := range strings.Split(f, "/") {
		if part == "" || part == "." || part == ".." {
			return fmt.Errorf("bad file name %q", f)
		}
	}
	return nil
}

// meta is what the resolve endpoint's HEAD says of a file.
type meta struct {
	commit, etag string
	size         int64
	location     string // where the bytes are: the resolve URL, or a redirect's
}

func (c Config) client() *http.Client {
	if c.Client != nil {
		return c.Client
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.ResponseHeaderTimeout = 30 * time.Second
	return &http.Client{Transport: tr, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

func (c Config) resolveURL(typ, repo, revision, file string) string {
	prefix := ""
	if typ != Model {
		prefix = typ + "s/"
	}
	segs := strings.Split(file, "/")
	for i, s := range segs {
		segs[i] = url.PathEscape(s)
	}
	return c.Endpoint + "/" + prefix + repo + "/resolve/" + url.PathEscape(revision) + "/" + strings.Join(segs, "/")
}

func (c Config) request(ctx context.Context, method, u string, withToken bool) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, method, u, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept-Encoding", "identity")
	ua := c.UserAgent
	if ua == "" {
		ua = DefaultUserAgent
	}
	req.Header.Set("User-Agent", ua)
	if withToken && c.Token != "" {
		req.Header.Set("Authorization", "Bearer "+c.Token)
	}
	return c.client().Do(req)
}

// head asks the resolve endpoint for the file's commit, ETag and size,
// following redirects on the hub's own host (a renamed repository) but not
// one elsewhere (the bytes' store), whose URL becomes the location.
func (c Config) head(ctx context.Context, typ, repo, revision, file string) (*meta, error) {
	u := c.resolveURL(typ, repo, revision, file)
	for hops := 0; hops < 10; hops++ {
		resp, err := c.request(ctx, http.MethodHead, u, sameHost(c.Endpoint, u))
		if err != nil {
			return nil, err
		}
		resp.Body.Close()
		if resp.StatusCode >= 300 && resp.StatusCode < 400 {
			loc, err := resp.Location()
			if err != nil {
				return nil, fmt.Errorf("HEAD %s: redirect without a Location", u)
			}
			if loc.Host == "" || sameHost(c.Endpoint, loc.String()) && resp.Header.Get("X-Repo-Commit") == "" {
				u = loc.String() // a renamed repository: follow
				continue
			}
			return metaOf(resp, loc.String(), repo, typ, revision, file)
		}
		if resp.StatusCode != http.StatusOK {
			return nil, hubError(resp, repo, typ, revision, file, c.Token != "")
		}
		return metaOf(resp, u, repo, typ, revision, file)
	}
	return nil, fmt.Errorf("HEAD %s: more than 10 redirects", u)
}

func sameHost(endpoint, u string) bool {
	a, err1 := url.Parse(endpoint)
	b, err2 := url.Parse(u)
	return err1 == nil && err2 == nil && (b.Host == "" || a.Host == b.Host)
}

func metaOf(resp *http.Response, location, repo, typ, revision, file string) (*meta, error) {
	m := &meta{commit: resp.Header.Get("X-Repo-Commit"), location: location}
	m.etag = normalizeETag(resp.Header.Get("X-Linked-Etag"))
	if m.etag == "" {
		m.etag = normalizeETag(resp.Header.Get("ETag"))
	}
	size := resp.Header.Get("X-Linked-Size")
	if size == "" {
		size = resp.Header.Get("Content-Length")
	}
	m.size, _ = strconv.ParseInt(size, 10, 64)
	bad := func(what string) error {
		return &Error{Repo: repo, Type: typ, Revision: revision, File: file, Status: resp.StatusCode,
			Msg: "the answer has no " + what + ": HF_ENDPOINT must be a Hugging Face hub or a mirror that passes its headers through"}
	}
	switch {
	case !commitHash.MatchString(m.commit):
		return nil, bad("X-Repo-Commit (the commit the revision resolves to)")
	case m.etag == "" || strings.ContainsAny(m.etag, `/\`) || m.etag == "." || m.etag == "..":
		return nil, bad("usable ETag")
	}
	return m, nil
}

// normalizeETag drops a weak ETag's W/ and the quotes, as the hub cache's
// blob names do.
func normalizeETag(s string) string {
	s = strings.TrimPrefix(strings.TrimSpace(s), "W/")
	return strings.Trim(s, `"`)
}

func hubError(resp *http.Response, repo, typ, revision, file string, haveToken bool) error {
	code := resp.Header.Get("X-Error-Code")
	msg := resp.Header.Get("X-Error-Message")
	e := &Error{Repo: repo, Type: typ, Revision: revision, File: file, Status: resp.StatusCode, Code: code}
	switch {
	case code == "RepoNotFound" || resp.StatusCode == http.StatusUnauthorized && code == "":
		e.Msg = "repository not found"
		if haveToken {
			e.Msg += ", or the token (HF_TOKEN) has no access to it"
		} else {
			e.Msg += ", or it is private or gated: set HF_TOKEN to a token with access"
		}
	case code == "GatedRepo":
		e.Msg = "the repository is gated: accept its terms on the hub with the account whose token is in HF_TOKEN"
	case code == "RevisionNotFound":
		e.Msg = "no such revision (--tokenizer-revision: a branch, tag or commit of the repository)"
	case code == "EntryNotFound":
		e.Msg = "the repository has no such file at this revision"
	case resp.StatusCode == http.StatusNotFound:
		e.Msg = "not found"
	default:
		e.Msg = http.StatusText(resp.StatusCode)
	}
	if msg != "" {
		e.Msg += " (the hub says: " + oneLine(msg) + ")"
	}
	return e
}

func oneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	return s
}

// download writes the file's bytes to blob through blob.incomplete,
// checking the size, and the SHA-256 where the ETag is one (a large
// file's is).
func (c Config) download(ctx context.Context, m *meta, repo, file, blob string) error {
	if err := os.MkdirAll(filepath.Dir(blob), 0o755); err != nil {
		return err
	}
	resp, err := c.request(ctx, http.MethodGet, m.location, sameHost(c.Endpoint, m.location))
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: HTTP %d", redact(m.location), resp.StatusCode)
	}
	tmp := blob + ".incomplete"
	f, err := os.Create(tmp)
	if err != nil {
		return err
	}
	defer os.Remove(tmp) // a no-op once renamed
	h := sha256.New()
	bar := newBar(c.Progress, repo+" "+path.Base(file), m.size)
	n, err := io.Copy(io.MultiWriter(f, h, bar), resp.Body)
	bar.done(err == nil)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("downloading %s: %w", file, err)
	}
	if m.size > 0 && n != m.size {
		return fmt.Errorf("downloading %s: got %d bytes, the hub said %d", file, n, m.size)
	}
	if sha256Hex.MatchString(m.etag) {
		if got := hex.EncodeToString(h.Sum(nil)); got != m.etag {
			return fmt.Errorf("downloading %s: its SHA-256 is %s, the hub's ETag %s", file, got, m.etag)
		}
	}
	return os.Rename(tmp, blob)
}

// redact drops a URL's query, where a store's signature is.
func redact(u string) string {
	if i := strings.IndexByte(u, '?'); i >= 0 {
		return u[:i] + "?…"
	}
	return u
}

// link makes pointer a relative symbolic link to blob, as the hub cache
// has it (a copy where links are refused).
func link(blob, pointer string) error {
	if err := os.MkdirAll(filepath.Dir(pointer), 0o755); err != nil {
		return err
	}
	rel, err := filepath.Rel(filepath.Dir(pointer), blob)
	if err != nil {
		return err
	}
	tmp := pointer + ".tmp-link"
	os.Remove(tmp)
	if err := os.Symlink(rel, tmp); err != nil {
		b, rerr := os.ReadFile(blob)
		if rerr != nil {
			return rerr
		}
		if err := os.WriteFile(tmp, b, 0o644); err != nil {
			return err
		}
	}
	return os.Rename(tmp, pointer)
}

// writeRef records the commit revision resolved to, atomically.
func writeRef(folder, revision, commit string) error {
	p := filepath.Join(folder, "refs", filepath.FromSlash(revision))
	if b, err := os.ReadFile(p); err == nil && strings.TrimSpace(string(b)) == commit {
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(p), ".ref-*")
	if err != nil {
		return err
	}
	_, err = tmp.WriteString(commit)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(tmp.Name())
		return err
	}
	return os.Rename(tmp.Name(), p)
}
