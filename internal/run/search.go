package run

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/aiperf-action/aiperf-action/internal/capacity"
	"github.com/aiperf-action/aiperf-action/internal/config"
	"github.com/aiperf-action/aiperf-action/internal/record"
	"github.com/aiperf-action/aiperf-action/internal/result"
	"github.com/aiperf-action/aiperf-action/internal/seeds"
)

// SearchFile is a capacity search's record in its artifact folder: its
// options, every probe (with its run folder) and the estimate, rewritten
// after each probe.
const SearchFile = "search.json"

// SearchSLO is what a request must meet to be good, in ms from when it
// was due (so an open loop's queueing counts); 0: no bound.
type SearchSLO struct {
	TTFTms float64 `json:"ttft_ms,omitempty"`
	ITLms  float64 `json:"itl_ms,omitempty"`
	E2Ems  float64 `json:"e2e_ms,omitempty"`
}

// Good judges one record: a failed or cancelled request is a miss.
func (s SearchSLO) Good(r *record.Record) bool {
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

// String is the objectives in words.
func (s SearchSLO) String() string {
	var parts []string
	for _, o := range []struct {
		name string
		v    float64
	}{{"TTFT", s.TTFTms}, {"ITL", s.ITLms}, {"latency", s.E2Ems}} {
		if o.v > 0 {
			parts = append(parts, fmt.Sprintf("%s ≤ %g ms", o.name, o.v))
		}
	}
	return strings.Join(parts, ", ")
}

// SearchDoc is search.json.
type SearchDoc struct {
	Schema   string            `json:"schema"`
	Param    string            `json:"param"` // what a probe's load is: request_rate (requests/s, an open loop) or concurrency (streams, a closed loop)
	SLO      SearchSLO         `json:"slo"`
	Target   float64           `json:"target"`
	Key      string            `json:"key"` // what a resumed search must match: a digest of the profile and the search options
	Probes   []SearchProbe     `json:"probes"`
	Estimate capacity.Estimate `json:"estimate"`
	Stopped  string            `json:"stopped,omitempty"`
}

// SearchProbe is one probe in search.json.
type SearchProbe struct {
	capacity.Probe
	Dir string `json:"dir"` // the probe's run folder, under the search's
}

// ReadSearch reads a search folder's search.json.
func ReadSearch(dir string) (*SearchDoc, error) {
	b, err := os.ReadFile(filepath.Join(dir, SearchFile))
	if err != nil {
		return nil, err
	}
	var doc SearchDoc
	if err := json.Unmarshal(b, &doc); err != nil {
		return nil, fmt.Errorf("%s: %v", filepath.Join(dir, SearchFile), err)
	}
	return &doc, nil
}

// ErrOtherSearch says a folder holds another search's search.json.
var ErrOtherSearch = errors.New("is another search's (other flags): give another --artifact-dir, or move it away")

// SearchOptions are a search's: its folder, the objectives and the
// search's bounds; Resumed sees how many probes an earlier run left.
type SearchOptions struct {
	Dir string
	// Param is the load searched: config.SweepRequestRate (the default)
	// or config.SweepConcurrency (whole numbers, a closed loop).
	Param string
	// Recipe is AIPerf's --search-recipe that asked for it (""), for
	// search_history.json.
	Recipe  string
	SLO     SearchSLO
	Search  capacity.Options
	Run     Options // each probe's (Cmdline, Stderr); KeepRecords is set
	Resumed func(probes int)
	// Take, when set, is called before each probe and the function it
	// returns after it: two searches side by side (a paired A/B gate)
	// take turns through it, probe by probe.
	Take func() (release func())
	// PayloadNonce picks the probes' prompts: probe k sends the words of
	// seeds.Fresh(seed, PayloadNonce, k), its own, so no probe is served
	// from the server's cache of another's (or, with a nonce a job draws,
	// of another job's); their lengths and arrivals stay each replicate's.
	PayloadNonce uint64
}

// SearchStoreKey names a search for the baselines: a digest of the
// profile without its server (URL, artifact folder, credentials and
// exporters) and of the search's own options, so that the same search
// of another build of the server, or on another port, shares it.
func SearchStoreKey(p config.Profile, param string, slo SearchSLO, o capacity.Options) string {
	p.URL, p.MoreURLs, p.ArtifactDir, p.APIKey, p.Headers, p.WorkerListen = "", nil, "", "", nil, ""
	p.ServerMetrics, p.GPUTelemetry, p.OTelURL, p.OTelHeaders = nil, nil, "", nil
	o.OnProbe = nil
	b, _ := json.Marshal(struct {
		P     config.Profile
		S     SearchSLO
		O     capacity.Options
		Param string
	}{p, slo, o, param})
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// Search finds the capacity of p's target: each probe a profile of p at a
// Poisson rate in its own folder, judged request by request against the
// objectives, search.json rewritten after each probe; a search.json of
// the same profile and options in the folder is resumed.
func Search(ctx context.Context, p config.Profile, so SearchOptions) (*SearchDoc, capacity.Result, error) {
	dir, slo, o := so.Dir, so.SLO, so.Search
	if so.Param == "" {
		so.Param = config.SweepRequestRate
	}
	byConcurrency := so.Param == config.SweepConcurrency
	o.Integer = o.Integer || byConcurrency
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, capacity.Result{}, fmt.Errorf("--artifact-dir: %v", err)
	}
	keyb, err := json.Marshal(struct {
		P     config.Profile
		S     SearchSLO
		O     capacity.Options
		Param string
	}{p, slo, o, so.Param})
	if err != nil {
		return nil, capacity.Result{}, err
	}
	// The key is a digest: the profile holds --api-key, --header and
	// --otel-headers values, which search.json must not.
	sum := sha256.Sum256(keyb)
	doc := &SearchDoc{Schema: "aiperf-action/search/v1", Param: so.Param, SLO: slo, Target: o.Target, Key: "sha256:" + hex.EncodeToString(sum[:])}
	var done []capacity.Probe
	path := filepath.Join(dir, SearchFile)
	if _, err := os.Stat(path); err == nil {
		prev, err := ReadSearch(dir)
		if err != nil {
			return nil, capacity.Result{}, fmt.Errorf("%v (move it away to start again)", err)
		}
		if prev.Key != doc.Key {
			return nil, capacity.Result{}, fmt.Errorf("%s %w", path, ErrOtherSearch)
		}
		doc.Probes = prev.Probes
		for _, sp := range prev.Probes {
			done = append(done, sp.Probe)
		}
		if so.Resumed != nil {
			so.Resumed(len(done))
		}
	}
	baseSeed := p.Seed
	save := func() error {
		b, _ := json.MarshalIndent(doc, "", "  ")
		return result.WriteFileAtomic(path, append(b, '\n'))
	}
	prober := capacity.ProberFunc(func(ctx context.Context, load float64, rep int) (capacity.Probe, error) {
		if so.Take != nil {
			release := so.Take()
			defer release()
		}
		q := p
		q.Seed = baseSeed + uint64(rep) // (each replicate its seed, the same at every load)
		q.PayloadSeed = seeds.Fresh(baseSeed, so.PayloadNonce, uint64(len(doc.Probes)))
		what := "rate"
		if byConcurrency {
			q.Concurrency, q.ConcurrencySet, q.RequestRate, what = int(load), true, 0, "concurrency"
		} else {
			q.RequestRate = load
		}
		q.ArtifactDir = filepath.Join(dir, fmt.Sprintf("probe-%02d-%s-%.4g-r%d", len(doc.Probes)+1, what, load, rep))
		ro := so.Run
		ro.KeepRecords, ro.Scenario = true, "search"
		res, err := Profile(ctx, &q, ro)
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
			if flags[i] = slo.Good(r); flags[i] {
				good++
			}
		}
		if len(recs) == 0 {
			return capacity.Probe{}, fmt.Errorf("the probe at %s %.4g recorded no request", so.Param, load)
		}
		pb := capacity.Probe{Load: load, N: len(recs), Good: good, Replicate: rep, Seed: q.Seed, Effective: capacity.EffectiveN(flags, 10)}
		doc.Probes = append(doc.Probes, SearchProbe{Probe: pb, Dir: filepath.Base(q.ArtifactDir)})
		return pb, save()
	})
	res, err := capacity.Search(ctx, prober, o, done)
	if byConcurrency {
		res.Estimate.Unit = "streams"
	}
	doc.Estimate, doc.Stopped = res.Estimate, res.Stopped
	if len(doc.Probes) > 0 {
		if serr := save(); serr != nil && err == nil {
			err = serr
		}
		if herr := WriteSearchHistory(dir, doc, so.Recipe, o.Start, o.Max); herr != nil && err == nil {
			err = herr
		}
	}
	return doc, res, err
}
