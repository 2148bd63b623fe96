package baseline

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aiperf-action/aiperf-action/internal/ghfake"
)

func clock() func() time.Time {
	t := time.Unix(1_700_000_000, 0)
	return func() time.Time { t = t.Add(time.Minute); return t }
}

func runs(tag string, n int) [][]byte {
	var out [][]byte
	for i := 0; i < n; i++ {
		out = append(out, []byte(fmt.Sprintf(`{"run":"%s-%d"}`, tag, i)))
	}
	return out
}

func exercise(t *testing.T, s Store) {
	t.Helper()
	ctx := context.Background()
	es, err := s.List(ctx, "chat", "sha256:abc")
	if err != nil || len(es) != 0 {
		t.Fatalf("empty store: %v %v", es, err)
	}
	for i, c := range []string{"aaaaaaaaaaaa1111", "bbbbbbbbbbbb2222", "cccccccccccc3333"} {
		if err := s.Append(ctx, "chat", "sha256:abc", c, runs(fmt.Sprint(i), 2), 5); err != nil {
			t.Fatal(err)
		}
	}
	es, err = s.List(ctx, "chat", "sha256:abc")
	if err != nil || len(es) != 5 {
		t.Fatalf("after 6 runs with keep 5: %d entries, %v", len(es), err)
	}
	if es[0].Commit != "aaaaaaaaaaaa" || es[4].Commit != "cccccccccccc" {
		t.Errorf("order %v", es)
	}
	b, err := es[4].Load(ctx)
	if err != nil || string(b) != `{"run":"2-1"}` {
		t.Errorf("load newest: %s %v", b, err)
	}
	sel, src := Select(es, "bbbbbbbbbbbb2222ffff", 20)
	if len(sel) != 3 || sel[2].Commit != "bbbbbbbbbbbb" || !strings.Contains(src, "merge-base") {
		t.Errorf("merge-base selection: %d, %s", len(sel), src)
	}
	sel, src = Select(es, "dddddddddddd", 2)
	if len(sel) != 2 || sel[1].Commit != "cccccccccccc" || !strings.Contains(src, "none recorded at the merge-base") {
		t.Errorf("fallback selection: %d, %s", len(sel), src)
	}
	if other, _ := s.List(ctx, "chat", "sha256:other"); len(other) != 0 {
		t.Error("another profile sees these runs")
	}
}

func TestFolder(t *testing.T) {
	t.Parallel()
	exercise(t, &Folder{Root: t.TempDir(), Now: clock()})
}

func TestBranch(t *testing.T) {
	t.Parallel()
	gh := ghfake.New(t, "o", "r")
	exercise(t, &Branch{Client: gh.Client(), Owner: "o", Repo: "r", Name: "aiperf-baselines", Root: "baselines", Now: clock()})
	for _, w := range gh.Writes() {
		if strings.Contains(w.Body, `"force":true`) {
			t.Errorf("forced update: %+v", w)
		}
	}
}

// A concurrent writer moves the branch between our read and our update:
// the update is refused (not a fast forward), and the append retries on the
// new head, keeping the other writer's commit.
func TestBranchRetriesWhenMoved(t *testing.T) {
	t.Parallel()
	gh := ghfake.New(t, "o", "r")
	gh.Seed("aiperf-baselines", map[string]string{"README": "baselines"})
	gh.MoveBeforeUpdate = 2
	b := &Branch{Client: gh.Client(), Owner: "o", Repo: "r", Name: "aiperf-baselines", Root: "baselines", Now: clock(), Backoff: time.Millisecond}
	if err := b.Append(context.Background(), "chat", "sha256:abc", "abc", runs("x", 1), 5); err != nil {
		t.Fatal(err)
	}
	files := gh.Files("aiperf-baselines")
	concurrent := 0
	ours := 0
	for p := range files {
		if strings.HasPrefix(p, "other/concurrent") {
			concurrent++
		}
		if strings.HasPrefix(p, "baselines/chat/abc/") {
			ours++
		}
	}
	if concurrent != 2 || ours != 1 || files["README"] != "baselines" {
		t.Errorf("after retries: %d concurrent files, %d of ours: %v", concurrent, ours, files)
	}
	updates := 0
	for _, w := range gh.Writes() {
		if w.Method == "PATCH" {
			updates++
		}
	}
	if updates != 3 {
		t.Errorf("%d ref updates, want 3 (two refused, one applied)", updates)
	}
	gh.MoveBeforeUpdate = 100
	b.Retries = 3
	if err := b.Append(context.Background(), "chat", "sha256:abc", "def", runs("y", 1), 5); err == nil || !strings.Contains(err.Error(), "gave up after 3") {
		t.Errorf("a branch that never stops moving: %v", err)
	}
}

// Two gates refreshing one baseline folder at once neither fail nor
// corrupt it: every file left is a whole run, and keep of them remain.
func TestFolderConcurrentRefreshes(t *testing.T) {
	root := t.TempDir()
	f := &Folder{Root: root}
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 5; i++ {
				if err := f.Append(context.Background(), "s", "sha256:abc", fmt.Sprintf("c%d-%d", g, i), runs(fmt.Sprintf("g%d-%d", g, i), 3), 4); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	es, err := f.List(context.Background(), "s", "sha256:abc")
	if err != nil || len(es) < 4 {
		t.Fatalf("%d entries, %v", len(es), err)
	}
	for _, e := range es {
		b, err := e.Load(context.Background())
		if err != nil || !strings.HasPrefix(string(b), "{") {
			t.Fatalf("%s: %q %v", e.Name, b, err)
		}
	}
}
