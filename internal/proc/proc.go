// Package proc starts the tool's child processes the one way: the workers
// (controller), the simulator calibrate measures, and a gate's model
// server (server). Each runs in a process group of its own, so that it is
// stopped whole with its children, and on Linux it is killed when this
// process dies, so a crashed tester leaves no load running.
//
// The module builds on Linux and macOS; Linux is where it is measured
// (kernel receive timestamps, the epoll loop) and macOS falls back to
// net/http and read-time stamps. It does not build on Windows.
package proc

import (
	"bufio"
	"fmt"
	"io"
	"os/exec"
	"strings"
	"syscall"
	"time"
)

// Child makes cmd a child of this process the tool's way (see the
// package doc). Call it before cmd.Start.
func Child(cmd *exec.Cmd) { cmd.SysProcAttr = attr() }

// Signal sends sig to the process group that Child made for pid.
func Signal(pid int, sig syscall.Signal) error { return syscall.Kill(-pid, sig) }

// ReadyLine waits up to timeout for out's first line, which must hold
// prefix, and returns the line from prefix on (a child that says where it
// serves: "... on http://127.0.0.1:PORT"). The rest of out is drained, so
// the child never blocks on a full pipe.
func ReadyLine(out io.Reader, prefix string, timeout time.Duration) (string, error) {
	lines := make(chan string, 1)
	go func() {
		line, _ := bufio.NewReader(out).ReadString('\n')
		lines <- line
		io.Copy(io.Discard, out)
	}()
	select {
	case line := <-lines:
		if i := strings.Index(line, prefix); i >= 0 {
			return strings.TrimSpace(line[i:]), nil
		}
		return "", fmt.Errorf("its first line is %q, without %q", line, prefix)
	case <-time.After(timeout):
		return "", fmt.Errorf("it printed no line within %s", timeout)
	}
}
