package schedule

import "testing"

// The warmup takes the profiling phase's arrival pattern, prefill limit,
// concurrency ramp and grace unless AIPerf's --warmup-* flags say others.
func TestWarmupPhaseSettings(t *testing.T) {
	t.Parallel()
	p := profile()
	p.RequestRate, p.ArrivalPattern, p.PrefillConcurrency, p.ConcurrencyRampDuration, p.GracePeriod = 100, "constant", 3, 2, 7
	p.WarmupRequestCount = 20
	pl, err := Build(p, 1)
	if err != nil {
		t.Fatal(err)
	}
	w := &pl.Phases[0]
	if !w.Warmup() || w.Prefill != 3 || w.ConcRampNs != 2e9 || w.GraceNs != 7e9 {
		t.Fatalf("warmup %+v: want the profiling phase's prefill 3, ramp 2 s, grace 7 s", w)
	}
	for i, e := range entries(t, w) {
		if want := int64(i) * 10_000_000; e.DueNs < want-1 || e.DueNs > want+1 {
			t.Fatalf("warmup entry %d due %d, want %d (--arrival-pattern constant)", i, e.DueNs, want)
		}
	}
	zero := 0.0
	p.WarmupArrivalPattern, p.WarmupPrefillConcurrency, p.WarmupConcurrencyRampDuration, p.WarmupGracePeriod = "poisson", 1, 0.5, &zero
	pl, err = Build(p, 1)
	if err != nil {
		t.Fatal(err)
	}
	w = &pl.Phases[0]
	if w.Prefill != 1 || w.ConcRampNs != 5e8 || w.GraceNs != 0 {
		t.Fatalf("warmup %+v: want --warmup-prefill-concurrency 1, ramp 0.5 s, grace 0", w)
	}
	even := true
	for i, e := range entries(t, w) {
		if want := int64(i) * 10_000_000; e.DueNs < want-1 || e.DueNs > want+1 {
			even = false
		}
	}
	if even {
		t.Fatal("--warmup-arrival-pattern poisson gave evenly spaced dues")
	}
	if pl.Profiling().Prefill != 3 {
		t.Fatal("the warmup's flags changed the profiling phase")
	}
}

// The prefill ramp and the rate ramp: the warmup takes the profiling
// phase's unless --warmup-prefill-concurrency-ramp-duration and
// --warmup-request-rate-ramp-duration say others; a rate ramp spreads the
// warmup's first dues out.
func TestWarmupRamps(t *testing.T) {
	t.Parallel()
	p := profile()
	p.RequestRate, p.ArrivalPattern, p.PrefillConcurrency, p.PrefillRampDuration = 100, "constant", 4, 3
	p.WarmupRequestCount = 20
	build := func() (*Phase, *Phase) {
		t.Helper()
		pl, err := Build(p, 1)
		if err != nil {
			t.Fatal(err)
		}
		return &pl.Phases[0], pl.Profiling()
	}
	w, prof := build()
	if w.PrefillRamp != 3e9 || prof.PrefillRamp != 3e9 {
		t.Fatalf("prefill ramp: warmup %d, profiling %d ns; want 3 s both", w.PrefillRamp, prof.PrefillRamp)
	}
	flat := entries(t, w)[5].DueNs
	p.WarmupPrefillRampDuration, p.WarmupRateRampDuration = 1, 2
	w, prof = build()
	if w.PrefillRamp != 1e9 || prof.PrefillRamp != 3e9 {
		t.Fatalf("prefill ramp: warmup %d, profiling %d ns; want 1 s and 3 s", w.PrefillRamp, prof.PrefillRamp)
	}
	if ramped := entries(t, w)[5].DueNs; ramped <= flat {
		t.Fatalf("warmup entry 5 due at %d ns with a 2 s rate ramp, %d without: the ramp should start it slower", ramped, flat)
	}
}
