package controller

import (
	"bytes"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/aiperf-action/aiperf-action/internal/config"
	"github.com/aiperf-action/aiperf-action/internal/schedule"
	"github.com/aiperf-action/aiperf-action/internal/wire"
)

func plan(t *testing.T, edit func(*config.Profile)) (*schedule.Plan, *config.Profile) {
	t.Helper()
	p := config.DefaultProfile
	p.Model, p.URL = "m", "127.0.0.1:1"
	edit(&p)
	if _, err := p.Resolve(); err != nil {
		t.Fatal(err)
	}
	pl, err := schedule.Build(&p, 9)
	if err != nil {
		t.Fatal(err)
	}
	return pl, &p
}

// The workers' shares of each phase are disjoint and together the whole
// phase, each in plan order, with the ceiling split k6-style and each
// share's size what DONE will be checked against.
func TestShardsPartitionEveryPhase(t *testing.T) {
	t.Parallel()
	pl, p := plan(t, func(p *config.Profile) {
		p.Concurrency, p.ConcurrencySet, p.RequestCount, p.WarmupRequestCount = 7, true, 50, 5
	})
	shards := Shards(pl, p, wire.ShardSpec{EndpointType: "chat"}, 3)
	if len(shards) != 3 {
		t.Fatalf("%d shards for 3 workers", len(shards))
	}
	for k, ph := range pl.Phases {
		want, err := ph.All()
		if err != nil {
			t.Fatal(err)
		}
		seen := map[int]int{}
		for w, s := range shards {
			part := s.Phases[k]
			if !slices.Equal(part.Weights, []int{3, 2, 2}) || part.Concurrency != part.Weights[w] || part.Offset != w || part.Stride != 3 || part.Total != len(want) {
				t.Fatalf("phase %s worker %d: %+v", ph.Name, w, part)
			}
			if s.EndpointType != "chat" || s.Plan.Profile != p || s.Plan.Seed != 9 || s.Plan.Schema != wire.PlanSchema {
				t.Fatalf("worker %d's spec: %+v", w, s.Plan)
			}
			it := part.Phase.Share(part.Weights, w)
			n, last := 0, -1
			for it.Next(true) {
				e := it.Entry()
				if e.Index <= last {
					t.Fatalf("worker %d: entry %d after %d", w, e.Index, last)
				}
				if prev, dup := seen[e.Index]; dup {
					t.Fatalf("entry %d dealt to workers %d and %d", e.Index, prev, w)
				}
				if string(e.Body) != string(want[e.Index].Body) {
					t.Fatalf("worker %d's entry %d differs from the plan's", w, e.Index)
				}
				seen[e.Index], last = w, e.Index
				n++
			}
			if it.Err() != nil || n != part.Count {
				t.Fatalf("phase %s worker %d: %d entries, Count %d (%v)", ph.Name, w, n, part.Count, it.Err())
			}
		}
		if len(seen) != len(want) {
			t.Errorf("phase %s: %d of %d entries dealt", ph.Name, len(seen), len(want))
		}
	}
}

// Never more workers than the smallest ceiling or the prefill limit, and
// the prefill limit split like the ceiling.
func TestShardsCapWorkers(t *testing.T) {
	t.Parallel()
	pl, p := plan(t, func(p *config.Profile) { p.Concurrency, p.ConcurrencySet, p.RequestCount = 2, true, 10 })
	if n := len(Shards(pl, p, wire.ShardSpec{}, 5)); n != 2 {
		t.Errorf("concurrency 2 over 5 workers: %d shards", n)
	}
	pl, p = plan(t, func(p *config.Profile) {
		p.Concurrency, p.ConcurrencySet, p.RequestCount, p.PrefillConcurrency, p.Streaming = 8, true, 20, 3, true
	})
	shards := Shards(pl, p, wire.ShardSpec{}, 4)
	if len(shards) != 3 {
		t.Fatalf("prefill 3 over 4 workers: %d shards", len(shards))
	}
	got := []int{}
	for _, s := range shards {
		got = append(got, s.Phases[len(s.Phases)-1].Prefill)
	}
	if !slices.Equal(got, []int{1, 1, 1}) {
		t.Errorf("prefill split %v", got)
	}
}

// Workers writing at once, in pieces, never interleave within a line;
// each line carries its worker's prefix and a partial last line is
// written by flush.
func TestLineWriter(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var dst bytes.Buffer
	var wg sync.WaitGroup
	ws := make([]*lineWriter, 4)
	for i := range ws {
		ws[i] = &lineWriter{mu: &mu, dst: &dst, prefix: fmt.Appendf(nil, "[w%d] ", i)}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range 200 {
				line := fmt.Sprintf("worker %d line %d\n", i, j)
				ws[i].Write([]byte(line[:5]))
				ws[i].Write([]byte(line[5:]))
			}
			ws[i].Write([]byte("no newline"))
		}()
	}
	wg.Wait()
	for _, w := range ws {
		w.flush()
		w.flush() // nothing left: writes nothing
	}
	lines := strings.Split(strings.TrimSuffix(dst.String(), "\n"), "\n")
	if len(lines) != 4*201 {
		t.Fatalf("%d lines, want %d", len(lines), 4*201)
	}
	next := make([]int, 4)
	for _, l := range lines {
		var i, j int
		if _, err := fmt.Sscanf(l, "[w%d] worker %d line %d", &i, &i, &j); err == nil {
			if !strings.HasPrefix(l, fmt.Sprintf("[w%d] worker %d line ", i, i)) || j != next[i] {
				t.Fatalf("line %q out of order or mixed", l)
			}
			next[i]++
			continue
		}
		if !strings.HasSuffix(l, "] no newline") {
			t.Fatalf("mangled line %q", l)
		}
	}
}

// --worker-weights: machines of unequal size take shares in proportion,
// of an open loop's requests and of a ceiling, still disjoint and
// complete; a ceiling below the number of workers is refused.
func TestShardsByWeights(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		c       int
		weights []int
		want    []int
	}{{8, []int{2, 1, 1}, []int{4, 2, 2}}, {7, []int{2, 1, 1}, []int{3, 2, 2}}, {3, []int{10, 1, 1}, []int{1, 1, 1}}, {100, []int{3, 1}, []int{75, 25}}} {
		if got := Proportional(c.c, c.weights); !slices.Equal(got, c.want) {
			t.Errorf("Proportional(%d, %v) = %v, want %v", c.c, c.weights, got, c.want)
		}
	}
	for _, open := range []bool{true, false} {
		pl, p := plan(t, func(p *config.Profile) {
			p.RequestCount, p.WorkerWeights, p.Workers = 400, []int{2, 1, 1}, 3
			if open {
				p.RequestRate = 100
			} else {
				p.Concurrency, p.ConcurrencySet = 8, true
			}
		})
		shards := Shards(pl, p, wire.ShardSpec{}, 3)
		if len(shards) != 3 {
			t.Fatalf("%d shards", len(shards))
		}
		ph := pl.Phases[len(pl.Phases)-1]
		seen := map[int]bool{}
		var counts []int
		for w, s := range shards {
			part := s.Phases[len(s.Phases)-1]
			it := part.Phase.Share(part.Weights, w)
			n := 0
			for it.Next(true) {
				if seen[it.Entry().Index] {
					t.Fatalf("entry %d dealt twice", it.Entry().Index)
				}
				seen[it.Entry().Index] = true
				n++
			}
			if n != part.Count {
				t.Fatalf("worker %d: %d entries, Count %d", w, n, part.Count)
			}
			counts = append(counts, n)
			if !open && part.Concurrency != []int{4, 2, 2}[w] {
				t.Errorf("worker %d: concurrency %d", w, part.Concurrency)
			}
		}
		if len(seen) != ph.Len() || !slices.Equal(counts, []int{200, 100, 100}) {
			t.Errorf("open %v: %d of %d entries, counts %v (want 200, 100, 100)", open, len(seen), ph.Len(), counts)
		}
	}
	pl, _ := plan(t, func(p *config.Profile) { p.Concurrency, p.ConcurrencySet, p.RequestCount = 2, true, 10 })
	if err := CheckWeights(pl, []int{1, 1, 1}); err == nil || !strings.Contains(err.Error(), "concurrency 2 is below the 3 workers") {
		t.Errorf("concurrency 2 over 3 weighted workers: %v", err)
	}
}
