//go:build !linux

package pace

import "time"

// waiter is Linux's timerfd; elsewhere the pacer sleeps on Go timers.
type waiter struct{}

func newWaiter() *waiter { return nil }

func (w *waiter) arm(time.Duration) {}
func (w *waiter) wait() error       { return nil }
func (w *waiter) close()            {}
