package run

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/aiperf-action/aiperf-action/internal/config"
	"github.com/aiperf-action/aiperf-action/internal/result"
)

// Sweep modes: AIPerf's --parameter-sweep-mode.
const (
	SweepRepeated    = "repeated"    // trials outer, values inner
	SweepIndependent = "independent" // values outer, trials inner
)

// SweepOptions are AIPerf's parameter sweep's settings: the trials of each
// value (Repeat.Runs, 1 for none), their order (Mode), whether every
// value takes the same seed, and the pause between values.
type SweepOptions struct {
	Repeat   Repeat
	Mode     string
	SameSeed bool
	Cooldown float64 // --parameter-sweep-cooldown-seconds, between values
}

// SweepValue is one value's outcome: its label (concurrency_10), its good
// runs and their statistics.
type SweepValue struct {
	Value float64
	Label string
	Runs  []*result.Run
	Stats map[string]SweepStat
}

// SweepResult is a whole sweep.
type SweepResult struct {
	Dir         string
	Param       string
	Values      []SweepValue
	Failed      []map[string]string
	Pareto      []int // indexes into Values
	Interrupted bool
}

// SweepStat is one metric statistic at one value: across its trials, with
// the spread and t interval when there are two or more, else the one
// run's value (no spread is made up).
type SweepStat struct {
	Mean   float64  `json:"mean"`
	Std    *float64 `json:"std,omitempty"`
	Min    float64  `json:"min"`
	Max    float64  `json:"max"`
	CV     *float64 `json:"cv,omitempty"`
	CILow  *float64 `json:"ci_low,omitempty"`
	CIHigh *float64 `json:"ci_high,omitempty"`
	Unit   string   `json:"unit"`
}

// The statistics a sweep's best configurations and Pareto front are read
// from: request throughput (more is better) against the 99th percentile
// of time to first token (less is better), or of request latency where
// there is no first token.
const (
	sweepThroughput = "request_throughput_avg"
	sweepLatency    = "time_to_first_token_p99"
	sweepLatencyAlt = "request_latency_p99"
)

// ProfileSweep runs p at each of its sweep's values (AIPerf's parameter
// sweep), with so.Repeat.Runs trials each, and writes each value's runs,
// its trials' aggregate when there are several, and the sweep's
// aggregate (sweep_aggregate/profile_export_aiperf_sweep.json and .csv:
// each value's statistics, the best configurations and the Pareto front
// of throughput against latency). Each value's seed is the base seed plus
// its index unless so.SameSeed. Interrupted, what ran is written.
func ProfileSweep(ctx context.Context, p config.Profile, so SweepOptions, opt Options, started func(label, dir string)) (*SweepResult, error) {
	sw := p.Sweep
	if sw == nil || len(sw.Values) < 2 {
		return nil, fmt.Errorf("no sweep: give --concurrency or --request-rate several values")
	}
	res := &SweepResult{Dir: p.ArtifactDir, Param: sw.Param, Failed: []map[string]string{}}
	if res.Dir == "" {
		q := p.At(0)
		res.Dir = DefaultDir(&q) + "-" + sw.Param + "_sweep"
	}
	trials := max(so.Repeat.Runs, 1)
	for _, v := range sw.Values {
		res.Values = append(res.Values, SweepValue{Value: v, Label: sw.Param + "_" + strconv.FormatFloat(v, 'g', -1, 64)})
	}
	type cell struct{ v, t int }
	var order []cell
	if so.Mode == SweepIndependent {
		for v := range sw.Values {
			for t := range trials {
				order = append(order, cell{v, t})
			}
		}
	} else {
		for t := range trials {
			for v := range sw.Values {
				order = append(order, cell{v, t})
			}
		}
	}
	dirOf := func(c cell) string {
		label := res.Values[c.v].Label
		switch {
		case trials == 1:
			return filepath.Join(res.Dir, label)
		case so.Mode == SweepIndependent:
			return filepath.Join(res.Dir, label, "profile_runs", fmt.Sprintf("trial_%04d", c.t+1))
		}
		return filepath.Join(res.Dir, "profile_runs", fmt.Sprintf("trial_%04d", c.t+1), label)
	}
	for k, c := range order {
		if k > 0 {
			pause := so.Repeat.Cooldown
			if order[k-1].v != c.v {
				pause = so.Cooldown
			}
			if pause > 0 {
				select {
				case <-ctx.Done():
				case <-time.After(time.Duration(pause * float64(time.Second))):
				}
			}
		}
		if ctx.Err() != nil {
			res.Interrupted = true
			break
		}
		q := p.At(c.v)
		if !so.SameSeed {
			q.Seed += uint64(c.v)
		}
		q.ArtifactDir = dirOf(c)
		if c.t > 0 && so.Repeat.WarmupFirstOnly {
			q.WarmupRequestCount, q.WarmupDuration, q.NumWarmupSessions = 0, 0, 0
		}
		label := res.Values[c.v].Label
		if trials > 1 {
			label += fmt.Sprintf("/trial_%04d", c.t+1)
		}
		if started != nil {
			started(label, q.ArtifactDir)
		}
		o := opt
		o.Scenario = label
		r, err := Profile(ctx, &q, o)
		if err != nil {
			res.Failed = append(res.Failed, map[string]string{"label": label, "error": err.Error()})
			if ExitCode(err) == ExitInterrupted {
				res.Interrupted = true
				break
			}
			continue
		}
		res.Values[c.v].Runs = append(res.Values[c.v].Runs, r.Run)
	}
	var werr error
	for i := range res.Values {
		sv := &res.Values[i]
		if len(sv.Runs) == 0 {
			continue
		}
		sv.Stats = sweepStats(sv.Runs, so.Repeat.Confidence)
		if trials > 1 && len(sv.Runs) >= 2 {
			dir := filepath.Join(res.Dir, "aggregate", sv.Label)
			if so.Mode == SweepIndependent {
				dir = filepath.Join(res.Dir, sv.Label, "aggregate")
			}
			werr = cmpErr(werr, writeAggregate(dir, map[string]any{"aggregation_type": "confidence", "num_profile_runs": trials, "num_successful_runs": len(sv.Runs),
				"confidence_level": so.Repeat.Confidence, sw.Param: sv.Value}, AggregateRuns(sv.Runs, so.Repeat.Confidence)))
		}
	}
	res.Pareto = pareto(res.Values)
	werr = cmpErr(werr, res.write(so, trials))
	good := 0
	for _, sv := range res.Values {
		if len(sv.Runs) > 0 {
			good++
		}
	}
	switch {
	case werr != nil:
		return res, werr
	case good == 0:
		return res, fmt.Errorf("no value of the sweep ran")
	}
	return res, nil
}

func cmpErr(a, b error) error {
	if a != nil {
		return a
	}
	return b
}

// sweepStats is each statistic at one value across its runs.
func sweepStats(runs []*result.Run, conf float64) map[string]SweepStat {
	out := map[string]SweepStat{}
	if len(runs) >= 2 {
		for k, a := range AggregateRuns(runs, conf) {
			a := a
			out[k] = SweepStat{Mean: a.Mean, Std: &a.Std, Min: a.Min, Max: a.Max, CV: &a.CV, CILow: &a.CILow, CIHigh: &a.CIHigh, Unit: a.Unit}
		}
		return out
	}
	vals, units := runStats(runs[0])
	for k, v := range vals {
		out[k] = SweepStat{Mean: v, Min: v, Max: v, Unit: units[k]}
	}
	return out
}

// latencyKey is the latency statistic the sweep compares: TTFT p99 where
// every value has it, else request latency p99.
func latencyKey(vs []SweepValue) string {
	for _, v := range vs {
		if _, ok := v.Stats[sweepLatency]; !ok && len(v.Runs) > 0 {
			return sweepLatencyAlt
		}
	}
	return sweepLatency
}

// pareto is the values no other beats on both throughput (higher) and
// latency (lower).
func pareto(vs []SweepValue) []int {
	lat := latencyKey(vs)
	var front []int
	for i, a := range vs {
		at, ok1 := a.Stats[sweepThroughput]
		al, ok2 := a.Stats[lat]
		if !ok1 || !ok2 {
			continue
		}
		dominated := false
		for j, b := range vs {
			bt, ok1 := b.Stats[sweepThroughput]
			bl, ok2 := b.Stats[lat]
			if i == j || !ok1 || !ok2 {
				continue
			}
			if bt.Mean >= at.Mean && bl.Mean <= al.Mean && (bt.Mean > at.Mean || bl.Mean < al.Mean) {
				dominated = true
				break
			}
		}
		if !dominated {
			front = append(front, i)
		}
	}
	return front
}

// write writes sweep_aggregate/profile_export_aiperf_sweep.json and .csv.
func (res *SweepResult) write(so SweepOptions, trials int) error {
	var values []float64
	var per []map[string]any
	for _, sv := range res.Values {
		values = append(values, sv.Value)
		if len(sv.Runs) == 0 {
			continue
		}
		per = append(per, map[string]any{"parameters": map[string]float64{res.Param: sv.Value}, "num_successful_runs": len(sv.Runs), "metrics": sv.Stats})
	}
	best := map[string]any{}
	lat := latencyKey(res.Values)
	pick := func(key string, better func(a, b float64) bool) (int, bool) {
		at := -1
		for i, sv := range res.Values {
			if s, ok := sv.Stats[key]; ok && (at < 0 || better(s.Mean, res.Values[at].Stats[key].Mean)) {
				at = i
			}
		}
		return at, at >= 0
	}
	if i, ok := pick(sweepThroughput, func(a, b float64) bool { return a > b }); ok {
		s := res.Values[i].Stats[sweepThroughput]
		best["best_throughput"] = map[string]any{"parameters": map[string]float64{res.Param: res.Values[i].Value}, "metric": s.Mean, "unit": s.Unit}
	}
	if i, ok := pick(lat, func(a, b float64) bool { return a < b }); ok {
		s := res.Values[i].Stats[lat]
		best["best_latency_p99"] = map[string]any{"parameters": map[string]float64{res.Param: res.Values[i].Value}, "metric": s.Mean, "unit": s.Unit, "statistic": lat}
	}
	front := []map[string]float64{}
	for _, i := range res.Pareto {
		front = append(front, map[string]float64{res.Param: res.Values[i].Value})
	}
	mode := so.Mode
	if mode == "" {
		mode = SweepRepeated
	}
	doc := map[string]any{
		"metadata": map[string]any{"aggregation_type": "sweep", "sweep_parameters": []map[string]any{{"name": res.Param, "values": values}},
			"num_combinations": len(values), "num_trials_per_value": trials, "sweep_mode": mode, "confidence_level": so.Repeat.Confidence,
			"same_seed": so.SameSeed, "pareto_objectives": []string{sweepThroughput + " (max)", lat + " (min)"}, "failed_runs": res.Failed, "interrupted": res.Interrupted},
		"per_combination_metrics": per,
		"best_configurations":     best,
		"pareto_optimal":          front,
	}
	b, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		return err
	}
	dir := filepath.Join(res.Dir, "sweep_aggregate")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if err := result.WriteFileAtomic(filepath.Join(dir, "profile_export_aiperf_sweep.json"), append(b, '\n')); err != nil {
		return err
	}
	return result.WriteFileAtomic(filepath.Join(dir, "profile_export_aiperf_sweep.csv"), res.csv())
}

func (res *SweepResult) csv() []byte {
	var buf bytes.Buffer
	w := csv.NewWriter(&buf)
	w.Write([]string{res.Param, "Metric", "Unit", "mean", "std", "min", "max", "cv", "ci_low", "ci_high", "pareto_optimal"})
	f := func(v float64) string { return strconv.FormatFloat(v, 'g', 8, 64) }
	opt := func(v *float64) string {
		if v == nil {
			return ""
		}
		return f(*v)
	}
	for i, sv := range res.Values {
		keys := make([]string, 0, len(sv.Stats))
		for k := range sv.Stats {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		front := strconv.FormatBool(slices.Contains(res.Pareto, i))
		for _, k := range keys {
			s := sv.Stats[k]
			w.Write([]string{f(sv.Value), k, s.Unit, f(s.Mean), opt(s.Std), f(s.Min), f(s.Max), opt(s.CV), opt(s.CILow), opt(s.CIHigh), front})
		}
	}
	w.Flush()
	return buf.Bytes()
}

// CheckSweep checks a sweep's flags and each value's profile, before any
// load: the sweep flags only with a sweep, a known mode, no negative
// cooldown, one seed only with --random-seed (set says whether a flag was
// given), and each value positive and given once.
func CheckSweep(p *config.Profile, so SweepOptions, set func(flag string) bool) error {
	sweeping := p.Sweep != nil
	for _, n := range []string{"parameter-sweep-mode", "parameter-sweep-same-seed", "parameter-sweep-cooldown-seconds"} {
		if set(n) && !sweeping {
			return fmt.Errorf("--%s applies to a sweep: give --concurrency or --request-rate several values (10,20,30)", n)
		}
	}
	switch {
	case so.Mode != SweepRepeated && so.Mode != SweepIndependent:
		return fmt.Errorf("--parameter-sweep-mode %q: want repeated or independent", so.Mode)
	case so.Cooldown < 0:
		return fmt.Errorf("--parameter-sweep-cooldown-seconds %g: must not be negative", so.Cooldown)
	case so.SameSeed && !set("random-seed"):
		return fmt.Errorf("--parameter-sweep-same-seed needs --random-seed (the seed every value takes)")
	}
	if !sweeping {
		return nil
	}
	seen := map[float64]bool{}
	for _, x := range p.Sweep.Values {
		if x <= 0 || seen[x] {
			return fmt.Errorf("--%s %v: a sweep's values are each positive and given once", strings.ReplaceAll(p.Sweep.Param, "_", "-"), p.Sweep.Values)
		}
		seen[x] = true
	}
	for i := range p.Sweep.Values {
		q := p.At(i)
		if err := q.Validate(); err != nil {
			return err
		}
	}
	return nil
}
