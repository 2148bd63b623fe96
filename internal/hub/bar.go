package hub

import (
	"fmt"
	"io"
	"os"
	"time"
)

// bar is a download's progress: on a terminal one line redrawn at most
// ten times a second; elsewhere (a CI log) a line when the download
// starts and one when it ends.
type bar struct {
	w     io.Writer
	name  string
	total int64
	n     int64
	tty   bool
	start time.Time
	last  time.Time
}

func newBar(w io.Writer, name string, total int64) *bar {
	b := &bar{w: w, name: name, total: total, start: time.Now()}
	if w == nil {
		return b
	}
	if f, ok := w.(*os.File); ok {
		if st, err := f.Stat(); err == nil && st.Mode()&os.ModeCharDevice != 0 {
			b.tty = true
		}
	}
	if !b.tty {
		fmt.Fprintf(w, "Downloading %s (%s)\n", name, size(total))
	}
	return b
}

func (b *bar) Write(p []byte) (int, error) {
	b.n += int64(len(p))
	if b.w != nil && b.tty && time.Since(b.last) >= 100*time.Millisecond {
		b.last = time.Now()
		b.draw()
	}
	return len(p), nil
}

func (b *bar) draw() {
	const width = 30
	filled := width
	pct := 100.0
	if b.total > 0 {
		pct = 100 * float64(b.n) / float64(b.total)
		filled = int(float64(width) * float64(b.n) / float64(b.total))
		filled = min(max(filled, 0), width)
	}
	line := make([]byte, width)
	for i := range line {
		line[i] = ' '
		if i < filled {
			line[i] = '#'
		}
	}
	fmt.Fprintf(b.w, "\r%s [%s] %3.0f%% %s/%s", b.name, line, pct, size(b.n), size(b.total))
}

func (b *bar) done(ok bool) {
	if b.w == nil {
		return
	}
	status := "done"
	if !ok {
		status = "failed"
	}
	secs := time.Since(b.start).Seconds()
	if b.tty {
		b.draw()
		fmt.Fprintf(b.w, " %s in %.1f s\n", status, secs)
		return
	}
	fmt.Fprintf(b.w, "Downloading %s: %s, %s in %.1f s\n", b.name, status, size(b.n), secs)
}

func size(n int64) string {
	switch {
	case n < 0:
		return "?"
	case n < 1<<10:
		return fmt.Sprintf("%d B", n)
	case n < 1<<20:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	case n < 1<<30:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	}
	return fmt.Sprintf("%.2f GiB", float64(n)/(1<<30))
}
