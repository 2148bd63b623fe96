package gate

import (
	"cmp"
	"context"
	"fmt"
	"hash/fnv"
	"net/url"
	"os"
	"path/filepath"
	"strings"

	"github.com/aiperf-action/aiperf-action/internal/config"
	"github.com/aiperf-action/aiperf-action/internal/server"
	"github.com/aiperf-action/aiperf-action/internal/sim"
)

// bringUp starts the target and returns its URL, a teardown and a
// description for the report.
func (g *gate) bringUp(ctx context.Context) (string, func(), string, error) {
	return g.bringUpServer(ctx, g.cfg.URL, g.cfg.Server, "server")
}

// bringUpBaseline starts the baseline build of a paired A/B run.
func (g *gate) bringUpBaseline(ctx context.Context) (string, func(), string, error) {
	b := *g.cfg.BaselineServer
	running := ""
	if b.Command == "" && !b.Simulator {
		running = b.URL
	}
	if b.ReadyTimeout <= 0 {
		b.ReadyTimeout = config.DefaultGate.Server.ReadyTimeout
	}
	return g.bringUpServer(ctx, running, b, "baseline-server")
}

// bringUpServer brings up one server: a running one at url, the built-in
// simulator, or a command (its log in <results>/<name>.log).
func (g *gate) bringUpServer(ctx context.Context, running string, s config.Server, name string) (string, func(), string, error) {
	switch {
	case running != "":
		// A server something else started (a service container may still
		// be loading its weights): waited for like one the gate starts.
		urls := []string{s.ReadyURL}
		if s.ReadyURL == "" {
			base := strings.TrimSuffix(running, "/")
			urls = []string{base + "/health", base + "/v1/models"}
		}
		g.logf("aiperf-action gate: %s: waiting for %s to answer (up to %s)", name, strings.Join(urls, " or "), s.ReadyTimeout)
		if _, err := server.WaitReady(ctx, urls, s.ReadyTimeout); err != nil {
			return "", nil, "", fmt.Errorf("%s %s: %w", name, running, err)
		}
		return running, func() {}, running, nil
	case s.Simulator:
		cfg := sim.DefaultConfig
		// Unset (server: simulator, or {simulator: true}): serve's defaults,
		// not a server that answers in no time.
		cfg.TTFT, cfg.ITL = cmp.Or(s.TTFT, cfg.TTFT), cmp.Or(s.ITL, cfg.ITL)
		desc := fmt.Sprintf("built-in simulator (exact mode, TTFT %s, ITL %s)", cfg.TTFT, cfg.ITL)
		if s.Mode == "engine" {
			preset := cmp.Or(s.Preset, sim.DefaultPreset)
			var err error
			if cfg, err = sim.EngineConfig(preset); err != nil {
				return "", nil, "", err
			}
			desc = "built-in simulator (engine mode, preset " + preset + ")"
			if s.Speed > 0 {
				cfg.Engine.Speed = s.Speed
				desc = strings.TrimSuffix(desc, ")") + fmt.Sprintf(", speed ×%g)", s.Speed)
			}
		}
		if s.SpeedJitter > 0 {
			// One slowdown per job, shared by its runs, as on a CI machine.
			h := fnv.New64a()
			h.Write([]byte(g.job + "\x00" + name))
			cfg.SpeedJitter, cfg.SpeedSeed = s.SpeedJitter, h.Sum64()
			desc = strings.TrimSuffix(desc, ")") + fmt.Sprintf(", speed jitter %g%% per job)", 100*s.SpeedJitter)
		}
		sv, err := sim.Start(cfg)
		if err != nil {
			return "", nil, "", err
		}
		g.logf("aiperf-action gate: %s: %s on %s", name, desc, sv.URL)
		return sv.URL, sv.Stop, desc, nil
	}
	if err := os.MkdirAll(g.opt.ResultsDir, 0o755); err != nil {
		return "", nil, "", err
	}
	logPath := filepath.Join(g.opt.ResultsDir, name+".log")
	logf, err := os.Create(logPath)
	if err != nil {
		return "", nil, "", err
	}
	g.logf("aiperf-action gate: starting the %s; waiting up to %s for %s", name, s.ReadyTimeout, s.ReadyURL)
	srv, err := server.Start(ctx, server.Config{Command: s.Command, ReadyURL: s.ReadyURL, Timeout: s.ReadyTimeout, Log: logf})
	if err != nil {
		logf.Close()
		g.dumpLog(logPath)
		return "", nil, "", err
	}
	target := s.URL
	if target == "" {
		u, _ := url.Parse(s.ReadyURL)
		target = u.Scheme + "://" + u.Host
	}
	stop := func() {
		srv.Stop()
		logf.Close()
		g.dumpLog(logPath)
	}
	return target, stop, s.Command, nil
}

// dumpLog prints the server's log, in a collapsed group on Actions.
func (g *gate) dumpLog(path string) {
	b, err := os.ReadFile(path)
	if err != nil {
		return
	}
	if g.env.InActions() {
		g.env.Group("server log")
		defer g.env.EndGroup()
	}
	g.opt.Stdout.Write(b)
}
