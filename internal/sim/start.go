package sim

import (
	"context"
	"fmt"
	"net"

	"github.com/aiperf-action/aiperf-action/internal/sim/engine"
)

// Running is a simulator serving on loopback in this process.
type Running struct {
	URL  string // http://127.0.0.1:port
	stop func()
}

// Start serves cfg on a free loopback port in this process, until Stop:
// the gate's and the demo's simulator (calibrate starts serve as a process
// of its own, as a real server would be).
func Start(cfg Config) (*Running, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("start the simulator: listen on loopback: %w", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- Serve(ctx, ln, New(cfg)) }()
	return &Running{URL: "http://" + ln.Addr().String(), stop: func() { cancel(); <-done }}, nil
}

// Stop shuts the simulator down and waits for it.
func (r *Running) Stop() { r.stop() }

// DefaultPreset is the engine preset engine mode takes when none is named.
const DefaultPreset = engine.DefaultPreset

// PresetAbout is what preset name models (its model, hardware and
// serving stack).
func PresetAbout(name string) (string, error) {
	p, err := engine.PresetNamed(name)
	return p.About, err
}
