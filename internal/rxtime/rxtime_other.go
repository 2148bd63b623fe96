//go:build !linux

package rxtime

import "net"

// Conn is a TCP connection whose reads note their receive time; there are
// no receive stamps on this system.
type Conn struct{ *net.TCPConn }

// Wrap reports that receive stamps cannot be had here.
func Wrap(*net.TCPConn) (*Conn, bool) { return nil, false }

// Received is always 0 here.
func (c *Conn) Received() int64 { return 0 }

// Hold does nothing here.
func Hold() (release func(), err error) { return func() {}, nil }
