// Package sysstat reads what the operating system knows about the
// tester's own resource use: CPU time per process and the machine's CPU
// steal, the share of time a hypervisor gave this VM's CPUs to someone
// else. A load tester on a VM with heavy steal cannot promise
// sub-millisecond timing, and says so.
package sysstat

import (
	"bufio"
	"errors"
	"os"
	"strconv"
	"strings"
	"syscall"
)

// CPU is a reading of the machine's aggregate CPU counters (in clock ticks).
type CPU struct {
	Total, Steal uint64
}

// ReadCPU reads /proc/stat's "cpu" line. It fails off Linux.
func ReadCPU() (CPU, error) {
	f, err := os.Open("/proc/stat")
	if err != nil {
		return CPU{}, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 9 || fields[0] != "cpu" {
			continue
		}
		var c CPU
		for i, s := range fields[1:] {
			v, err := strconv.ParseUint(s, 10, 64)
			if err != nil {
				return CPU{}, err
			}
			if i >= 8 { // guest and guest_nice are already inside user and nice
				break
			}
			c.Total += v
			if i == 7 {
				c.Steal = v
			}
		}
		return c, nil
	}
	return CPU{}, errors.New("/proc/stat: no cpu line")
}

// StealPct is the percentage of CPU time stolen between two readings.
func StealPct(a, b CPU) float64 {
	if b.Total <= a.Total {
		return 0
	}
	return 100 * float64(b.Steal-a.Steal) / float64(b.Total-a.Total)
}

// FreeBytes is the space an unprivileged writer has left on the file
// system that holds dir; false when it can't be read.
func FreeBytes(dir string) (uint64, bool) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return 0, false
	}
	return st.Bavail * uint64(st.Bsize), true
}
