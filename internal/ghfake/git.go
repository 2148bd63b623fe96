package ghfake

// The git object store: refs, commits, trees and blobs, as the Git data
// API serves and takes them (what the baseline branch store uses).

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strings"
)

// Seed puts files on a branch as one commit.
func (s *Server) Seed(branch string, files map[string]string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	tree := map[string]string{}
	for p, c := range files {
		b := hash("blob", c)
		s.blobs[b] = c
		tree[p] = b
	}
	ts := s.putTree(tree)
	cs := hash("commit", ts, s.Refs["heads/"+branch], fmt.Sprint(len(s.commits)))
	s.commits[cs] = commit{ts, s.Refs["heads/"+branch]}
	s.Refs["heads/"+branch] = cs
}

func (s *Server) putTree(t map[string]string) string {
	keys := make([]string, 0, len(t))
	for k := range t {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := []string{"tree"}
	for _, k := range keys {
		parts = append(parts, k, t[k])
	}
	sha := hash(parts...)
	s.trees[sha] = t
	return sha
}

// Files returns the files on a branch.
func (s *Server) Files(branch string) map[string]string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[string]string{}
	c, ok := s.commits[s.Refs["heads/"+branch]]
	if !ok {
		return out
	}
	for p, b := range s.trees[c.tree] {
		out[p] = s.blobs[b]
	}
	return out
}

func (s *Server) getRef(rp reply, r *http.Request, p string, body []byte) {
	name := strings.TrimPrefix(p, "git/ref/")
	sha, ok := s.Refs[name]
	if !ok {
		rp.notFound()
		return
	}
	rp.write(200, map[string]any{"ref": "refs/" + name, "object": map[string]string{"sha": sha, "type": "commit"}})
}

func (s *Server) createRef(rp reply, r *http.Request, p string, body []byte) {
	var in struct{ Ref, SHA string }
	json.Unmarshal(body, &in)
	name := strings.TrimPrefix(in.Ref, "refs/")
	if _, ok := s.Refs[name]; ok {
		rp.write(422, map[string]string{"message": "Reference already exists"})
		return
	}
	s.Refs[name] = in.SHA
	rp.write(201, map[string]any{"ref": in.Ref, "object": map[string]string{"sha": in.SHA}})
}

func (s *Server) updateRef(rp reply, r *http.Request, p string, body []byte) {
	name := strings.TrimPrefix(p, "git/refs/")
	var in struct {
		SHA   string
		Force bool
	}
	json.Unmarshal(body, &in)
	if s.MoveBeforeUpdate > 0 {
		s.MoveBeforeUpdate--
		// Someone else pushed first.
		old := s.commits[s.Refs[name]]
		t := map[string]string{}
		for k, v := range s.trees[old.tree] {
			t[k] = v
		}
		b := hash("blob", "concurrent", fmt.Sprint(len(s.blobs)))
		s.blobs[b] = "concurrent"
		t[fmt.Sprintf("other/concurrent-%d.txt", len(s.blobs))] = b
		ts := s.putTree(t)
		cs := hash("commit", ts, s.Refs[name], "concurrent")
		s.commits[cs] = commit{ts, s.Refs[name]}
		s.Refs[name] = cs
	}
	cur := s.Refs[name]
	if !in.Force && s.commits[in.SHA].parent != cur {
		rp.write(422, map[string]string{"message": "Update is not a fast forward"})
		return
	}
	s.Refs[name] = in.SHA
	rp.write(200, map[string]any{"ref": "refs/" + name, "object": map[string]string{"sha": in.SHA}})
}

func (s *Server) getCommit(rp reply, r *http.Request, p string, body []byte) {
	sha := strings.TrimPrefix(p, "git/commits/")
	c, ok := s.commits[sha]
	if !ok {
		rp.notFound()
		return
	}
	rp.write(200, map[string]any{"sha": sha, "tree": map[string]string{"sha": c.tree}})
}

func (s *Server) createCommit(rp reply, r *http.Request, p string, body []byte) {
	var in struct {
		Message string
		Tree    string
		Parents []string
	}
	json.Unmarshal(body, &in)
	parent := ""
	if len(in.Parents) > 0 {
		parent = in.Parents[0]
	}
	sha := hash("commit", in.Tree, parent, in.Message, fmt.Sprint(len(s.commits)))
	s.commits[sha] = commit{in.Tree, parent}
	rp.write(201, map[string]any{"sha": sha, "tree": map[string]string{"sha": in.Tree}})
}

func (s *Server) getTree(rp reply, r *http.Request, p string, body []byte) {
	sha := strings.TrimPrefix(p, "git/trees/")
	t, ok := s.trees[sha]
	if !ok {
		rp.notFound()
		return
	}
	var entries []map[string]string
	for path, b := range t {
		entries = append(entries, map[string]string{"path": path, "type": "blob", "sha": b, "mode": "100644"})
	}
	rp.write(200, map[string]any{"sha": sha, "tree": entries, "truncated": false})
}

func (s *Server) createTree(rp reply, r *http.Request, p string, body []byte) {
	var in struct {
		BaseTree string `json:"base_tree"`
		Tree     []struct {
			Path    string
			SHA     *string
			Content *string
		}
	}
	json.Unmarshal(body, &in)
	t := map[string]string{}
	for k, v := range s.trees[in.BaseTree] {
		t[k] = v
	}
	for _, e := range in.Tree {
		switch {
		case e.Content != nil:
			b := hash("blob", *e.Content)
			s.blobs[b] = *e.Content
			t[e.Path] = b
		case e.SHA != nil:
			t[e.Path] = *e.SHA
		default:
			delete(t, e.Path)
		}
	}
	rp.write(201, map[string]any{"sha": s.putTree(t)})
}

// createBlob takes a blob as the API does: its content, utf-8 or base64.
func (s *Server) createBlob(rp reply, r *http.Request, p string, body []byte) {
	if s.forbidden(rp) {
		return
	}
	var in struct{ Content, Encoding string }
	if err := json.Unmarshal(body, &in); err != nil {
		rp.write(400, map[string]string{"message": err.Error()})
		return
	}
	c := in.Content
	if in.Encoding == "base64" {
		b, err := base64.StdEncoding.DecodeString(in.Content)
		if err != nil {
			rp.write(422, map[string]string{"message": "content is not base64"})
			return
		}
		c = string(b)
	}
	sha := hash("blob", c)
	s.blobs[sha] = c
	rp.write(201, map[string]any{"sha": sha})
}

func (s *Server) getBlob(rp reply, r *http.Request, p string, body []byte) {
	c, ok := s.blobs[strings.TrimPrefix(p, "git/blobs/")]
	if !ok {
		rp.notFound()
		return
	}
	io.WriteString(rp.w, c)
}
