package sim

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"time"
)

// Serve serves h on ln until ctx ends, then shuts down gracefully. A
// handler that dates requests by their receive time (the simulator) wraps
// the listener first; one that took connections over from net/http is
// closed after the shutdown.
func Serve(ctx context.Context, ln net.Listener, h http.Handler) error {
	if l, ok := h.(interface {
		Listener(net.Listener) net.Listener
	}); ok {
		ln = l.Listener(ln)
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		srv.Close()
	}
	if c, ok := h.(io.Closer); ok {
		c.Close() // connections the handler took over from net/http
	}
	if err := <-errc; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
