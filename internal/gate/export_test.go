package gate

import "github.com/aiperf-action/aiperf-action/internal/config"

// PayloadSeed is the payload seed the gate gives scenario name's repeat at
// try (its baseline server's arm where baseline is set, else the
// candidate's) in a job whose seed and nonce these are: for tests that
// send a job's prompts before it does.
func PayloadSeed(seed, nonce uint64, name string, repeat, try int, baseline bool) uint64 {
	arm := armCandidate
	if baseline {
		arm = armBaseline
	}
	return (&gate{nonce: nonce, cfg: &config.Gate{Seed: seed}}).payloadSeed(name, repeat, arm, try)
}
