// Package baseline keeps the history of runs that pull requests are
// compared with: for each scenario and profile_hash, the last K runs from
// the default branch, oldest first.
//
// Two stores share one layout,
//
//	<root>/<scenario>/<hash16>/<unix-nanos>-<commit12>-r<i>.json
//
// a folder in the repository, written atomically, and a branch written
// through the GitHub API, where an update is a new commit on the branch
// head that was read and never a forced push: when the head moved, the
// whole read-modify-write is retried.
package baseline

import (
	"context"
	"fmt"
	"path"
	"regexp"
	"sort"
	"strings"
	"time"
)

// Entry is one stored run.
type Entry struct {
	Name    string // file name: <unix-nanos>-<commit12>-r<i>.json
	Commit  string // the 12-character commit prefix it was recorded at
	Refresh string // <unix-nanos>-<commit12>: the refresh (one job's runs) that recorded it
	load    func(context.Context) ([]byte, error)
}

// Load reads the entry's run.json.
func (e Entry) Load(ctx context.Context) ([]byte, error) { return e.load(ctx) }

// Store reads and appends baseline runs.
type Store interface {
	// List returns the stored runs for a scenario and profile, oldest first.
	List(ctx context.Context, scenario, hash string) ([]Entry, error)
	// Append adds runs recorded at commit and keeps the newest keep.
	Append(ctx context.Context, scenario, hash, commit string, runs [][]byte, keep int) error
	// Profiles lists the profiles (hash16 folders) that have runs of a
	// scenario, so that a changed profile can be told from a new scenario.
	Profiles(ctx context.Context, scenario string) ([]string, error)
	// String names the store for reports.
	String() string
}

var unsafe = regexp.MustCompile(`[^A-Za-z0-9._-]+`)

// Dir is where a scenario's runs for one profile live under root. A key
// of the form hash@testbed (Key) names the profile's folder for one
// testbed, <hash16>.<testbed>; a bare hash, the folder of runs recorded
// before baselines were kept apart by testbed.
func Dir(root, scenario, key string) string {
	hash, bed, _ := strings.Cut(key, "@")
	h := strings.TrimPrefix(hash, "sha256:")
	if len(h) > 16 {
		h = h[:16]
	}
	dir := unsafe.ReplaceAllString(h, "_")
	if bed = strings.Trim(unsafe.ReplaceAllString(bed, "_"), "._"); bed != "" {
		dir += "." + bed
	}
	return path.Join(root, unsafe.ReplaceAllString(scenario, "_"), dir)
}

// Key is the store key of a profile's runs on a testbed ("" keeps the
// bare hash, the layout before testbeds).
func Key(hash, testbed string) string {
	if testbed == "" {
		return hash
	}
	return hash + "@" + testbed
}

// FileName names run i recorded at commit now.
func FileName(now time.Time, commit string, i int) string {
	return fmt.Sprintf("%020d-%s-r%d.json", now.UnixNano(), short(commit), i)
}

func short(commit string) string {
	c := unsafe.ReplaceAllString(commit, "_")
	if len(c) > 12 {
		c = c[:12]
	}
	if c == "" {
		c = "local"
	}
	return c
}

func parseName(name string) (Entry, bool) {
	if !strings.HasSuffix(name, ".json") {
		return Entry{}, false
	}
	parts := strings.SplitN(strings.TrimSuffix(name, ".json"), "-", 3)
	if len(parts) != 3 || len(parts[0]) != 20 {
		return Entry{}, false
	}
	return Entry{Name: name, Commit: parts[1], Refresh: parts[0] + "-" + parts[1]}, true
}

func sortEntries(es []Entry) { sort.Slice(es, func(i, j int) bool { return es[i].Name < es[j].Name }) }

// Select picks the baseline for a pull request: the history as it stood at
// the merge-base (everything up to the newest run recorded at that commit)
// when the merge-base has runs, else the newest runs; at most k of them.
// It says which it did.
func Select(es []Entry, mergeBase string, k int) ([]Entry, string) {
	upto := len(es)
	source := "the newest baseline runs"
	if mergeBase != "" {
		mb := short(mergeBase)
		found := -1
		for i, e := range es {
			if e.Commit == mb {
				found = i
			}
		}
		if found >= 0 {
			upto = found + 1
			source = "the baseline runs as of the merge-base " + mb
		} else {
			source = "the newest baseline runs (none recorded at the merge-base " + mb + ")"
		}
	}
	sel := es[:upto]
	if len(sel) > k {
		sel = sel[len(sel)-k:]
	}
	return sel, source
}

// trim returns the entries to delete so that keep remain (oldest go).
func trim(es []Entry, keep int) []Entry {
	if len(es) <= keep {
		return nil
	}
	return es[:len(es)-keep]
}
