package controller

import (
	"context"
	"encoding/json"
	"runtime"
	"syscall"
	"time"

	"github.com/aiperf-action/aiperf-action/internal/wire"
	"github.com/go-zeromq/zmq4"
)

// The worker processes' ends, and the goroutines that read the sockets.

// reap waits a bounded time for workers to exit after BYE, then kills them.
func (r *run) reap() {
	deadline := time.After(5 * time.Second)
	for {
		alive := 0
		for _, p := range r.peers {
			if p != nil && !p.exited && !p.remote {
				alive++
			}
		}
		if alive == 0 {
			return
		}
		select {
		case ev := <-r.exits:
			r.peers[ev.id].exited = true
			r.usage(ev)
		case <-deadline:
			killAll(r.peers)
			return
		}
	}
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// usage records what the OS says a worker used.
func (r *run) usage(ev exitEvent) {
	p, w := r.peers[ev.id], &r.out.Workers[ev.id]
	if ev.state != nil {
		w.Exited = true
		w.CPUSeconds = (ev.state.UserTime() + ev.state.SystemTime()).Seconds()
		w.WallSeconds = ev.at.Sub(p.spawned).Seconds()
		if ru, ok := ev.state.SysUsage().(*syscall.Rusage); ok && ru != nil {
			w.MaxRSSBytes = int64(ru.Maxrss)
			if runtime.GOOS == "linux" {
				w.MaxRSSBytes *= 1024 // (kilobytes there; bytes on macOS)
			}
		}
	}
	w.GCPause, w.Stamps = p.gcPause, p.stamps
}

func killAll(peers []*peer) {
	for _, p := range peers {
		if p != nil && !p.exited && p.cmd != nil && p.cmd.Process != nil {
			_ = p.cmd.Process.Kill()
		}
	}
}

func exitText(err error) string {
	if err == nil {
		return "exit status 0"
	}
	return err.Error()
}

func readControl(ctx context.Context, s zmq4.Socket, out chan<- wire.Control) {
	for {
		msg, err := s.Recv()
		recv := time.Now().UnixNano()
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			// A peer left (ZMQ.md): liveness is watched through the process.
			time.Sleep(time.Millisecond)
			continue
		}
		if len(msg.Frames) < 2 {
			continue
		}
		var m wire.Control
		if json.Unmarshal(msg.Frames[len(msg.Frames)-1], &m) != nil {
			continue
		}
		m.Recv = recv
		select {
		case out <- m:
		case <-ctx.Done():
			return
		}
	}
}

func readRecords(ctx context.Context, s zmq4.Socket, out chan<- []byte) {
	for {
		msg, err := s.Recv()
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			time.Sleep(time.Millisecond)
			continue
		}
		for _, f := range msg.Frames {
			select {
			case out <- f:
			case <-ctx.Done():
				return
			}
		}
	}
}
