// Package ghfake is a fake GitHub REST API for tests: an httptest server
// holding a tiny git object store (refs, commits, trees, blobs) and issue
// comments, that records every request. go-github is pointed at it.
package ghfake

import (
	"crypto/sha1"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-github/v66/github"
)

// Request is one recorded API call.
type Request struct {
	Method, Path string
	Body         string
}

// Comment is an issue comment.
type Comment struct {
	ID   int64  `json:"id"`
	Body string `json:"body"`
	URL  string `json:"html_url"`
}

// Server is the fake API.
type Server struct {
	*httptest.Server
	Owner, Repo string

	mu       sync.Mutex
	Reqs     []Request
	blobs    map[string]string
	trees    map[string]map[string]string // path → blob sha
	commits  map[string]commit
	Refs     map[string]string // "heads/x" → commit sha
	Comments map[int][]Comment // by issue number
	nextID   int64

	// ForbidWrites answers 403 to comment writes (a fork PR's read-only token).
	ForbidWrites bool
	// MoveBeforeUpdate advances the branch with a foreign commit just before
	// this many UpdateRef calls, which then fail as not a fast forward.
	MoveBeforeUpdate int
	// MergeBase is what the compare API reports.
	MergeBase string
	// Pulls are the open pull requests GET pulls lists (filtered by head).
	Pulls []Pull
	// CheckRuns are the check runs created (POST check-runs), as sent.
	CheckRuns []map[string]any
	// Runs are the repository's workflow runs, newest first, with their
	// artifacts (GET actions/runs, its artifacts, and their zips through a
	// redirect, as GitHub serves them).
	Runs []Run
	// ForbidActions answers 403 to the Actions API (a token without
	// actions: read).
	ForbidActions bool
}

// Run is a workflow run and its artifacts.
type Run struct {
	ID        int64
	HeadSHA   string
	Event     string
	Artifacts []Artifact
}

// Artifact is a run's artifact: its name and its zip.
type Artifact struct {
	ID   int64
	Name string
	Zip  []byte
}

// Pull is an open pull request: its number, and its head's repository
// ("owner/name"), branch and commit.
type Pull struct {
	Number                     int
	HeadRepo, HeadRef, HeadSHA string
	Labels                     []string
	MergeSHA                   string // the commit it was merged as (GET commits/{sha}/pulls)
}

type commit struct{ tree, parent string }

// New starts a fake for owner/repo.
func New(t *testing.T, owner, repo string) *Server {
	s := &Server{Owner: owner, Repo: repo, blobs: map[string]string{}, trees: map[string]map[string]string{},
		commits: map[string]commit{}, Refs: map[string]string{}, Comments: map[int][]Comment{}, nextID: 1000}
	s.Server = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(s.Close)
	return s
}

// Client is a go-github client for the fake.
func (s *Server) Client() *github.Client {
	c := github.NewClient(nil)
	u, _ := url.Parse(s.URL + "/")
	c.BaseURL = u
	return c
}

// Writes are the recorded requests that change anything.
func (s *Server) Writes() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Request
	for _, r := range s.Reqs {
		if r.Method != http.MethodGet {
			out = append(out, r)
		}
	}
	return out
}

func hash(parts ...string) string {
	h := sha1.New()
	for _, p := range parts {
		h.Write([]byte(p))
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil))
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.Reqs = append(s.Reqs, Request{r.Method, r.URL.Path, string(body)})
	prefix := "/repos/" + s.Owner + "/" + s.Repo + "/"
	if id, ok := strings.CutPrefix(r.URL.Path, "/blob/artifact/"); ok && r.Method == "GET" {
		// The storage an artifact's zip redirects to: no API, no token.
		s.blob(w, id, r.Header.Get("Authorization") != "")
		return
	}
	if !strings.HasPrefix(r.URL.Path, prefix) {
		http.Error(w, `{"message":"Not Found"}`, http.StatusNotFound)
		return
	}
	p := strings.TrimPrefix(r.URL.Path, prefix)
	rp := reply{w}
	switch {
	case r.Method == "GET" && strings.HasPrefix(p, "git/ref/"):
		s.getRef(rp, r, p, body)
	case r.Method == "POST" && p == "git/refs":
		s.createRef(rp, r, p, body)
	case r.Method == "PATCH" && strings.HasPrefix(p, "git/refs/"):
		s.updateRef(rp, r, p, body)
	case r.Method == "GET" && strings.HasPrefix(p, "git/commits/"):
		s.getCommit(rp, r, p, body)
	case r.Method == "POST" && p == "git/commits":
		s.createCommit(rp, r, p, body)
	case r.Method == "GET" && strings.HasPrefix(p, "git/trees/"):
		s.getTree(rp, r, p, body)
	case r.Method == "POST" && p == "git/trees":
		s.createTree(rp, r, p, body)
	case r.Method == "GET" && strings.HasPrefix(p, "git/blobs/"):
		s.getBlob(rp, r, p, body)
	case r.Method == "POST" && p == "git/blobs":
		s.createBlob(rp, r, p, body)
	case r.Method == "GET" && p == "pulls":
		s.listPulls(rp, r, p, body)
	case r.Method == "GET" && strings.HasPrefix(p, "commits/") && strings.HasSuffix(p, "/pulls"):
		s.commitPulls(rp, r, p, body)
	case r.Method == "POST" && p == "check-runs":
		s.createCheckRun(rp, r, p, body)
	case r.Method == "GET" && strings.HasPrefix(p, "compare/"):
		s.compare(rp, r, p, body)
	case r.Method == "GET" && strings.HasPrefix(p, "actions/"):
		s.actions(rp, r, strings.TrimPrefix(p, "actions/"))
	case r.Method == "GET" && strings.HasPrefix(p, "issues/") && strings.HasSuffix(p, "/labels"):
		s.labels(rp, p)
	case strings.HasPrefix(p, "issues/comments/") && r.Method == "PATCH":
		s.editComment(rp, r, p, body)
	case strings.HasPrefix(p, "issues/") && strings.HasSuffix(p, "/comments"):
		s.comments(rp, r, p, body)
	default:
		rp.notFound()
	}
}

// reply writes a JSON answer.
type reply struct{ w http.ResponseWriter }

func (rp reply) write(code int, v any) {
	rp.w.Header().Set("Content-Type", "application/json")
	rp.w.WriteHeader(code)
	json.NewEncoder(rp.w).Encode(v)
}

// forbidden answers a write 403 when ForbidWrites is set, and says so.
func (s *Server) forbidden(rp reply) bool {
	if s.ForbidWrites {
		rp.write(403, map[string]string{"message": "Resource not accessible by integration"})
	}
	return s.ForbidWrites
}

func (rp reply) notFound() { rp.write(http.StatusNotFound, map[string]string{"message": "Not Found"}) }

func (s *Server) listPulls(rp reply, r *http.Request, p string, body []byte) {
	head := r.URL.Query().Get("head") // "owner:branch"
	var out []map[string]any
	for _, pr := range s.Pulls {
		owner, _, _ := strings.Cut(pr.HeadRepo, "/")
		if head != "" && head != owner+":"+pr.HeadRef {
			continue
		}
		out = append(out, map[string]any{"number": pr.Number, "state": "open",
			"head": map[string]any{"ref": pr.HeadRef, "sha": pr.HeadSHA, "repo": map[string]any{"full_name": pr.HeadRepo}}})
	}
	rp.write(200, out)
}

func (s *Server) commitPulls(rp reply, r *http.Request, p string, body []byte) {
	sha := strings.TrimSuffix(strings.TrimPrefix(p, "commits/"), "/pulls")
	out := []map[string]any{}
	for _, pr := range s.Pulls {
		if pr.MergeSHA == sha {
			var labels []map[string]string
			for _, l := range pr.Labels {
				labels = append(labels, map[string]string{"name": l})
			}
			out = append(out, map[string]any{"number": pr.Number, "labels": labels, "merge_commit_sha": sha})
		}
	}
	rp.write(200, out)
}

func (s *Server) createCheckRun(rp reply, r *http.Request, p string, body []byte) {
	if s.forbidden(rp) {
		return
	}
	var in map[string]any
	json.Unmarshal(body, &in)
	s.CheckRuns = append(s.CheckRuns, in)
	rp.write(201, map[string]any{"id": len(s.CheckRuns), "html_url": fmt.Sprintf("%s/checks/%d", s.URL, len(s.CheckRuns))})
}

func (s *Server) compare(rp reply, r *http.Request, p string, body []byte) {
	rp.write(200, map[string]any{"merge_base_commit": map[string]string{"sha": s.MergeBase}})
}

func (s *Server) editComment(rp reply, r *http.Request, p string, body []byte) {
	if s.forbidden(rp) {
		return
	}
	id, _ := strconv.ParseInt(strings.TrimPrefix(p, "issues/comments/"), 10, 64)
	var in struct{ Body string }
	json.Unmarshal(body, &in)
	for n, cs := range s.Comments {
		for i := range cs {
			if cs[i].ID == id {
				s.Comments[n][i].Body = in.Body
				rp.write(200, s.Comments[n][i])
				return
			}
		}
	}
	rp.notFound()
}

func (s *Server) comments(rp reply, r *http.Request, p string, body []byte) {
	n, err := strconv.Atoi(strings.TrimSuffix(strings.TrimPrefix(p, "issues/"), "/comments"))
	if err != nil {
		rp.notFound()
		return
	}
	if r.Method == "POST" {
		if s.forbidden(rp) {
			return
		}
		var in struct{ Body string }
		json.Unmarshal(body, &in)
		s.nextID++
		c := Comment{ID: s.nextID, Body: in.Body, URL: fmt.Sprintf("%s/pr/%d#c%d", s.URL, n, s.nextID)}
		s.Comments[n] = append(s.Comments[n], c)
		rp.write(201, c)
		return
	}
	per, _ := strconv.Atoi(r.URL.Query().Get("per_page"))
	if per <= 0 {
		per = 30
	}
	page, _ := strconv.Atoi(r.URL.Query().Get("page"))
	if page <= 0 {
		page = 1
	}
	all := s.Comments[n]
	lo, hi := min((page-1)*per, len(all)), min(page*per, len(all))
	if hi < len(all) {
		rp.w.Header().Set("Link", fmt.Sprintf(`<%s%s?per_page=%d&page=%d>; rel="next"`, s.URL, r.URL.Path, per, page+1))
	}
	rp.write(200, all[lo:hi])
}

// AddComments puts n filler comments on an issue.
func (s *Server) AddComments(issue, n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i := 0; i < n; i++ {
		s.nextID++
		s.Comments[issue] = append(s.Comments[issue], Comment{ID: s.nextID, Body: fmt.Sprintf("comment %d", i)})
	}
}

// labels are a pull request's labels, as of now (GET issues/{n}/labels).
func (s *Server) labels(rp reply, p string) {
	n, _ := strconv.Atoi(strings.TrimSuffix(strings.TrimPrefix(p, "issues/"), "/labels"))
	out := []map[string]string{}
	for _, pr := range s.Pulls {
		if pr.Number == n {
			for _, l := range pr.Labels {
				out = append(out, map[string]string{"name": l})
			}
		}
	}
	rp.write(200, out)
}

// SetLabels sets pull request n's labels (adding it to Pulls if need be).
func (s *Server) SetLabels(n int, labels ...string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i := range s.Pulls {
		if s.Pulls[i].Number == n {
			s.Pulls[i].Labels = labels
			return
		}
	}
	s.Pulls = append(s.Pulls, Pull{Number: n, Labels: labels})
}

// actions serves the Actions API's workflow runs and artifacts.
func (s *Server) actions(rp reply, r *http.Request, p string) {
	if s.ForbidActions {
		rp.write(http.StatusForbidden, map[string]string{"message": "Resource not accessible by integration"})
		return
	}
	switch parts := strings.Split(p, "/"); {
	case p == "runs":
		sha := r.URL.Query().Get("head_sha")
		runs := []map[string]any{}
		for _, run := range s.Runs {
			if sha == "" || run.HeadSHA == sha {
				runs = append(runs, map[string]any{"id": run.ID, "head_sha": run.HeadSHA, "event": run.Event, "status": "completed"})
			}
		}
		rp.write(200, map[string]any{"total_count": len(runs), "workflow_runs": runs})
	case len(parts) == 3 && parts[0] == "runs" && parts[2] == "artifacts":
		id, _ := strconv.ParseInt(parts[1], 10, 64)
		for _, run := range s.Runs {
			if run.ID == id {
				arts := []map[string]any{}
				for _, a := range run.Artifacts {
					arts = append(arts, map[string]any{"id": a.ID, "name": a.Name, "size_in_bytes": len(a.Zip), "expired": false})
				}
				rp.write(200, map[string]any{"total_count": len(arts), "artifacts": arts})
				return
			}
		}
		rp.notFound()
	case len(parts) == 3 && parts[0] == "artifacts" && parts[2] == "zip":
		rp.w.Header().Set("Location", s.URL+"/blob/artifact/"+parts[1])
		rp.w.WriteHeader(http.StatusFound)
	default:
		rp.notFound()
	}
}

// blob serves an artifact's zip; a request that carries a token is
// refused, as it must never be sent to the storage host.
func (s *Server) blob(w http.ResponseWriter, id string, auth bool) {
	if auth {
		http.Error(w, "a token was sent to the artifact storage", http.StatusBadRequest)
		return
	}
	for _, run := range s.Runs {
		for _, a := range run.Artifacts {
			if strconv.FormatInt(a.ID, 10) == id {
				w.Header().Set("Content-Type", "application/zip")
				w.Write(a.Zip)
				return
			}
		}
	}
	http.NotFound(w, nil)
}
