//go:build !linux

package client

import (
	"context"
	"errors"
	"time"

	"github.com/aiperf-action/aiperf-action/internal/record"
)

// Loop is the epoll reader of Linux; elsewhere every request goes through
// net/http.
type Loop struct{}

// NewLoop reports that there is no loop on this system.
func NewLoop() (*Loop, error) { return nil, errors.New("the event loop needs Linux") }

// Close does nothing.
func (l *Loop) Close() error { return nil }

// ReadStats is empty: there is no loop here.
func (l *Loop) ReadStats() ReadStats { return ReadStats{} }

type fastConf struct{}

func newFastConf(*Client) *fastConf { return nil }

func (c *Client) doLoop(context.Context, *fastConf, []byte, string, time.Duration, context.CancelFunc, int, *record.Record) {
}
