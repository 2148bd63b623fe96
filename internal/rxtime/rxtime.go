package rxtime

import "time"

// Age is how long before now the kernel received data stamped rx (unix
// ns): never below 0 (a wall-clock step back reads as 0), and ok is false
// past limit (a step forward, or a stamp that dates something else).
func Age(rx int64, now time.Time, limit time.Duration) (d time.Duration, ok bool) {
	d = max(time.Duration(now.UnixNano()-rx), 0)
	return d, d <= limit
}
