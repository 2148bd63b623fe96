package run

import (
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/aiperf-action/aiperf-action/internal/config"
)

// PrefillRecipe takes AIPerf's `--search-recipe prefill-ttft-curve` and
// its --isl-min and --isl-max (256 and 32768 unless given, its documented
// example's) out of args; ok says it was there.
func PrefillRecipe(args []string) (rest []string, isls []float64, ok bool, err error) {
	lo, hi := 256, 32768
	for i := 0; i < len(args); i++ {
		a := args[i]
		name, val, inline := strings.Cut(a, "=")
		switch name {
		case "--search-recipe", "--isl-min", "--isl-max":
		default:
			rest = append(rest, a)
			continue
		}
		if !inline {
			if i+1 >= len(args) {
				return nil, nil, false, fmt.Errorf("%s needs a value", name)
			}
			i++
			val = args[i]
		}
		switch name {
		case "--search-recipe":
			if val != "prefill-ttft-curve" {
				return nil, nil, false, nil
			}
			ok = true
		case "--isl-min", "--isl-max":
			n, perr := strconv.Atoi(val)
			if perr != nil {
				return nil, nil, false, fmt.Errorf("%s %q: want a whole number of tokens", name, val)
			}
			if name == "--isl-min" {
				lo = n
			} else {
				hi = n
			}
		}
	}
	if !ok {
		return nil, nil, false, nil
	}
	isls, err = PrefillISLs(lo, hi)
	return rest, isls, true, err
}

// PlanPrefillCurve plans the recipe's sweep in p: its input lengths at concurrency 1,
// then the fit (FitPrefillCurve) in sweep_aggregate/prefill_curve.json.
func PlanPrefillCurve(p *config.Profile, changed func(flag string) bool, isls []float64, out io.Writer) (func(*SweepResult) error, error) {
	if !p.Streaming {
		return nil, fmt.Errorf("--search-recipe prefill-ttft-curve needs --streaming (a first token is only seen in a stream)")
	}
	for _, f := range []string{"concurrency", "request-rate", "isl", "synthetic-input-tokens-mean", "input-file", "fixed-schedule"} {
		if changed(f) {
			return nil, fmt.Errorf("--search-recipe prefill-ttft-curve sets each run's input length and a concurrency of 1: leave out --%s", f)
		}
	}
	p.Concurrency, p.ConcurrencySet = 1, true
	p.ISLMean = int(isls[0])
	p.Sweep = &config.Sweep{Param: config.SweepISL, Values: isls}
	return func(res *SweepResult) error {
		c, err := FitPrefillCurve(res)
		if err != nil {
			return err
		}
		path, err := WritePrefillCurve(res.Dir, c)
		if err != nil {
			return err
		}
		terms := map[string]string{"linear": "%.4g × ISL + %.4g", "quadratic": "%.4g × ISL² + %.4g × ISL + %.4g"}[c.FitForm]
		args := make([]any, len(c.Coefficients))
		for i, v := range c.Coefficients {
			args[i] = v
		}
		note := ""
		if c.BelowFloor {
			note = fmt.Sprintf(" (below the %.2f floor: a weak fit)", CurveFloor)
		}
		fmt.Fprintf(out, "TTFT(ms) = "+terms+", %s fit, r² %.3f%s: %s\n", append(args, c.FitForm, c.RSquared, note, path)...)
		return nil
	}, nil
}
