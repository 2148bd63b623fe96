package proc

import "syscall"

// (macOS has no parent-death signal: a child outlives a tester that is
// killed with SIGKILL.)
func attr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }
