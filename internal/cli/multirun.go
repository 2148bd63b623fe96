package cli

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"time"

	"gonum.org/v1/gonum/stat/distuv"

	"github.com/aiperf-action/aiperf-action/internal/config"
	"github.com/aiperf-action/aiperf-action/internal/report"
	"github.com/aiperf-action/aiperf-action/internal/result"
	"github.com/aiperf-action/aiperf-action/internal/run"
)

// multiRun is AIPerf's --num-profile-runs: the same seeded profile run N
// times, each in profile_runs/run_NNNN, and each metric's statistics across
// the runs in aggregate/profile_export_aiperf_aggregate.json (.csv), with
// the t interval of the mean at --confidence-level.
type multiRun struct {
	runs            int
	confidence      float64
	cooldown        float64
	warmupFirstOnly bool
}

func (m *multiRun) bind(fs interface {
	IntVar(*int, string, int, string)
	Float64Var(*float64, string, float64, string)
	BoolVar(*bool, string, bool, string)
	SetAnnotation(string, string, []string) error
}) {
	fs.IntVar(&m.runs, "num-profile-runs", 1, "run the profile this many times (each its folder under profile_runs/, the same seeded workload) and write each metric's mean and t interval across them in aggregate/ (AIPerf's)")
	fs.Float64Var(&m.confidence, "confidence-level", 0.95, "of --num-profile-runs' intervals")
	fs.Float64Var(&m.cooldown, "profile-run-cooldown-seconds", 0, "seconds between --num-profile-runs' runs")
	fs.BoolVar(&m.warmupFirstOnly, "profile-run-disable-warmup-after-first", true, "warm up before the first of --num-profile-runs' runs only (false: before each)")
	for _, n := range []string{"num-profile-runs", "confidence-level", "profile-run-cooldown-seconds", "profile-run-disable-warmup-after-first"} {
		fs.SetAnnotation(n, config.GroupAnnotation, []string{"Output"})
	}
}

// aggStat is one metric's statistics across the runs, in AIPerf's keys.
type aggStat struct {
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

func (m *multiRun) check() error {
	switch {
	case m.runs < 1:
		return fmt.Errorf("--num-profile-runs %d: want at least 1", m.runs)
	case !(m.confidence > 0 && m.confidence < 1):
		return fmt.Errorf("--confidence-level %g: want strictly between 0 and 1", m.confidence)
	case m.cooldown < 0:
		return fmt.Errorf("--profile-run-cooldown-seconds %g: must not be negative", m.cooldown)
	}
	return nil
}

// execute runs the profile m.runs times and writes the aggregate.
func (m *multiRun) execute(ctx context.Context, p config.Profile, cmdline string, stdout, stderr io.Writer) int {
	dir := p.ArtifactDir
	if dir == "" {
		dir = run.DefaultDir(&p)
	}
	var runs []*result.Run
	var labels []string
	var failed []map[string]string
	code := ExitOK
	for i := 1; i <= m.runs; i++ {
		if i > 1 && m.cooldown > 0 {
			select {
			case <-ctx.Done():
			case <-time.After(time.Duration(m.cooldown * float64(time.Second))):
			}
		}
		if ctx.Err() != nil {
			code = ExitInterrupted
			break
		}
		q := p
		label := fmt.Sprintf("run_%04d", i)
		q.ArtifactDir = filepath.Join(dir, "profile_runs", label)
		if i > 1 && m.warmupFirstOnly {
			q.WarmupRequestCount, q.WarmupDuration, q.NumWarmupSessions = 0, 0, 0
		}
		fmt.Fprintf(stdout, "profile run %d of %d: %s\n", i, m.runs, q.ArtifactDir)
		res, err := run.Profile(ctx, &q, run.Options{Cmdline: cmdline, Stderr: stderr, Scenario: label})
		if err != nil {
			fmt.Fprintf(stderr, "aiperf-action profile: %s: %v\n", label, err)
			failed = append(failed, map[string]string{"label": label, "error": err.Error()})
			if c := run.ExitCode(err); c == ExitInterrupted {
				code = c
				break
			}
			continue
		}
		runs = append(runs, res.Run)
		labels = append(labels, label)
	}
	if len(runs) < 2 {
		fmt.Fprintf(stderr, "aiperf-action profile: %d of %d runs succeeded: intervals across runs need at least 2\n", len(runs), m.runs)
		return max(code, ExitError)
	}
	stats := aggregate(runs, m.confidence)
	doc := map[string]any{
		"metadata": map[string]any{"aggregation_type": "confidence", "num_profile_runs": m.runs, "num_successful_runs": len(runs),
			"confidence_level": m.confidence, "run_labels": labels, "failed_runs": failed},
		"metrics": stats,
	}
	b, _ := json.MarshalIndent(doc, "", "  ")
	agg := filepath.Join(dir, "aggregate")
	if err := os.MkdirAll(agg, 0o755); err == nil {
		err = result.WriteFileAtomic(filepath.Join(agg, "profile_export_aiperf_aggregate.json"), append(b, '\n'))
		if err == nil {
			err = result.WriteFileAtomic(filepath.Join(agg, "profile_export_aiperf_aggregate.csv"), aggregateCSV(stats))
		}
		if err != nil {
			fmt.Fprintf(stderr, "aiperf-action profile: write %s: %v\n", agg, err)
			return ExitError
		}
	}
	report.Console(stdout, runs[len(runs)-1])
	fmt.Fprintf(stdout, "\nAcross %d runs (%.0f%% t intervals of the mean):\n", len(runs), 100*m.confidence)
	for _, k := range []string{"time_to_first_token_p50", "time_to_first_token_p99", "inter_token_latency_p50", "request_latency_p99", "output_token_throughput_avg", "request_throughput_avg"} {
		if s, ok := stats[k]; ok {
			fmt.Fprintf(stdout, "  %-30s %10.3f %s  [%.3f, %.3f]  cv %.1f%%\n", k, s.Mean, s.Unit, s.CILow, s.CIHigh, 100*s.CV)
		}
	}
	fmt.Fprintf(stdout, "Artifacts: %s\n", dir)
	return code
}

// aggregate is each metric statistic's spread across the runs: a
// distribution's avg and percentiles as <metric>_<stat>, a rate as
// <metric>_avg.
func aggregate(runs []*result.Run, conf float64) map[string]aggStat {
	vals := map[string][]float64{}
	units := map[string]string{}
	for _, r := range runs {
		for name, m := range r.Metrics {
			if d := m.Dist; d != nil {
				for _, st := range []string{"avg", "p50", "p90", "p95", "p99"} {
					if v, ok := d.Get(st); ok {
						vals[name+"_"+st] = append(vals[name+"_"+st], v)
						units[name+"_"+st] = d.Unit
					}
				}
			} else if m.Rate != nil {
				vals[name+"_avg"] = append(vals[name+"_avg"], m.Rate.Value)
				units[name+"_avg"] = m.Rate.Unit
			}
		}
	}
	out := map[string]aggStat{}
	for k, xs := range vals {
		if len(xs) != len(runs) {
			continue // (a metric some runs lack has no spread across them all)
		}
		n := float64(len(xs))
		s := aggStat{Min: xs[0], Max: xs[0], Unit: units[k]}
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

func aggregateCSV(stats map[string]aggStat) []byte {
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
