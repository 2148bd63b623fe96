package config

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Override applies the action inputs (or the gate's flags) over the config
// file: input returns a named input's value, "" when it was not given. It
// reports every bad value at once; Validate is still to be called.
func (g *Gate) Override(input func(name string) string) error {
	var errs []error
	if v := input("url"); v != "" {
		g.URL, g.Server = v, Server{}
	}
	if v := input("server-command"); v != "" {
		g.URL = ""
		g.Server = Server{Command: v, ReadyURL: g.Server.ReadyURL, ReadyTimeout: g.Server.ReadyTimeout}
	}
	if v := input("server-ready-url"); v != "" {
		g.Server.ReadyURL = v
	}
	if v := input("baseline-server"); v != "" {
		b := &Server{ReadyTimeout: g.Server.ReadyTimeout}
		switch {
		case v == "simulator":
			b.Simulator = true
			if g.Server.Simulator {
				b.TTFT, b.ITL, b.Mode, b.Preset, b.SpeedJitter = g.Server.TTFT, g.Server.ITL, g.Server.Mode, g.Server.Preset, g.Server.SpeedJitter
			}
		case strings.HasPrefix(v, "http://") || strings.HasPrefix(v, "https://"):
			b.URL = v
		default:
			b.Command = v
			if old := g.BaselineServer; old != nil {
				b.ReadyURL, b.URL = old.ReadyURL, old.URL
			}
		}
		g.BaselineServer = b
	}
	if v := input("baseline-server-ready-url"); v != "" {
		if g.BaselineServer == nil {
			errs = append(errs, fmt.Errorf("baseline-server-ready-url %q: there is no baseline-server", v))
		} else {
			g.BaselineServer.ReadyURL = v
		}
	}
	for name, dst := range map[string]*time.Duration{"server-ready-timeout": &g.Server.ReadyTimeout, "time-budget": &g.TimeBudget} {
		if v := input(name); v != "" {
			d, err := time.ParseDuration(v)
			if err != nil {
				errs = append(errs, fmt.Errorf("%s %q: %v", name, v, err))
			}
			*dst = d
		}
	}
	if g.Server.ReadyTimeout <= 0 {
		g.Server.ReadyTimeout = DefaultGate.Server.ReadyTimeout
	}
	if v := input("model"); v != "" {
		g.Model = v
	}
	for name, dst := range map[string]*int{"repeats": &g.Repeats, "max-repeats": &g.MaxRepeats} {
		if v := input(name); v != "" {
			n, err := strconv.Atoi(v)
			if err != nil {
				errs = append(errs, fmt.Errorf("%s %q: not a number", name, v))
			}
			*dst = n
		}
	}
	for name, dst := range map[string]*string{"cache-reset": &g.CacheReset, "baseline-store": &g.Baseline.Store, "baseline-path": &g.Baseline.Path,
		"baseline-branch": &g.Baseline.Branch, "max-regression": &g.Thresholds.MaxRegression} {
		if v := input(name); v != "" {
			*dst = v
		}
	}
	if v := input("fail-on-inconclusive"); v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			errs = append(errs, fmt.Errorf("fail-on-inconclusive %q: want true or false", v))
		}
		g.Thresholds.FailOnInconclusive = b
	}
	if f := input("scenarios"); f != "" {
		want := map[string]bool{}
		for _, n := range strings.Split(f, ",") {
			want[strings.TrimSpace(n)] = true
		}
		var kept []map[string]any
		for _, s := range g.Scenarios {
			if want[ScenarioName(s)] {
				kept = append(kept, s)
				delete(want, ScenarioName(s))
			}
		}
		for n := range want {
			errs = append(errs, fmt.Errorf("scenarios: %q is not in %s", n, input("config")))
		}
		g.Scenarios = kept
	}
	return errors.Join(errs...)
}
