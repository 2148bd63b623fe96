package config

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// Sweep is AIPerf's parameter sweep from the command line: several
// values of --concurrency (or of --request-rate), "10,20,30" or "10 20
// 30", each a run of its own. The profile holds the first; the profile
// command runs them all (run.ProfileSweep). A profile run on its own
// (the gate's scenarios) refuses a sweep.
type Sweep struct {
	Param  string    // "concurrency" or "request_rate"
	Values []float64 // in the order given
}

// sweepValue is --concurrency or --request-rate: one value, or several
// for a sweep.
type sweepValue struct {
	p      *Profile
	param  string
	values []float64
}

func (v *sweepValue) String() string {
	if v.p == nil {
		return ""
	}
	if v.param == SweepConcurrency {
		return strconv.Itoa(v.p.Concurrency)
	}
	return strconv.FormatFloat(v.p.RequestRate, 'g', -1, 64)
}

func (v *sweepValue) Type() string {
	if v.param == SweepConcurrency {
		return "int"
	}
	return "float"
}

// Set takes one occurrence of the flag: one value, or a sweep's
// comma-separated values. A later occurrence replaces an earlier one.
func (v *sweepValue) Set(s string) error {
	v.values = nil
	if v.p.Sweep != nil && v.p.Sweep.Param == v.param {
		v.p.Sweep = nil
	}
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f == "" {
			continue
		}
		var x float64
		var err error
		if v.param == SweepConcurrency {
			var n int
			n, err = strconv.Atoi(f)
			x = float64(n)
		} else {
			x, err = strconv.ParseFloat(f, 64)
		}
		if err != nil {
			return fmt.Errorf("%q: not a number", f)
		}
		v.values = append(v.values, x)
	}
	if len(v.values) == 0 {
		return fmt.Errorf("no value")
	}
	v.p.setSweepValue(v.param, v.values[0])
	if len(v.values) > 1 {
		if v.p.Sweep != nil && v.p.Sweep.Param != v.param {
			return fmt.Errorf("a sweep of one parameter at a time: --concurrency and --request-rate both have several values")
		}
		v.p.Sweep = &Sweep{Param: v.param, Values: slices.Clone(v.values)}
	}
	return nil
}

// The parameters a sweep may vary, by AIPerf's names in its sweep output.
const (
	SweepConcurrency = "concurrency"
	SweepRequestRate = "request_rate"
	// SweepISL is the input length, a sweep only AIPerf's prefill-ttft-curve
	// recipe makes (no flag takes several values of it).
	SweepISL = "isl"
)

func (p *Profile) setSweepValue(param string, x float64) {
	switch param {
	case SweepConcurrency:
		p.Concurrency = int(x)
	case SweepISL:
		p.ISLMean = int(x)
	default:
		p.RequestRate = x
	}
}

// At is the profile of the sweep's i-th value: the sweep gone, that value
// set.
func (p Profile) At(i int) Profile {
	q := p
	q.setSweepValue(p.Sweep.Param, p.Sweep.Values[i])
	q.Sweep = nil
	return q
}

// checkSweep refuses a sweep where one run is meant, and bad values.
func (p *Profile) checkSweep(bad badf) {
	if p.Sweep == nil || len(p.Sweep.Values) == 0 {
		return
	}
	flag := "--" + strings.ReplaceAll(p.Sweep.Param, "_", "-")
	bad("%s %v: a sweep of several values is run by `aiperf-action profile` (each value a run of its own); one run here takes one value", flag, p.Sweep.Values)
}
