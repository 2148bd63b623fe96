package report

import (
	"fmt"
	"io"
	"os"
	"sync/atomic"
	"time"

	"golang.org/x/term"

	"github.com/aiperf-action/aiperf-action/internal/run"
)

// progress prints a live progress line when stdout is a terminal.
type progress struct {
	f              *os.File
	total          int
	done, failed   atomic.Int64
	quit, finished chan struct{}
}

var _ run.Progress = (*progress)(nil)

// NewProgress is a progress line on stdout, or nil when it is not a terminal.
func NewProgress(stdout io.Writer) run.Progress {
	f, ok := stdout.(*os.File)
	if !ok || !term.IsTerminal(int(f.Fd())) {
		return nil
	}
	return &progress{f: f, quit: make(chan struct{}), finished: make(chan struct{})}
}

func (p *progress) Start(total int) {
	p.total = total
	go func() {
		defer close(p.finished)
		t := time.NewTicker(250 * time.Millisecond)
		defer t.Stop()
		start := time.Now()
		for {
			select {
			case <-p.quit:
				fmt.Fprintf(p.f, "\r\033[K")
				return
			case <-t.C:
				fmt.Fprintf(p.f, "\r\033[Kprofiling: %d/%d requests, %d errors, %.1fs", p.done.Load(), p.total, p.failed.Load(), time.Since(start).Seconds())
			}
		}
	}()
}

func (p *progress) Record(ok bool) {
	p.done.Add(1)
	if !ok {
		p.failed.Add(1)
	}
}

func (p *progress) Stop() { close(p.quit); <-p.finished }
