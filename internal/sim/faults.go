package sim

import (
	"fmt"
	"time"
)

// Faults are injected failures, each a fraction of requests chosen from
// Seed and the request's body (so the same run meets the same faults).
// Each turns into one error kind in the client's records.
type Faults struct {
	ErrorRate      float64       // answer 500
	RateLimitRate  float64       // answer 429 with Retry-After
	DisconnectRate float64       // reset the connection halfway through the stream
	StallRate      float64       // pause the stream for Stall halfway through
	Stall          time.Duration //
	MalformedRate  float64       // one broken chunk halfway through the stream
	Seed           uint64
}

type fault int

const (
	noFault fault = iota
	faultError
	faultRateLimit
	faultDisconnect
	faultStall
	faultMalformed
)

// Check reports rates that cannot be drawn.
func (f Faults) Check() error {
	sum := 0.0
	for _, r := range []struct {
		name string
		v    float64
	}{{"--error-rate", f.ErrorRate}, {"--rate-limit-rate", f.RateLimitRate}, {"--disconnect-rate", f.DisconnectRate}, {"--stall-rate", f.StallRate}, {"--malformed-rate", f.MalformedRate}} {
		if r.v < 0 || r.v > 1 {
			return fmt.Errorf("%s %g: want a fraction from 0 to 1", r.name, r.v)
		}
		sum += r.v
	}
	if sum > 1 {
		return fmt.Errorf("the fault rates add up to %g: at most 1", sum)
	}
	if f.StallRate > 0 && f.Stall <= 0 {
		return fmt.Errorf("--stall-rate needs a positive --stall")
	}
	return nil
}

// pick draws a request's fault from its body hash.
func (f Faults) pick(h uint32) fault {
	x := f.Seed ^ uint64(h)*0x9e3779b97f4a7c15
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	u := float64(x>>11) / (1 << 53)
	for _, c := range []struct {
		rate float64
		f    fault
	}{{f.ErrorRate, faultError}, {f.RateLimitRate, faultRateLimit}, {f.DisconnectRate, faultDisconnect}, {f.StallRate, faultStall}, {f.MalformedRate, faultMalformed}} {
		if u < c.rate {
			return c.f
		}
		u -= c.rate
	}
	return noFault
}
