package client

import (
	"context"
	"crypto/tls"
	"net"
	"time"

	hdr "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/aiperf-action/aiperf-action/internal/record"
	"github.com/aiperf-action/aiperf-action/internal/rxtime"
)

// ReadStats is how a loop's reads were stamped.
type ReadStats struct {
	record.Stamps                // the read counts (KernelReads, OtherReads)
	Delay         *hdr.Histogram // µs from the kernel's receive time to the read's return
}

// maxReadDelay bounds a believable read delay (and the histogram): a
// longer one is a step of the wall clock, and the read keeps its own time.
const maxReadDelay = time.Minute

// dialStamped dials for net/http, asking the kernel to stamp what the
// connection receives (see readClock).
func dialStamped(ctx context.Context, network, addr string) (net.Conn, error) {
	c, err := (&net.Dialer{Timeout: dialTimeout, KeepAlive: 30 * time.Second}).DialContext(ctx, network, addr)
	if err != nil || noKernelStamps {
		return c, err
	}
	if tc, ok := c.(*net.TCPConn); ok {
		if rc, ok := rxtime.Wrap(tc); ok {
			return rc, nil
		}
	}
	return c, nil
}

// readClock is the clock for a response read from conn through net/http:
// the kernel's receive time of the newest data the connection has read
// (beneath TLS too), which lies between the arrival of what a read returns
// and the read itself; plain c.Clock where conn keeps no such time.
func (c *Client) readClock(conn net.Conn) (clock func() int64, kernel bool) {
	if tc, ok := conn.(*tls.Conn); ok {
		conn = tc.NetConn()
	}
	rc, ok := conn.(*rxtime.Conn)
	if !ok {
		return c.Clock, false
	}
	// The wall-clock stamp is carried to the run's clock by one reading of
	// each; the same stamp always gives the same time, and the times of one
	// response never go back (arrivals don't), whatever the readings' jitter.
	var lastRx, last int64
	return func() int64 {
		at := c.Clock()
		if rx := rc.Received(); rx > 0 {
			if rx == lastRx {
				return last
			}
			if d, ok := rxtime.Age(rx, time.Now(), maxReadDelay); ok {
				at -= int64(d)
			}
			lastRx = rx
		}
		at = max(at, last)
		last = at
		return at
	}, true
}

var noKernelStamps bool

// UseKernelStamps says whether reads take the kernel's receive time (the
// default) or the time they return (a worker's AIPERF_ACTION_STAMP=read
// knob). Set it before the first request.
func UseKernelStamps(on bool) { noKernelStamps = !on }
