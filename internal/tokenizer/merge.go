package tokenizer

import "container/heap"

// bpeMerge merges adjacent symbols the way byte-pair encoding does: the
// pair with the lowest rank first, the leftmost of equal ranks, until no
// pair merges. rank(a, b) is the rank of merging a with the symbol after
// it, b (false: they don't merge); join(a, b) is the merged symbol.
//
// Short runs are scanned (O(n²), fastest for the few symbols of a word);
// longer ones, where a scan is quadratic (a 20,000-letter word took 3.3 s
// to scan), keep their candidate pairs in a heap: O(n log n), and the
// same merges, since both take the least (rank, position) each time.
func bpeMerge[S any](syms []S, rank func(a, b S) (int, bool), join func(a, b S) S) []S {
	if len(syms) <= scanLimit {
		return scanMerge(syms, rank, join)
	}
	return heapMerge(syms, rank, join)
}

// scanLimit is the longest run scanMerge takes.
const scanLimit = 48

func scanMerge[S any](syms []S, rank func(a, b S) (int, bool), join func(a, b S) S) []S {
	for len(syms) > 1 {
		best, at := 0, -1
		for i := 0; i+1 < len(syms); i++ {
			if r, ok := rank(syms[i], syms[i+1]); ok && (at < 0 || r < best) {
				best, at = r, i
			}
		}
		if at < 0 {
			break
		}
		syms[at] = join(syms[at], syms[at+1])
		syms = append(syms[:at+1], syms[at+2:]...)
	}
	return syms
}

type mergeNode[S any] struct {
	sym        S
	prev, next int // -1: none
	ver        int // bumped when sym changes, so stale candidates are passed over
	dead       bool
}

type candidate struct{ rank, left, lver, right, rver int }

type candidates []candidate

func (c candidates) Len() int { return len(c) }
func (c candidates) Less(i, j int) bool {
	return c[i].rank < c[j].rank || c[i].rank == c[j].rank && c[i].left < c[j].left
}
func (c candidates) Swap(i, j int) { c[i], c[j] = c[j], c[i] }
func (c *candidates) Push(x any)   { *c = append(*c, x.(candidate)) }
func (c *candidates) Pop() (x any) { x, *c = (*c)[len(*c)-1], (*c)[:len(*c)-1]; return x }

func heapMerge[S any](syms []S, rank func(a, b S) (int, bool), join func(a, b S) S) []S {
	nodes := make([]mergeNode[S], len(syms))
	for i, s := range syms {
		nodes[i] = mergeNode[S]{sym: s, prev: i - 1, next: i + 1}
	}
	nodes[len(nodes)-1].next = -1
	var h candidates
	consider := func(l int) {
		r := nodes[l].next
		if r < 0 {
			return
		}
		if rk, ok := rank(nodes[l].sym, nodes[r].sym); ok {
			heap.Push(&h, candidate{rk, l, nodes[l].ver, r, nodes[r].ver})
		}
	}
	for i := range nodes {
		consider(i)
	}
	for h.Len() > 0 {
		c := heap.Pop(&h).(candidate)
		l, r := &nodes[c.left], &nodes[c.right]
		if l.dead || r.dead || l.ver != c.lver || r.ver != c.rver || l.next != c.right {
			continue
		}
		l.sym = join(l.sym, r.sym)
		l.ver++
		r.dead = true
		l.next = r.next
		if r.next >= 0 {
			nodes[r.next].prev = c.left
		}
		if l.prev >= 0 {
			consider(l.prev)
		}
		consider(c.left)
	}
	out := syms[:0]
	for i := 0; i >= 0; i = nodes[i].next {
		out = append(out, nodes[i].sym)
	}
	return out
}
