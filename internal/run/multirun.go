package run

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"time"

	"github.com/aiperf-action/aiperf-action/internal/config"
	"github.com/aiperf-action/aiperf-action/internal/result"
	"gonum.org/v1/gonum/stat/distuv"
)

// Repeat is AIPerf's --num-profile-runs: the same seeded profile run Runs
// times, each in profile_runs/run_NNNN, Cooldown seconds apart, a warmup
// before the first only when WarmupFirstOnly.
type Repeat struct {
	Runs            int
	Confidence      float64
	Cooldown        float64
	WarmupFirstOnly bool
}

// Aggregated is what the runs gave: the good runs and their labels, the
// failed ones, each metric statistic across the runs, and the folder.
type Aggregated struct {
	Dir         string
	Runs        []*result.Run
	Labels      []string
	Failed      []map[string]string
	Stats       map[string]AggStat
	Interrupted bool
}

// AggStat is one metric's statistics across the runs, in AIPerf's keys.
type AggStat struct {
	Mean      float64 `json:"mean"`
	Std       float64 `json:"std"`
	Min       float64 `json:"min"`
	Max       float64 `json:"max"`
	CV        float64 `json:"cv"`
	SE        float64 `json:"se"`
	CILow     float64 `json:"ci_low"`
	CIHigh    float64 `json:"ci_high"`
	TCritical float64 `json:"t_critical"`
	Unit      string  `json:"unit"`
}

// ProfileRuns runs p rp.Runs times and writes each metric's spread across
// them in aggregate/profile_export_aiperf_aggregate.json and .csv, with
// the t interval of the mean at rp.Confidence. Fewer than two good runs
// is an error. started sees each run's number and folder as it begins.
func ProfileRuns(ctx context.Context, p config.Profile, rp Repeat, opt Options, started func(i int, dir string)) (*Aggregated, error) {
	agg := &Aggregated{Dir: p.ArtifactDir}
	if agg.Dir == "" {
		agg.Dir = DefaultDir(&p)
	}
	for i := 1; i <= rp.Runs; i++ {
		if i > 1 && rp.Cooldown > 0 {
			select {
			case <-ctx.Done():
			case <-time.After(time.Duration(rp.Cooldown * float64(time.Second))):
			}
		}
		if ctx.Err() != nil {
			agg.Interrupted = true
			break
		}
		q := p
		label := fmt.Sprintf("run_%04d", i)
		q.ArtifactDir = filepath.Join(agg.Dir, "profile_runs", label)
		if i > 1 && rp.WarmupFirstOnly {
			q.WarmupRequestCount, q.WarmupDuration, q.NumWarmupSessions = 0, 0, 0
		}
		if started != nil {
			started(i, q.ArtifactDir)
		}
		o := opt
		o.Scenario = label
		res, err := Profile(ctx, &q, o)
		if err != nil {
			agg.Failed = append(agg.Failed, map[string]string{"label": label, "error": err.Error()})
			if ExitCode(err) == ExitInterrupted {
				agg.Interrupted = true
				break
			}
			continue
		}
		agg.Runs = append(agg.Runs, res.Run)
		agg.Labels = append(agg.Labels, label)
	}
	if len(agg.Runs) < 2 {
		return agg, fmt.Errorf("%d of %d runs succeeded: intervals across runs need at least 2", len(agg.Runs), rp.Runs)
	}
	agg.Stats = AggregateRuns(agg.Runs, rp.Confidence)
	err := writeAggregate(filepath.Join(agg.Dir, "aggregate"), map[string]any{"aggregation_type": "confidence", "num_profile_runs": rp.Runs,
		"num_successful_runs": len(agg.Runs), "confidence_level": rp.Confidence, "run_labels": agg.Labels, "failed_runs": agg.Failed}, agg.Stats)
	return agg, err
}

// writeAggregate writes AIPerf's confidence aggregate of several runs,
// profile_export_aiperf_aggregate.json and .csv, in dir.
func writeAggregate(dir string, meta map[string]any, stats map[string]AggStat) error {
	b, _ := json.MarshalIndent(map[string]any{"metadata": meta, "metrics": stats}, "", "  ")
	err := os.MkdirAll(dir, 0o755)
	if err == nil {
		err = result.WriteFileAtomic(filepath.Join(dir, "profile_export_aiperf_aggregate.json"), append(b, '\n'))
	}
	if err == nil {
		err = result.WriteFileAtomic(filepath.Join(dir, "profile_export_aiperf_aggregate.csv"), aggregateCSV(stats))
	}
	if err != nil {
		return fmt.Errorf("write %s: %v", dir, err)
	}
	return nil
}

// AggregateRuns is each metric statistic's spread across the runs: a
// distribution's avg and percentiles as <metric>_<stat>, a rate as
// <metric>_avg.
func AggregateRuns(runs []*result.Run, conf float64) map[string]AggStat {
	vals := map[string][]float64{}
	units := map[string]string{}
	for _, r := range runs {
		one, u := runStats(r)
		for k, v := range one {
			vals[k] = append(vals[k], v)
			units[k] = u[k]
		}
	}
	out := map[string]AggStat{}
	for k, xs := range vals {
		if len(xs) != len(runs) {
			continue // (a metric some runs lack has no spread across them all)
		}
		n := float64(len(xs))
		s := AggStat{Min: xs[0], Max: xs[0], Unit: units[k]}
		for _, x := range xs {
			s.Mean += x / n
			s.Min, s.Max = math.Min(s.Min, x), math.Max(s.Max, x)
		}
		ss := 0.0
		for _, x := range xs {
			ss += (x - s.Mean) * (x - s.Mean)
		}
		s.Std = math.Sqrt(ss / (n - 1))
		s.SE = s.Std / math.Sqrt(n)
		if s.Mean != 0 {
			s.CV = s.Std / math.Abs(s.Mean)
		}
		s.TCritical = distuv.StudentsT{Mu: 0, Sigma: 1, Nu: n - 1}.Quantile(1 - (1-conf)/2)
		s.CILow, s.CIHigh = s.Mean-s.TCritical*s.SE, s.Mean+s.TCritical*s.SE
		out[k] = s
	}
	return out
}

// runStats is one run's statistics by AIPerf's aggregate names: a
// distribution's avg and percentiles as <metric>_<stat>, a rate as
// <metric>_avg; and their units.
func runStats(r *result.Run) (map[string]float64, map[string]string) {
	vals, units := map[string]float64{}, map[string]string{}
	for name, m := range r.Metrics {
		if d := m.Dist; d != nil {
			for _, st := range []string{"avg", "p50", "p90", "p95", "p99"} {
				if v, ok := d.Get(st); ok {
					vals[name+"_"+st], units[name+"_"+st] = v, d.Unit
				}
			}
		} else if m.Rate != nil {
			vals[name+"_avg"], units[name+"_avg"] = m.Rate.Value, m.Rate.Unit
		}
	}
	return vals, units
}

// aggregateCSV is the aggregate as AIPerf's CSV.
func aggregateCSV(stats map[string]AggStat) []byte {
	var buf bytes.Buffer
	w := csv.NewWriter(&buf)
	w.Write([]string{"Metric", "Unit", "mean", "std", "min", "max", "cv", "se", "ci_low", "ci_high", "t_critical"})
	keys := make([]string, 0, len(stats))
	for k := range stats {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	f := func(v float64) string { return strconv.FormatFloat(v, 'g', 8, 64) }
	for _, k := range keys {
		s := stats[k]
		w.Write([]string{k, s.Unit, f(s.Mean), f(s.Std), f(s.Min), f(s.Max), f(s.CV), f(s.SE), f(s.CILow), f(s.CIHigh), f(s.TCritical)})
	}
	w.Flush()
	return buf.Bytes()
}
