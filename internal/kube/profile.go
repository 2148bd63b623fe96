package kube

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

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
	if err := localFiles(&p); err != nil {
		return err
	}
	if p.ConcurrencySet {
		o.Streams = p.Concurrency
	}
	p.APIKey, p.Headers, p.OTelHeaders = "", nil, nil
	o.ProfileJSON, _ = json.MarshalIndent(p, "", "  ")
	return nil
}

// FromProfile sets o to run p as it is (FromJSON): its JSON in the
// ConfigMap and the controller's args, its concurrency sizing the
// workers. A profile with credentials is refused: they would be written
// into the ConfigMap.
func FromProfile(o *Options, p *config.Profile) error {
	if p.APIKey != "" || len(p.Headers) > 0 || len(p.OTelHeaders) > 0 {
		return errors.New("the profile has credentials (api-key, headers): they would be written into the run's ConfigMap, which anyone who can read ConfigMaps reads; workers on Kubernetes do not take credentials yet")
	}
	if err := localFiles(p); err != nil {
		return err
	}
	q := *p
	q.WorkerListen, q.Workers, q.ArtifactDir = fmt.Sprintf("0.0.0.0:%d", ControlPort), max(1, o.Workers), "/results"
	b, err := json.MarshalIndent(&q, "", "  ")
	if err != nil {
		return err
	}
	o.ProfileJSON, o.FromJSON, o.Profile = b, true, nil
	if p.ConcurrencySet {
		o.Streams = p.Concurrency
	}
	return nil
}

// localFiles refuses a profile that reads files of this machine by a
// relative path: the pods do not have them (a public dataset or a hub
// tokenizer is downloaded in each pod; a file must be in the image, and
// named by its absolute path there).
func localFiles(p *config.Profile) error {
	var bad []string
	for _, f := range []struct{ flag, path string }{{"--input-file", p.InputFile}, {"--tokenizer", p.Tokenizer}, {"--payload-template", p.PayloadTemplate}, {"--request-template", p.RequestTemplate}} {
		if f.path == "" {
			continue
		}
		if st, err := os.Stat(f.path); err == nil && (st.IsDir() || st.Mode().IsRegular()) && !filepath.IsAbs(f.path) {
			bad = append(bad, f.flag+" "+f.path)
		}
	}
	if len(bad) > 0 {
		return fmt.Errorf("%s: a file of this machine, which the pods do not have (give a path inside the image, absolute, or a public dataset / hub tokenizer, which each pod downloads)", strings.Join(bad, ", "))
	}
	return nil
}
