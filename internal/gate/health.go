package gate

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/aiperf-action/aiperf-action/internal/config"
	"github.com/aiperf-action/aiperf-action/internal/endpoint"
	"github.com/aiperf-action/aiperf-action/internal/result"
	"github.com/aiperf-action/aiperf-action/internal/run"
)

// A run is only a measurement when its requests succeeded: a run whose
// requests all failed (a wrong model name, a server answering 404 to every
// request) has no latencies to judge, and stored as a baseline it would
// make every later pull request compare with nothing. Such runs make the
// scenario FAIL, with or without a baseline, and are never stored.

// brokenRun says why run r is no measurement: no request succeeded, or
// more failed (cancellations aside) than maxErr, the fraction the gate's
// thresholds allow (max-error-rate); "" for a usable run.
func brokenRun(r *result.Run, maxErr float64) string {
	c := r.Counts
	failed := c.FailedNotCancelled()
	switch {
	case c.Requests == 0:
		return "it completed no request"
	case c.OK == 0:
		return fmt.Sprintf("none of its %d requests succeeded (%s)", c.Requests, errorExamples(c.ErrorsByKind, c.ErrorExamples))
	case float64(failed) > maxErr*float64(c.Requests):
		return fmt.Sprintf("%d of its %d requests failed (%.1f%%, above the max-error-rate of %.3g%%: %s)", failed, c.Requests,
			100*float64(failed)/float64(c.Requests), 100*maxErr, errorExamples(c.ErrorsByKind, c.ErrorExamples))
	}
	return ""
}

// errorExamples is each error kind with its count and its first message,
// the most frequent first: "http_404 ×48: The model `x` does not exist.".
func errorExamples(byKind map[string]int, examples map[string]string) string {
	kinds := make([]string, 0, len(byKind))
	for k := range byKind {
		kinds = append(kinds, k)
	}
	sort.Slice(kinds, func(i, j int) bool {
		if byKind[kinds[i]] != byKind[kinds[j]] {
			return byKind[kinds[i]] > byKind[kinds[j]]
		}
		return kinds[i] < kinds[j]
	})
	var parts []string
	for _, k := range kinds {
		p := fmt.Sprintf("%s ×%d", k, byKind[k])
		if m := strings.TrimSpace(examples[k]); m != "" {
			p += ": " + clip(m, 200)
		}
		parts = append(parts, p)
	}
	if len(parts) == 0 {
		return "no error kinds recorded"
	}
	return strings.Join(parts, "; ")
}

// clip cuts s to at most n bytes, at a rune boundary, marking the cut.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	i := n
	for i > 0 && (s[i]&0xC0) == 0x80 {
		i--
	}
	return s[:i] + "…"
}

// lightProfile is scenario sc's profile cut down to a closed loop on
// synthetic prompts (a trace would replay its timestamps) with no ramps,
// cancellations or server metrics: the base of the warmup and the probe.
func (g *gate) lightProfile(sc map[string]any, target, dir string) (*config.Profile, error) {
	name := config.ScenarioName(sc)
	if isSearch(sc) {
		sp, err := g.searchPlan(sc, target, dir)
		if err != nil {
			return nil, err
		}
		sc = sp.first
	}
	p, err := g.scenarioProfile(sc, target, 1)
	if err != nil {
		return nil, err
	}
	p.Repeat, p.PayloadSeed = 0, g.payloadSeed(name, 0, armLight, 0) // this job's, which no measured run sends
	p.RequestRate, p.FixedSchedule, p.BenchmarkDuration, p.WarmupRequestCount, p.WarmupDuration = 0, false, 0, 0, 0
	if p.CustomDatasetType != "" {
		p.InputFile, p.CustomDatasetType = "", ""
	}
	p.RateRampDuration, p.ConcurrencyRampDuration, p.CancellationRate = 0, 0, 0
	p.MaxErrorRate, p.NoServerMetrics = 100, true
	p.ArtifactDir = filepath.Join(filepath.Dir(p.ArtifactDir), dir) // beside the scenario's run-i folders
	return p, nil
}

// probe sends one real request before any load: the first scenario's
// endpoint, model and prompt, asking for one output token, so that a
// server that is up but refuses the request (a wrong model name, a wrong
// endpoint, an API key it wants) stops the gate with the server's own
// message, before the load and before a run could pass for a baseline.
func (g *gate) probe(ctx context.Context, sc map[string]any, target, name string) error {
	if g.onKube() {
		// The pods reach the server, not necessarily this machine: the
		// first measured run's errors say what a probe would.
		g.logf("aiperf-action gate: %s %s: no probe from this machine (the workers run on Kubernetes); a run whose requests fail is no measurement", name, target)
		return nil
	}
	p, err := g.lightProfile(sc, target, "probe-"+name)
	if err != nil {
		return err
	}
	p.Concurrency, p.ConcurrencySet, p.RequestCount, p.RequestCountSet, p.Workers = 1, true, 1, true, 1
	p.ConversationNum, p.UserContextPromptLength = 0, 0
	if t, err := endpoint.Lookup(p.EndpointType); err == nil && !t.Traits.Unbounded && !t.Traits.NonToken() {
		p.OSLMean, p.OSLStddev, p.SeqDist = 1, 0, ""
		// A floor on the output would refuse a 1-token cap (vLLM: min_tokens
		// must be at most max_tokens): the probe asks for the cap alone.
		p.ExtraInputs = slices.DeleteFunc(slices.Clone(p.ExtraInputs), func(kv string) bool {
			k, _, _ := strings.Cut(kv, ":")
			return strings.TrimSpace(k) == "min_tokens"
		})
	}
	t0 := time.Now()
	res, err := run.Profile(ctx, p, run.Options{Cmdline: "aiperf-action gate (probe)", Stderr: g.opt.Stderr, KeepRecords: true})
	switch {
	case ctx.Err() != nil:
		return errors.New("interrupted")
	case res == nil:
		return fmt.Errorf("%s %s: the probe request could not run: %v", name, target, err)
	}
	for _, rec := range res.Records {
		if rec.Warmup {
			continue
		}
		if rec.ErrKind != "" {
			status := ""
			if rec.Status != 0 {
				status = fmt.Sprintf(" (HTTP %d)", rec.Status)
			}
			return fmt.Errorf("%s %s refused a first request with model %q on --endpoint-type %s, before any load%s: %s: %s",
				name, target, p.Model, p.EndpointType, status, rec.ErrKind, clip(strings.TrimSpace(rec.ErrMsg), 400))
		}
		g.logf("aiperf-action gate: %s: a first request with model %q answered in %.0f ms", name, p.Model, float64(rec.End-rec.Sent)/1e6)
		return nil
	}
	return fmt.Errorf("%s %s: the probe request left no record (%.1fs)", name, target, time.Since(t0).Seconds())
}
