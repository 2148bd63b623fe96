package gate

// PayloadSeed is the payload seed the gate gives scenario name's repeat
// (its candidate arm) at try, in a job whose seed and nonce these are:
// for tests that send a job's prompts before it does.
func PayloadSeed(seed, nonce uint64, name string, repeat, try int) uint64 {
	g := &gate{nonce: nonce, cfg: nil}
	return g.payloadSeedFor(seed, name, repeat, armCandidate, try)
}
