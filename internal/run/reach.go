package run

import (
	"context"
	"errors"
	"net"
	"net/url"
	"time"
)

// Reachable checks, before any load, that something listens at target.
func Reachable(ctx context.Context, target string) error {
	u, err := url.Parse(target)
	if err != nil {
		return err
	}
	host := u.Host
	if u.Port() == "" {
		if u.Scheme == "https" {
			host = net.JoinHostPort(u.Hostname(), "443")
		} else {
			host = net.JoinHostPort(u.Hostname(), "80")
		}
	}
	dctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	c, err := (&net.Dialer{}).DialContext(dctx, "tcp", host)
	if err != nil {
		var op *net.OpError
		if errors.As(err, &op) && op.Err != nil {
			return op.Err
		}
		return err
	}
	return c.Close()
}
