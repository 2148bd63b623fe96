package seeds

import (
	"math/rand/v2"
	"testing"
)

var allStreams = []uint64{StreamLengths, StreamPayloads, StreamArrivals, StreamCancellations, StreamIDs, StreamWarmup,
	StreamRepeats, StreamBlocks, StreamSampling, StreamPrefixes, StreamPrefixPicks, StreamTurns, StreamTurnDelays,
	StreamFileOSL, StreamUserContexts, StreamRankings, StreamImages, StreamAudio, StreamVideo, StreamModels, StreamFresh}

// The recipe's outputs for one root, pinned: a change here changes every
// plan's inputs.json and profile_hash, and so every stored baseline's key
// (schedule's fingerprints.txt says so too, but from far away).
func TestRecipePinned(t *testing.T) {
	const root = 42
	for _, tc := range []struct {
		name string
		got  uint64
		want uint64
	}{
		{"Stream(lengths)", Stream(root, StreamLengths).Uint64(), 0x55f94932b92ba500},
		{"Stream(payloads)", Stream(root, StreamPayloads).Uint64(), 0xf4bb1e475bb81858},
		{"Source(arrivals, 3)", Source(root, StreamArrivals, 3).Uint64(), 0xca2c18bfdd32d765},
		{"Root(warmup)", Root(root, StreamWarmup), 0x94d049bb133111db},
		{"PayloadSeed(2)", PayloadSeed(root, 2), 0x955e2617223b286d},
		{"Pool(0)", Pool(root, 0), 0x9e3779b97f4a7c3f},
		{"WekaOwn", WekaOwn(root), 0x6f7744},
		{"Draw(5)", Draw(root, 5).Uint64(), 0x657e4ace47bc9e4b},
		{"Fresh(7, 3)", Fresh(root, 7, 3), 0xbb91db4990521c61},
	} {
		if tc.got != tc.want {
			t.Errorf("%s = %#x, want %#x", tc.name, tc.got, tc.want)
		}
	}
}

// Every stream has its own root and its own sequence: no two purposes draw
// the same numbers from one root seed.
func TestStreamsDistinct(t *testing.T) {
	for _, root := range []uint64{0, 1, 42, 1 << 63} {
		roots, firsts := map[uint64]uint64{}, map[uint64]uint64{}
		for _, s := range allStreams {
			r := Root(root, s)
			if o, ok := roots[r]; ok || r == root {
				t.Errorf("root %d: streams %d and %d share root %#x", root, o, s, r)
			}
			roots[r] = s
			v := Stream(root, s).Uint64()
			if o, ok := firsts[v]; ok {
				t.Errorf("root %d: streams %d and %d start alike", root, o, s)
			}
			firsts[v] = s
		}
	}
}

// An indexed draw is a pure function of (root, stream, index): made twice,
// or out of order, it is the same; neighbouring indexes differ.
func TestSourcePure(t *testing.T) {
	a := make([]uint64, 100)
	for i := range a {
		a[i] = rand.New(Source(7, StreamArrivals, uint64(i))).Uint64()
	}
	seen := map[uint64]bool{}
	for i := len(a) - 1; i >= 0; i-- {
		if v := rand.New(Source(7, StreamArrivals, uint64(i))).Uint64(); v != a[i] {
			t.Fatalf("index %d drew %#x then %#x", i, a[i], v)
		}
		if seen[a[i]] {
			t.Fatalf("index %d repeats another's draw", i)
		}
		seen[a[i]] = true
	}
}

// A lone run's payload root is the root itself (plans from before repeats
// keep their prompts); repeats each get their own.
func TestPayloadSeed(t *testing.T) {
	if PayloadSeed(9, 0) != 9 {
		t.Fatal("repeat 0 moved the payload root")
	}
	seen := map[uint64]int{9: 0}
	for r := 1; r <= 200; r++ {
		p := PayloadSeed(9, r)
		if o, ok := seen[p]; ok {
			t.Fatalf("repeats %d and %d share payload root %#x", o, r, p)
		}
		seen[p] = r
	}
}

// A job's fresh payload seeds are its own: no two nonces, and no nonce and
// the seed alone (PayloadSeed, the plans every job made before), give one
// draw the same seed.
func TestFreshIsEachJobsOwn(t *testing.T) {
	const root = 5
	seen := map[uint64]string{}
	for r := range 64 {
		seen[PayloadSeed(root, r)] = "PayloadSeed"
	}
	for _, nonce := range []uint64{0, 1, 2, 1 << 40, 0xdeadbeef} {
		for i := range uint64(64) {
			s := Fresh(root, nonce, i)
			if s == 0 {
				t.Fatalf("Fresh(%d, %d) = 0", nonce, i)
			}
			key := "Fresh"
			if o, ok := seen[s]; ok {
				t.Errorf("nonce %d draw %d: %#x, as %s drew", nonce, i, s, o)
			}
			seen[s] = key
		}
	}
	if Fresh(root, 9, 4) != Fresh(root, 9, 4) {
		t.Error("Fresh is not a pure function")
	}
}
