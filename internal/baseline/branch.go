package baseline

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"path"
	"sort"
	"strings"
	"time"

	"github.com/google/go-github/v66/github"
)

// Branch stores baselines on a branch of the repository through the GitHub
// API (no checkout, no git binary).
type Branch struct {
	Client      *github.Client
	Owner, Repo string
	Name        string // the branch
	Root        string // folder inside the branch
	Now         func() time.Time
	Retries     int           // attempts when the branch moves under us (default 5)
	Backoff     time.Duration // between attempts (default 500ms, doubling)
}

var _ Store = (*Branch)(nil)

func (b *Branch) String() string { return "branch " + b.Name }

// head returns the branch's commit and tree, or "" when the branch is missing.
func (b *Branch) head(ctx context.Context) (commit, tree string, err error) {
	ref, resp, err := b.Client.Git.GetRef(ctx, b.Owner, b.Repo, "heads/"+b.Name)
	if resp != nil && resp.StatusCode == http.StatusNotFound {
		return "", "", nil
	}
	if err != nil {
		return "", "", fmt.Errorf("read branch %s: %w", b.Name, err)
	}
	sha := ref.GetObject().GetSHA()
	c, _, err := b.Client.Git.GetCommit(ctx, b.Owner, b.Repo, sha)
	if err != nil {
		return "", "", fmt.Errorf("read commit %s: %w", sha, err)
	}
	return sha, c.GetTree().GetSHA(), nil
}

func (b *Branch) list(ctx context.Context, tree, dir string) ([]Entry, error) {
	if tree == "" {
		return nil, nil
	}
	t, _, err := b.Client.Git.GetTree(ctx, b.Owner, b.Repo, tree, true)
	if err != nil {
		return nil, fmt.Errorf("read tree of %s: %w", b.Name, err)
	}
	var out []Entry
	for _, te := range t.Entries {
		if te.GetType() != "blob" || path.Dir(te.GetPath()) != dir {
			continue
		}
		e, ok := parseName(path.Base(te.GetPath()))
		if !ok {
			continue
		}
		sha := te.GetSHA()
		e.load = func(ctx context.Context) ([]byte, error) {
			raw, _, err := b.Client.Git.GetBlobRaw(ctx, b.Owner, b.Repo, sha)
			return raw, err
		}
		out = append(out, e)
	}
	sortEntries(out)
	return out, nil
}

// List reads the runs of one scenario and profile from the branch head.
func (b *Branch) List(ctx context.Context, scenario, hash string) ([]Entry, error) {
	_, tree, err := b.head(ctx)
	if err != nil {
		return nil, err
	}
	return b.list(ctx, tree, Dir(b.Root, scenario, hash))
}

// Profiles lists the scenario's profile folders on the branch head.
func (b *Branch) Profiles(ctx context.Context, scenario string) ([]string, error) {
	_, tree, err := b.head(ctx)
	if err != nil || tree == "" {
		return nil, err
	}
	t, _, err := b.Client.Git.GetTree(ctx, b.Owner, b.Repo, tree, true)
	if err != nil {
		return nil, fmt.Errorf("read tree of %s: %w", b.Name, err)
	}
	dir := path.Dir(Dir(b.Root, scenario, "x"))
	seen := map[string]bool{}
	var out []string
	for _, te := range t.Entries {
		if te.GetType() == "blob" && path.Dir(path.Dir(te.GetPath())) == dir {
			if h := path.Base(path.Dir(te.GetPath())); !seen[h] {
				seen[h] = true
				out = append(out, h)
			}
		}
	}
	return out, nil
}

// Append commits the runs onto the branch head it read, deleting the oldest
// beyond keep. When the head moved meanwhile (the update is not a fast
// forward), it reads again and retries; it never forces.
func (b *Branch) Append(ctx context.Context, scenario, hash, commit string, runs [][]byte, keep int) error {
	now := time.Now
	if b.Now != nil {
		now = b.Now
	}
	t := now()
	_, err := b.commitRetry(ctx, func(tree string) ([]*github.TreeEntry, string, error) {
		dir := Dir(b.Root, scenario, hash)
		existing, err := b.list(ctx, tree, dir)
		if err != nil {
			return nil, "", err
		}
		var entries []*github.TreeEntry
		var all []Entry
		all = append(all, existing...)
		for i, r := range runs {
			name := FileName(t, commit, i)
			entries = append(entries, &github.TreeEntry{Path: github.String(dir + "/" + name), Mode: github.String("100644"),
				Type: github.String("blob"), Content: github.String(string(r))})
			all = append(all, Entry{Name: name})
		}
		sortEntries(all)
		for _, e := range trim(all, keep) {
			if strings.HasPrefix(e.Name, fmt.Sprintf("%020d", t.UnixNano())) {
				continue // never delete what this call adds
			}
			entries = append(entries, &github.TreeEntry{Path: github.String(dir + "/" + e.Name), Mode: github.String("100644"), Type: github.String("blob")})
		}
		return entries, fmt.Sprintf("aiperf-action: %d baseline run(s) of %s at %s", len(runs), scenario, short(commit)), nil
	})
	return err
}

// PutFiles makes the folder dir (from the branch's top, not under Root,
// where a scenario could share its name) hold files and nothing else,
// binary content and all (each a blob sent base64), in one commit on the
// branch, and returns that commit. Like Append it retries when the head
// moves, and never forces.
func (b *Branch) PutFiles(ctx context.Context, dir string, files map[string][]byte, message string) (string, error) {
	dir = path.Clean(dir)
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	sort.Strings(names)
	shas := map[string]string{}
	for _, n := range names {
		bl, _, err := b.Client.Git.CreateBlob(ctx, b.Owner, b.Repo, &github.Blob{Content: github.String(base64.StdEncoding.EncodeToString(files[n])), Encoding: github.String("base64")})
		if err != nil {
			return "", fmt.Errorf("create blob %s: %w", n, err)
		}
		shas[n] = bl.GetSHA()
	}
	return b.commitRetry(ctx, func(tree string) ([]*github.TreeEntry, string, error) {
		var entries []*github.TreeEntry
		if tree != "" {
			t, _, err := b.Client.Git.GetTree(ctx, b.Owner, b.Repo, tree, true)
			if err != nil {
				return nil, "", fmt.Errorf("read tree of %s: %w", b.Name, err)
			}
			for _, te := range t.Entries {
				if _, keep := files[path.Base(te.GetPath())]; te.GetType() == "blob" && path.Dir(te.GetPath()) == dir && !keep {
					entries = append(entries, &github.TreeEntry{Path: github.String(te.GetPath()), Mode: github.String("100644"), Type: github.String("blob")})
				}
			}
		}
		for _, n := range names {
			entries = append(entries, &github.TreeEntry{Path: github.String(dir + "/" + n), Mode: github.String("100644"), Type: github.String("blob"), SHA: github.String(shas[n])})
		}
		return entries, message, nil
	})
}

// commitRetry commits the entries build gives for the head's tree onto
// the branch, reading the head again and rebuilding while it moves, and
// returns the commit.
func (b *Branch) commitRetry(ctx context.Context, build func(tree string) ([]*github.TreeEntry, string, error)) (string, error) {
	attempts, wait := b.Retries, b.Backoff
	if attempts <= 0 {
		attempts = 5
	}
	if wait <= 0 {
		wait = 500 * time.Millisecond
	}
	var last error
	for a := 0; a < attempts; a++ {
		sha, err := b.commitOnce(ctx, build)
		if err == nil {
			return sha, nil
		}
		if !errors.Is(err, errMoved) {
			return "", err
		}
		last = err
		select {
		case <-ctx.Done():
			return "", ctx.Err()
		case <-time.After(wait):
		}
		wait *= 2
	}
	return "", fmt.Errorf("baseline branch %s kept moving: gave up after %d attempts: %w", b.Name, attempts, last)
}

var errMoved = errors.New("the branch moved")

func (b *Branch) commitOnce(ctx context.Context, build func(tree string) ([]*github.TreeEntry, string, error)) (string, error) {
	head, tree, err := b.head(ctx)
	if err != nil {
		return "", err
	}
	entries, msg, err := build(tree)
	if err != nil {
		return "", err
	}
	nt, _, err := b.Client.Git.CreateTree(ctx, b.Owner, b.Repo, tree, entries)
	if err != nil {
		return "", fmt.Errorf("create tree: %w", err)
	}
	c := &github.Commit{Message: github.String(msg), Tree: &github.Tree{SHA: nt.SHA}}
	if head != "" {
		c.Parents = []*github.Commit{{SHA: github.String(head)}}
	}
	nc, _, err := b.Client.Git.CreateCommit(ctx, b.Owner, b.Repo, c, nil)
	if err != nil {
		return "", fmt.Errorf("create commit: %w", err)
	}
	ref := &github.Reference{Ref: github.String("refs/heads/" + b.Name), Object: &github.GitObject{SHA: nc.SHA}}
	var resp *github.Response
	if head == "" {
		_, resp, err = b.Client.Git.CreateRef(ctx, b.Owner, b.Repo, ref)
	} else {
		_, resp, err = b.Client.Git.UpdateRef(ctx, b.Owner, b.Repo, ref, false)
	}
	if err != nil {
		if resp != nil && (resp.StatusCode == http.StatusUnprocessableEntity || resp.StatusCode == http.StatusConflict) {
			return "", fmt.Errorf("%w: %v", errMoved, err)
		}
		return "", fmt.Errorf("update branch %s: %w", b.Name, err)
	}
	return nc.GetSHA(), nil
}
