//go:build !linux

package client

import (
	"context"
	"errors"
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

func (c *Client) doLoop(context.Context, *fastConf, *call) {}
