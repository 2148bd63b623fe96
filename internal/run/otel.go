package run

import (
	"context"
	"fmt"
	"path/filepath"

	"github.com/aiperf-action/aiperf-action/internal/otelexport"
)

// startOTel starts --otel-url's export: nil without one, and nil with a
// warning (as AIPerf) when the collector is not reachable or the exporter
// can't be made; the run goes on either way.
func (r *profileRun) startOTel(ctx context.Context, g *gathered) *otelexport.Exporter {
	o := r.parsed.OTel
	if o == nil {
		return nil
	}
	warn := func(format string, a ...any) {
		msg := fmt.Sprintf(format, a...)
		g.scrapeWarnings = append(g.scrapeWarnings, msg)
		if r.opt.Stderr != nil {
			fmt.Fprintf(r.opt.Stderr, "aiperf-action: warning: %s\n", msg)
		}
	}
	if err := otelexport.Reachable(ctx, o.URL); err != nil {
		warn("--otel-url %s: the collector is not reachable (%v): no metrics are exported; the run is not affected", o.URL, err)
		g.otel = &otelexport.Report{URL: o.URL, LastError: err.Error()}
		return nil
	}
	provider := o.Provider
	if provider == "" {
		provider = otelexport.Provider(r.target)
	}
	e, err := otelexport.Start(ctx, otelexport.Options{URL: o.URL, Headers: o.Headers, Provider: provider, Model: r.p.Model,
		Operation: otelexport.Operation(r.p.EndpointType), Target: r.target, Version: Version,
		Resource: map[string]string{"aiperf.artifact_dir": filepath.Base(r.dir)}})
	if err != nil {
		warn("--otel-url %s: %v: no metrics are exported", o.URL, err)
		return nil
	}
	return e
}
