package kube

import (
	"encoding/json"
	"fmt"
	"io"

	"github.com/spf13/pflag"

	"github.com/aiperf-action/aiperf-action/internal/config"
)

// ReadProfile checks o.Profile as the controller will take it (its
// listen address, workers and results folder set), before anything is
// written, and fills o.Streams and o.ProfileJSON (without credentials).
func ReadProfile(o *Options) error {
	fs := pflag.NewFlagSet("profile", pflag.ContinueOnError)
	fs.SetOutput(io.Discard)
	p := config.DefaultProfile
	p.Bind(fs)
	if err := fs.Parse(o.Profile); err != nil {
		return config.ExplainFlagError(err)
	}
	p.NoteSet(fs)
	p.WorkerListen, p.Workers, p.ArtifactDir = fmt.Sprintf("0.0.0.0:%d", ControlPort), max(1, o.Workers), "/results"
	if err := p.Validate(); err != nil {
		return fmt.Errorf("\n  %v", err)
	}
	if p.ConcurrencySet {
		o.Streams = p.Concurrency
	}
	p.APIKey, p.Headers, p.OTelHeaders = "", nil, nil
	o.ProfileJSON, _ = json.MarshalIndent(p, "", "  ")
	return nil
}
