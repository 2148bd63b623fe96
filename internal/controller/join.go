package controller

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"strings"

	"github.com/go-zeromq/zmq4"
)

// Workers that join from other hosts (Options.Listen): the address
// they join, the token they present, and the pair of ports bound for them.

// TokenEnv is where a worker that joins from another host finds the run's
// worker token (not its command line, which other users of the host see).
const TokenEnv = "AIPERF_ACTION_WORKER_TOKEN"

// JoinAddrs are the control and records endpoints of a controller that
// listens at addr (tcp://host:port, or host:port): the port and the next.
func JoinAddrs(addr string) (control, records string, err error) {
	hostPort := strings.TrimPrefix(addr, "tcp://")
	host, port, err := net.SplitHostPort(hostPort)
	if err != nil {
		return "", "", fmt.Errorf("want tcp://host:port: %v", err)
	}
	n, err := strconv.Atoi(port)
	if err != nil || n < 1 || n > 65534 {
		return "", "", fmt.Errorf("port %q: want 1 to 65534 (the records take the next one)", port)
	}
	return "tcp://" + net.JoinHostPort(host, port), "tcp://" + net.JoinHostPort(host, strconv.Itoa(n+1)), nil
}

// bindPair binds the control socket at listen (host:port) and the records
// socket on the next port; port 0 tries free pairs, at most 20.
func bindPair(ctx context.Context, listen string) (router, pull zmq4.Socket, err error) {
	host, port, err := net.SplitHostPort(strings.TrimPrefix(listen, "tcp://"))
	if err != nil {
		return nil, nil, fmt.Errorf("--worker-listen %s: want host:port: %v", listen, err)
	}
	want, err := strconv.Atoi(port)
	if err != nil || want < 0 || want > 65534 {
		return nil, nil, fmt.Errorf("--worker-listen %s: port %q: want 0 to 65534 (the records take the next one)", listen, port)
	}
	for try := 0; try < 20; try++ {
		router = zmq4.NewRouter(ctx, zmq4.WithID(zmq4.SocketIdentity("controller")))
		pull = zmq4.NewPull(ctx)
		err = router.Listen("tcp://" + net.JoinHostPort(host, port))
		if err == nil {
			_, p, _ := net.SplitHostPort(router.Addr().String())
			n, _ := strconv.Atoi(p)
			err = pull.Listen("tcp://" + net.JoinHostPort(host, strconv.Itoa(n+1)))
			if err == nil {
				return router, pull, nil
			}
		}
		router.Close()
		pull.Close()
		if want != 0 {
			break
		}
	}
	return nil, nil, fmt.Errorf("--worker-listen %s: bind the control port and the next: %v", listen, err)
}
