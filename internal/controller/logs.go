package controller

import (
	"bytes"
	"io"
	"sync"
)

// lineWriter prefixes each line a worker writes and serialises writes from
// all workers onto one destination, so their output never interleaves
// mid-line (and never races on a shared buffer).
type lineWriter struct {
	mu     *sync.Mutex
	dst    io.Writer
	prefix []byte
	buf    []byte
}

func (w *lineWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf = append(w.buf, p...)
	for {
		i := bytes.IndexByte(w.buf, '\n')
		if i < 0 {
			break
		}
		line := append(append([]byte{}, w.prefix...), w.buf[:i+1]...)
		w.dst.Write(line)
		w.buf = w.buf[i+1:]
	}
	return len(p), nil
}

// flush writes a trailing partial line.
func (w *lineWriter) flush() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.buf) > 0 {
		w.dst.Write(append(append(append([]byte{}, w.prefix...), w.buf...), '\n'))
		w.buf = nil
	}
}
