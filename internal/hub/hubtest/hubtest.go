// Package hubtest is a local stand-in for a Hugging Face hub on loopback:
// it speaks the parts of the hub's HTTP API that clients download
// through (resolve with HEAD and GET, the redirect of a large file's bytes
// to a separate store, X-Repo-Commit, ETag and X-Linked-Etag, X-Error-Code,
// private repositories behind a token, and the paths-info API that the
// hub's JavaScript client asks first), so downloads are tested with no
// network.
package hubtest

import (
	"bytes"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// LargeFile is the size from which a file is stored as a large (LFS)
// file: its ETag is its SHA-256 and its bytes are served from the store
// the resolve answer redirects to, as the hub does.
const LargeFile = 1 << 20

// File is one file of a repository's commit.
type File struct {
	Data []byte
}

// Repo is a repository: its commits by hash, branches and tags naming
// commits, and whether it needs a token.
type Repo struct {
	Type    string // "model" or "dataset"
	Commits map[string]map[string]File
	Refs    map[string]string // branch or tag → commit
	Token   string            // when set, requests need "Bearer <Token>"
	Gated   bool              // with Token: a token-less request reads GatedRepo
}

// Hub is the stand-in server.
type Hub struct {
	*httptest.Server
	mu    sync.Mutex
	repos map[string]*Repo // "model:ORG/NAME"
	// Requests counts every request the hub answered; Downloads the
	// GETs that served a file's bytes.
	Requests, Downloads atomic.Int64
}

// New starts a hub on 127.0.0.1.
func New() *Hub {
	h := &Hub{repos: map[string]*Repo{}}
	h.Server = httptest.NewServer(http.HandlerFunc(h.serve))
	return h
}

// Commit is the hash the hub gives a commit's contents: the SHA-1 of its
// file names and bytes (a stand-in for git's).
func Commit(files map[string]File) string {
	s := sha1.New()
	for _, name := range slices.Sorted(maps.Keys(files)) {
		fmt.Fprintf(s, "%s\x00%d\x00", name, len(files[name].Data))
		s.Write(files[name].Data)
	}
	return hex.EncodeToString(s.Sum(nil))
}

// Add puts files on repo's branch (creating either), as a new commit,
// and returns the commit's hash.
func (h *Hub) Add(typ, repo, branch string, files map[string]File) string {
	h.mu.Lock()
	defer h.mu.Unlock()
	key := typ + ":" + repo
	r := h.repos[key]
	if r == nil {
		r = &Repo{Type: typ, Commits: map[string]map[string]File{}, Refs: map[string]string{}}
		h.repos[key] = r
	}
	c := Commit(files)
	r.Commits[c] = files
	r.Refs[branch] = c
	return c
}

// Protect makes repo need token; gated says a token-less request is told
// the repository is gated rather than not found.
func (h *Hub) Protect(typ, repo, token string, gated bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if r := h.repos[typ+":"+repo]; r != nil {
		r.Token, r.Gated = token, gated
	}
}

// Tag names commit on repo as tag.
func (h *Hub) Tag(typ, repo, tag, commit string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.repos[typ+":"+repo].Refs[tag] = commit
}

func etag(data []byte) (string, bool) {
	if len(data) >= LargeFile {
		s := sha256.Sum256(data)
		return hex.EncodeToString(s[:]), true
	}
	// A small file's ETag is its git blob hash, as the hub's is.
	s := sha1.New()
	fmt.Fprintf(s, "blob %d\x00", len(data))
	s.Write(data)
	return hex.EncodeToString(s.Sum(nil)), false
}

func fail(w http.ResponseWriter, status int, code, msg string) {
	if code != "" {
		w.Header().Set("X-Error-Code", code)
	}
	w.Header().Set("X-Error-Message", msg)
	http.Error(w, msg, status)
}

func (h *Hub) serve(w http.ResponseWriter, r *http.Request) {
	h.Requests.Add(1)
	p := r.URL.Path
	switch {
	case strings.HasPrefix(p, "/lfs-store/"):
		h.store(w, r, strings.TrimPrefix(p, "/lfs-store/"))
		return
	case strings.HasPrefix(p, "/api/"):
		h.api(w, r, strings.TrimPrefix(p, "/api/"))
		return
	}
	typ := "model"
	if rest, ok := strings.CutPrefix(p, "/datasets/"); ok {
		typ, p = "dataset", "/"+rest
	}
	// /ORG/NAME/resolve/REV/FILE (or /NAME/resolve/...)
	parts := strings.SplitN(strings.TrimPrefix(p, "/"), "/resolve/", 2)
	if len(parts) != 2 {
		http.NotFound(w, r)
		return
	}
	repo, rest := parts[0], parts[1]
	rev, file, ok := strings.Cut(rest, "/")
	if !ok {
		http.NotFound(w, r)
		return
	}
	commit, files, st := h.lookup(w, r, typ, repo, rev)
	if files == nil {
		_ = st
		return
	}
	f, ok := files[file]
	if !ok {
		fail(w, http.StatusNotFound, "EntryNotFound", fmt.Sprintf("%s does not exist on %q", file, rev))
		return
	}
	tag, large := etag(f.Data)
	w.Header().Set("X-Repo-Commit", commit)
	if large {
		w.Header().Set("X-Linked-Etag", `"`+tag+`"`)
		w.Header().Set("X-Linked-Size", strconv.Itoa(len(f.Data)))
		w.Header().Set("ETag", `"`+Commit(map[string]File{file: f})+`"`) // the pointer file's, not the bytes'
		w.Header().Set("Location", h.URL+"/lfs-store/"+tag+"?X-Amz-Signature=stand-in")
		w.WriteHeader(http.StatusFound)
		return
	}
	w.Header().Set("ETag", `"`+tag+`"`)
	h.serveBytes(w, r, f.Data)
}

// serveBytes answers a GET (a Range too: the JavaScript client asks for
// bytes=0-0 to learn the size) or HEAD of data, counting a download when
// more than a byte goes out.
func (h *Hub) serveBytes(w http.ResponseWriter, r *http.Request, data []byte) {
	if r.Method == http.MethodGet && r.Header.Get("Range") != "bytes=0-0" {
		h.Downloads.Add(1)
	}
	http.ServeContent(w, r, "", time.Time{}, bytes.NewReader(data))
}

// lookup finds repo's commit for rev, answering the error itself (and
// returning nil files) as the hub would.
func (h *Hub) lookup(w http.ResponseWriter, r *http.Request, typ, repo, rev string) (string, map[string]File, int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	rp := h.repos[typ+":"+repo]
	auth := r.Header.Get("Authorization")
	if rp == nil || rp.Token != "" && auth != "Bearer "+rp.Token && !rp.Gated {
		fail(w, http.StatusUnauthorized, "RepoNotFound", "Repository Not Found for url")
		return "", nil, 401
	}
	if rp.Token != "" && auth != "Bearer "+rp.Token {
		fail(w, http.StatusForbidden, "GatedRepo", "Access to model "+repo+" is restricted")
		return "", nil, 403
	}
	commit := rev
	if c, ok := rp.Refs[rev]; ok {
		commit = c
	}
	files, ok := rp.Commits[commit]
	if !ok {
		fail(w, http.StatusNotFound, "RevisionNotFound", "Invalid rev id: "+rev)
		return "", nil, 404
	}
	return commit, files, 200
}

// store serves a large file's bytes by their SHA-256, as the hub's
// object store does behind its redirect (no token asked for: the URL is
// signed).
func (h *Hub) store(w http.ResponseWriter, r *http.Request, sha string) {
	h.mu.Lock()
	var data []byte
	for _, rp := range h.repos {
		for _, files := range rp.Commits {
			for _, f := range files {
				if tag, large := etag(f.Data); large && tag == sha {
					data = f.Data
				}
			}
		}
	}
	h.mu.Unlock()
	if data == nil {
		http.NotFound(w, r)
		return
	}
	w.Header().Set("ETag", `"`+sha+`"`)
	h.serveBytes(w, r, data)
}

// api answers POST /api/{models,datasets}/ORG/NAME/paths-info/REV, which
// the hub's JavaScript client asks before a download, and GET
// /api/{models,datasets}/ORG/NAME/revision/REV, the repository's files.
func (h *Hub) api(w http.ResponseWriter, r *http.Request, p string) {
	typ, rest, ok := strings.Cut(p, "/")
	if !ok || (typ != "models" && typ != "datasets") {
		http.NotFound(w, r)
		return
	}
	if parts := strings.SplitN(rest, "/revision/", 2); len(parts) == 2 && r.Method == http.MethodGet {
		h.revision(w, r, strings.TrimSuffix(typ, "s"), parts[0], parts[1])
		return
	}
	parts := strings.SplitN(rest, "/paths-info/", 2)
	if len(parts) != 2 || r.Method != http.MethodPost {
		http.NotFound(w, r)
		return
	}
	commit, files, _ := h.lookup(w, r, strings.TrimSuffix(typ, "s"), parts[0], parts[1])
	if files == nil {
		return
	}
	var body struct {
		Paths []string `json:"paths"`
	}
	if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	type lfs struct {
		Oid  string `json:"oid"`
		Size int    `json:"size"`
	}
	type entry struct {
		Type       string            `json:"type"`
		Path       string            `json:"path"`
		Oid        string            `json:"oid"`
		Size       int               `json:"size"`
		LFS        *lfs              `json:"lfs,omitempty"`
		LastCommit map[string]string `json:"lastCommit"`
	}
	out := []entry{}
	for _, name := range body.Paths {
		f, ok := files[name]
		if !ok {
			continue
		}
		tag, large := etag(f.Data)
		e := entry{Type: "file", Path: name, Oid: tag, Size: len(f.Data), LastCommit: map[string]string{"id": commit, "title": "stand-in", "date": "2026-01-01T00:00:00.000Z"}}
		if large {
			e.Oid = Commit(map[string]File{name: f})
			e.LFS = &lfs{Oid: tag, Size: len(f.Data)}
		}
		out = append(out, e)
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(out)
}

// revision answers the revision API (huggingface_hub's repo_info): the
// commit the revision names, and its files as siblings.
func (h *Hub) revision(w http.ResponseWriter, r *http.Request, typ, repo, rev string) {
	commit, files, _ := h.lookup(w, r, typ, repo, rev)
	if files == nil {
		return
	}
	type sibling struct {
		RFilename string `json:"rfilename"`
	}
	sib := []sibling{}
	for _, name := range slices.Sorted(maps.Keys(files)) {
		sib = append(sib, sibling{name})
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(map[string]any{"id": repo, "sha": commit, "siblings": sib, "private": false})
}
