package cli

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/spf13/pflag"

	"github.com/aiperf-action/aiperf-action/internal/capacity"
	"github.com/aiperf-action/aiperf-action/internal/config"
	"github.com/aiperf-action/aiperf-action/internal/record"
	"github.com/aiperf-action/aiperf-action/internal/result"
	"github.com/aiperf-action/aiperf-action/internal/run"
)

// SearchFile is the search's record in its artifact folder: its options,
// every probe (with its run folder) and the estimate, rewritten after
// each probe.
const SearchFile = "search.json"

// searchSLO is what a request must meet to be good, in ms from when it
// was due (so an open loop's queueing counts); 0: no bound.
type searchSLO struct {
	TTFTms float64 `json:"ttft_ms,omitempty"`
	ITLms  float64 `json:"itl_ms,omitempty"`
	E2Ems  float64 `json:"e2e_ms,omitempty"`
}

// good judges one record: a failed or cancelled request is a miss.
func (s searchSLO) good(r *record.Record) bool {
	if !r.OK() {
		return false
	}
	if s.TTFTms > 0 && (!r.Streaming || r.FirstToken == 0 || float64(r.FirstToken-r.Due)/1e6 > s.TTFTms) {
		return false
	}
	if s.ITLms > 0 && r.OSL > 1 && len(r.Chunks) > 0 {
		itl := float64(r.Chunks[len(r.Chunks)-1]-r.FirstToken) / 1e6 / float64(r.OSL-1)
		if itl > s.ITLms {
			return false
		}
	}
	if s.E2Ems > 0 && float64(r.End-r.Due)/1e6 > s.E2Ems {
		return false
	}
	return true
}

// searchDoc is search.json.
type searchDoc struct {
	Schema   string            `json:"schema"`
	SLO      searchSLO         `json:"slo"`
	Target   float64           `json:"target"`
	Key      string            `json:"key"` // what a resumed search must match: a digest of the profile and the search options
	Probes   []searchProbe     `json:"probes"`
	Estimate capacity.Estimate `json:"estimate"`
	Stopped  string            `json:"stopped,omitempty"`
}

type searchProbe struct {
	capacity.Probe
	Dir string `json:"dir"` // the probe's run folder, under the search's
}

func runSearch(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := pflag.NewFlagSet("search", pflag.ContinueOnError)
	p := config.DefaultProfile
	p.Bind(fs)
	var slo searchSLO
	var o capacity.Options
	var targetPct float64
	group := func(names ...string) {
		for _, n := range names {
			fs.SetAnnotation(n, config.GroupAnnotation, []string{"Search"})
		}
	}
	fs.Float64Var(&slo.TTFTms, "ttft-sla-ms", 0, "objective: time to first token, ms from when the request was due (AIPerf's name)")
	fs.Float64Var(&slo.ITLms, "itl-sla-ms", 0, "objective: inter-token latency, ms (AIPerf's name)")
	fs.Float64Var(&slo.E2Ems, "e2e-sla-ms", 0, "objective: request latency, ms from when the request was due (AIPerf's name)")
	fs.Float64Var(&targetPct, "search-attainment", 95, "percent of a probe's requests that must meet every objective (errors count as misses)")
	fs.Float64Var(&o.Start, "search-start", 1, "the first probe's request rate, requests/s")
	fs.Float64Var(&o.Max, "search-max", 0, "the highest request rate probed (0: none but the probe budget)")
	fs.Float64Var(&o.Step, "search-step", 1.5, "the staircase's factor between probes, until the attainment crosses the target")
	fs.Float64Var(&o.Precision, "search-precision", 0.05, "stop once the capacity's interval is at most this share of it")
	fs.IntVar(&o.MaxProbes, "search-max-iterations", 25, "the most probes (AIPerf's name)")
	fs.Float64Var(&o.Confidence, "confidence-level", 0.95, "of the capacity's interval (AIPerf's name)")
	group("ttft-sla-ms", "itl-sla-ms", "e2e-sla-ms", "search-attainment", "search-start", "search-max", "search-step", "search-precision", "search-max-iterations", "confidence-level")
	flags, positional := config.SplitArgs(fs, args)
	if code, ok := parseFlags(fs, flags, stdout, stderr); !ok {
		return code
	}
	if len(positional) == 1 && !fs.Changed("model") {
		p.Model = positional[0]
	} else if len(positional) > 0 {
		fmt.Fprintf(stderr, "aiperf-action search: unexpected argument %q\n", strings.Join(positional, " "))
		return ExitError
	}
	if !fs.Changed("url") {
		p.URL = config.DefaultURL
	}
	o.Target = targetPct / 100
	if !fs.Changed("request-count") && !fs.Changed("num-requests") {
		p.RequestCount = 300 // (a probe of AIPerf's default 10 requests decides nothing)
	}
	var bad []string
	if slo == (searchSLO{}) {
		bad = append(bad, "give at least one objective: --ttft-sla-ms, --itl-sla-ms or --e2e-sla-ms")
	}
	if (slo.TTFTms > 0 || slo.ITLms > 0) && !p.Streaming {
		bad = append(bad, "--ttft-sla-ms and --itl-sla-ms need --streaming (a first token is only seen in a stream)")
	}
	if !(o.Target > 0 && o.Target < 1) {
		bad = append(bad, fmt.Sprintf("--search-attainment %g: want a percentage strictly between 0 and 100", targetPct))
	}
	if fs.Changed("request-rate") || fs.Changed("concurrency") || fs.Changed("benchmark-duration") || fs.Changed("fixed-schedule") || p.InputFile != "" && p.Trace() {
		bad = append(bad, "the search sets each probe's --request-rate (an open loop of --request-count requests): leave out --request-rate, --concurrency, --benchmark-duration and traces")
	}
	if len(bad) > 0 {
		fmt.Fprintf(stderr, "aiperf-action search: %s\n", strings.Join(bad, "; "))
		return ExitError
	}
	dir := p.ArtifactDir
	if dir == "" {
		dir = filepath.Join("artifacts", "search")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		fmt.Fprintf(stderr, "aiperf-action search: --artifact-dir: %v\n", err)
		return ExitError
	}
	keyb, err := json.Marshal(struct {
		P config.Profile
		S searchSLO
		O capacity.Options
	}{p, slo, o})
	if err != nil {
		fmt.Fprintf(stderr, "aiperf-action search: %v\n", err)
		return ExitError
	}
	// The key is a digest: the profile holds --api-key, --header and
	// --otel-headers values, which search.json must not.
	sum := sha256.Sum256(keyb)
	doc := searchDoc{Schema: "aiperf-action/search/v1", SLO: slo, Target: o.Target, Key: "sha256:" + hex.EncodeToString(sum[:])}
	var done []capacity.Probe
	if b, err := os.ReadFile(filepath.Join(dir, SearchFile)); err == nil {
		var prev searchDoc
		if err := json.Unmarshal(b, &prev); err != nil {
			fmt.Fprintf(stderr, "aiperf-action search: %s: %v (move it away to start again)\n", filepath.Join(dir, SearchFile), err)
			return ExitError
		}
		if prev.Key != doc.Key {
			fmt.Fprintf(stderr, "aiperf-action search: %s is another search's (other flags): give another --artifact-dir, or move it away\n", filepath.Join(dir, SearchFile))
			return ExitError
		}
		doc.Probes = prev.Probes
		for _, sp := range prev.Probes {
			done = append(done, sp.Probe)
		}
		fmt.Fprintf(stdout, "resuming: %d probes in %s\n", len(done), dir)
	}
	baseSeed := p.Seed
	save := func() error {
		b, _ := json.MarshalIndent(doc, "", "  ")
		return result.WriteFileAtomic(filepath.Join(dir, SearchFile), append(b, '\n'))
	}
	prober := capacity.ProberFunc(func(ctx context.Context, load float64, rep int) (capacity.Probe, error) {
		q := p
		q.RequestRate, q.Seed = load, baseSeed+uint64(rep) // (each replicate its seed, the same at every load)
		q.ArtifactDir = filepath.Join(dir, fmt.Sprintf("probe-%02d-rate-%.4g-r%d", len(doc.Probes)+1, load, rep))
		res, err := run.Profile(ctx, &q, run.Options{Cmdline: "aiperf-action search " + strings.Join(args, " "), Stderr: stderr, KeepRecords: true, Scenario: "search"})
		if err != nil && (res == nil || res.Run == nil || errors.Is(err, context.Canceled) || ctx.Err() != nil) {
			return capacity.Probe{}, err
		}
		// A run that failed by its errors is still a measurement: its
		// errors are misses.
		recs := make([]*record.Record, 0, len(res.Records))
		for i := range res.Records {
			if !res.Records[i].Warmup {
				recs = append(recs, &res.Records[i])
			}
		}
		sort.Slice(recs, func(i, j int) bool { return recs[i].Due < recs[j].Due })
		flags := make([]bool, len(recs))
		good := 0
		for i, r := range recs {
			if flags[i] = slo.good(r); flags[i] {
				good++
			}
		}
		if len(recs) == 0 {
			return capacity.Probe{}, fmt.Errorf("the probe at %.4g requests/s recorded no request", load)
		}
		pb := capacity.Probe{Load: load, N: len(recs), Good: good, Replicate: rep, Seed: q.Seed, Effective: capacity.EffectiveN(flags, 10)}
		doc.Probes = append(doc.Probes, searchProbe{Probe: pb, Dir: filepath.Base(q.ArtifactDir)})
		return pb, save()
	})
	o.OnProbe = func(pb capacity.Probe, e capacity.Estimate) {
		fmt.Fprintf(stdout, "probe %2d: %8.4g requests/s (run %d): %5.1f%% of %d requests good; %s\n", len(doc.Probes), pb.Load, pb.Replicate+1, 100*pb.Attainment(), pb.N, e)
	}
	res, err := capacity.Search(ctx, prober, o, done)
	doc.Estimate, doc.Stopped = res.Estimate, res.Stopped
	if len(doc.Probes) > 0 {
		if serr := save(); serr != nil && err == nil {
			err = serr
		}
	}
	if len(res.Probes) > 0 {
		fmt.Fprintf(stdout, "\n%s; stopped on %s after %d probes. %s\n", res.Estimate, res.Stopped, len(res.Probes), filepath.Join(dir, SearchFile))
	}
	if err != nil {
		fmt.Fprintf(stderr, "aiperf-action search: %v\n", err)
		if ctx.Err() != nil {
			return ExitInterrupted
		}
		return ExitError
	}
	return ExitOK
}
