// Package seeds is the one recipe from a run's root seed to every random
// draw of its plan: the plan's (schedule) and its dataset readers'
// (dataset), each purpose its own stream. Every PCG they draw from is made
// here.
package seeds

import "math/rand/v2"

// Seed streams. One root seed decides everything random in a run; each
// purpose draws from its own stream, so that changing how many numbers one
// purpose draws never moves another's.
const (
	StreamLengths       = iota + 1 // input and output lengths, drawn in request order
	StreamPayloads                 // prompt words, drawn in request order
	StreamArrivals                 // open-loop gaps: the i-th gap is its own source
	StreamCancellations            // which requests are cancelled: request i is its own source
	StreamIDs                      // request ids, drawn in request order
	StreamWarmup                   // the warmup phase's root, from which it draws its own streams
	StreamRepeats                  // each repeat's payload root: repeat r is its own source
	StreamBlocks                   // a Mooncake trace's hash_ids blocks: hash id h is its own source
	StreamSampling                 // --dataset-sampling-strategy: draw (random) or epoch (shuffle) i is its own source
	StreamPrefixes                 // --num-prefix-prompts' texts (prefix k) and the shared system prompt
	StreamPrefixPicks              // which prefix request i starts with: request i is its own source
	StreamTurns                    // multi-turn sessions: session s's turn count is its own source
	StreamTurnDelays               // a session's turn delays: request i's is its own source
	StreamFileOSL                  // --osl for a file's lines without an output length: request i's is its own source
	StreamUserContexts             // --user-context-prompt-length: session s's context is its own source
	StreamRankings                 // synthetic rankings requests: request i's lengths and words are its own source
	StreamImages                   // synthetic images: request i's sizes and pixels are its own source
	StreamAudio                    // synthetic audio: request i's lengths and samples are its own source
	StreamVideo                    // synthetic video: clip k of the pool is its own source
	StreamModels                   // --model-selection-strategy random: request i's model is its own source
	StreamFresh                    // payload seeds drawn for one job (Fresh): draw index under a nonce is its own source
)

// The one recipe, from (root seed, stream, index) to a PCG source, kept in
// this file and nowhere else. Its constants are those every plan so far was
// made with: changing one changes every inputs.json and profile_hash, and
// so every stored baseline's key.
//
//	sequential streams (lengths, payloads, ids):  PCG(root, φ·stream)
//	indexed streams (arrivals, cancellations):    PCG(root ⊕ (salt+stream), index)
//	derived roots (warmup):                       root ⊕ (salt+stream)
var salts = map[uint64]uint64{
	StreamArrivals:      0x5851f42d4c957f2d,
	StreamCancellations: 0x2545f4914f6cdd1d,
	StreamWarmup:        0x94d049bb133111eb,
	StreamBlocks:        0xbf58476d1ce4e5b9,
	StreamSampling:      0xd6e8feb86659fd93,
	StreamPrefixes:      0xa0761d6478bd642f,
	StreamPrefixPicks:   0xe7037ed1a0b428db,
	StreamTurns:         0x8ebc6af09c88c6e3,
	StreamTurnDelays:    0x589965cc75374cc3,
	StreamFileOSL:       0x1d8e4e27c47d124f,
	StreamUserContexts:  0x94d049bb133111eb ^ 0x5bd1e995,
	StreamRankings:      0x2545f4914f6cdd1d ^ 0x9e3779b9,
	StreamImages:        0x5851f42d4c957f2d ^ 0x85ebca6b,
	StreamAudio:         0xd6e8feb86659fd93 ^ 0xc2b2ae35,
	StreamVideo:         0xbf58476d1ce4e5b9 ^ 0x27d4eb2f,
	StreamModels:        0xa0761d6478bd642f ^ 0x165667b1,
	StreamFresh:         0xe7037ed1a0b428db ^ 0xd35a2d97,
}

const phi = 0x9e3779b97f4a7c15 // 2^64 / the golden ratio

// Stream returns the generator of a sequential stream: draws are taken in
// request order.
func Stream(root uint64, stream uint64) *rand.Rand {
	return rand.New(rand.NewPCG(root, phi*stream))
}

// Source is the source of draw index of an indexed stream: a pure function
// of (root, stream, index), so any one draw can be made alone, in any
// worker, in any order.
func Source(root uint64, stream uint64, index uint64) *rand.PCG {
	return rand.NewPCG(Root(root, stream), index)
}

// PayloadSeed is the root of repeat r's prompt words: root itself for a
// lone run (r = 0, the plans every earlier version made), else a draw of
// its own, so repeats share lengths, arrivals and ids but no prompt.
func PayloadSeed(root uint64, repeat int) uint64 {
	if repeat == 0 {
		return root
	}
	return rand.New(Source(root, StreamRepeats, uint64(repeat))).Uint64()
}

// Fresh is a payload seed no plan made from root alone draws: draw index
// under nonce, a number one job (or one search) draws for itself, so its
// prompts are its own while their lengths, arrivals and ids stay root's.
// A profile given it (config.Profile.PayloadSeed) sends those words; the
// run records it as payload_seed, from which, with the root seed, its plan
// is rebuilt. Never 0 (which a profile reads as "none given").
func Fresh(root, nonce, index uint64) uint64 {
	s := rand.New(Source(root^nonce, StreamFresh, index)).Uint64()
	if s == 0 {
		s = phi
	}
	return s
}

// Root derives a stream's own root seed.
func Root(root uint64, stream uint64) uint64 { return root ^ (salts[stream] + stream) }

// Draw is the source of draw index from a root already derived (by Root,
// PayloadSeed, Pool or WekaOwn, or a dataset's words root), for the
// indexed draws of a stream whose root a caller keeps.
func Draw(root, index uint64) *rand.Rand { return rand.New(rand.NewPCG(root, index)) }

// Pool is the root of pool k's draws in a random_pool folder, from the
// sampling root: root ⊕ φ·(k+1) (its constant since random_pool folders
// came; a pool is its own source).
func Pool(sampling uint64, k int) uint64 { return sampling ^ uint64(k+1)*phi }

// WekaOwn is the root of a weka trace's own tokens (the text beyond its
// hash ids), from the trace's root: root ⊕ "own" (0x6f776e, its constant
// since weka_trace came).
func WekaOwn(trace uint64) uint64 { return trace ^ 0x6f776e }
