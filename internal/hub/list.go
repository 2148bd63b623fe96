package hub

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// Listing is a repository's files at a commit.
type Listing struct {
	Commit string
	Files  []string // paths inside the repository, with slashes, sorted
}

// List is the files of repo at revision, as the hub's revision API
// (GET /api/{models,datasets}/ORG/NAME/revision/REV, huggingface_hub's
// repo_info) gives them, and the commit the revision names, which is
// recorded as a ref as a download's is. The hub is always asked (a
// listing is one small request) unless HF_HUB_OFFLINE is set; offline,
// or with the hub unreachable, the cache's snapshot of the revision is
// listed instead: the files a run fetched before.
func (c Config) List(ctx context.Context, typ, repo, revision string) (Listing, error) {
	if revision == "" {
		revision = "main"
	}
	if typ == "" {
		typ = Model
	}
	fail := func(status int, format string, a ...any) error {
		return &Error{Repo: repo, Type: typ, Revision: revision, Status: status, Msg: fmt.Sprintf(format, a...)}
	}
	if !IsRepoID(repo) {
		return Listing{}, fail(0, "not a hub repository id (want ORG/NAME)")
	}
	cached, haveCache := c.cachedListing(typ, repo, revision)
	if c.Offline {
		if haveCache {
			return cached, nil
		}
		return Listing{}, fail(0, "HF_HUB_OFFLINE is set and the cache %s holds no snapshot of it (fetch it with the network on, or unset HF_HUB_OFFLINE)", Folder(c.CacheDir, typ, repo))
	}
	u := c.Endpoint + "/api/" + typ + "s/" + repo + "/revision/" + url.PathEscape(revision)
	resp, err := c.request(ctx, http.MethodGet, u, true)
	if err != nil {
		if haveCache {
			return cached, nil
		}
		return Listing{}, fail(0, "%v (set HF_HUB_OFFLINE=1 to use only the cache %s, or HF_ENDPOINT for a mirror)", err, c.CacheDir)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return Listing{}, hubError(resp, repo, typ, revision, "", c.Token != "")
	}
	var info struct {
		SHA      string `json:"sha"`
		Siblings []struct {
			RFilename string `json:"rfilename"`
		} `json:"siblings"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&info); err != nil {
		return Listing{}, fail(resp.StatusCode, "the repository's file list is not the hub's JSON: %v", err)
	}
	if !commitHash.MatchString(info.SHA) {
		return Listing{}, fail(resp.StatusCode, "the repository's file list names no commit (sha): HF_ENDPOINT must be a Hugging Face hub or a mirror of its API")
	}
	l := Listing{Commit: info.SHA}
	for _, s := range info.Siblings {
		if checkFile(s.RFilename) == nil {
			l.Files = append(l.Files, s.RFilename)
		}
	}
	slices.Sort(l.Files)
	if revision != info.SHA {
		if err := writeRef(Folder(c.CacheDir, typ, repo), revision, info.SHA); err != nil {
			return Listing{}, fail(0, "%v", err)
		}
	}
	return l, nil
}

// cachedListing lists the cache's snapshot of revision, if it has one.
func (c Config) cachedListing(typ, repo, revision string) (Listing, bool) {
	folder := Folder(c.CacheDir, typ, repo)
	commit := revision
	if !commitHash.MatchString(revision) {
		b, err := os.ReadFile(filepath.Join(folder, "refs", filepath.FromSlash(revision)))
		if err != nil {
			return Listing{}, false
		}
		commit = strings.TrimSpace(string(b))
	}
	if !commitHash.MatchString(commit) {
		return Listing{}, false
	}
	root := filepath.Join(folder, "snapshots", commit)
	l := Listing{Commit: commit}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			rel, _ := filepath.Rel(root, p)
			l.Files = append(l.Files, filepath.ToSlash(rel))
		}
		return nil
	})
	if err != nil && !errors.Is(err, fs.ErrNotExist) || len(l.Files) == 0 {
		return Listing{}, false
	}
	slices.Sort(l.Files)
	return l, true
}
