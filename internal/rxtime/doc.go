// Package rxtime reads sockets with the kernel's receive time of what was
// read (SO_TIMESTAMPNS): when the data reached this host, however late the
// process got to it. The client's event loop stamps response chunks with
// it; the simulator dates a request's arrival with it.
//
// Receive stamps are Linux's; elsewhere Wrap reports none, and reads are
// stamped when they return.
package rxtime
