package run

import (
	"os"

	"github.com/aiperf-action/aiperf-action/internal/wire"
)

// The AIPERF_ACTION_* environment knobs. They are read here and nowhere
// else; what a worker needs travels in its shard (wire.Knobs).
const (
	// WorkerBinEnv names a binary to start as the worker processes (and
	// calibrate's simulator) instead of this one; it must be the same
	// version. Tests built with -race use it to time requests from an
	// uninstrumented build.
	WorkerBinEnv = "AIPERF_ACTION_WORKER_BIN"
	// ClientEnv=nethttp turns the workers' epoll loop off.
	ClientEnv = "AIPERF_ACTION_CLIENT"
	// StampEnv=read stamps every read when it returns instead of with the
	// kernel's receive time (to compare the two).
	StampEnv = "AIPERF_ACTION_STAMP"
	// CPUProfileEnv=prefix writes each worker's CPU profile to
	// prefix-w<id>.prof, for pprof.
	CPUProfileEnv = "AIPERF_ACTION_WORKER_CPUPROFILE"
)

// ReadKnobs reads the knobs the workers take.
func ReadKnobs(getenv func(string) string) wire.Knobs {
	return wire.Knobs{Client: getenv(ClientEnv), Stamp: getenv(StampEnv), CPUProfile: getenv(CPUProfileEnv)}
}

// WorkerBin is the binary WorkerBinEnv names, or "" for this one.
func WorkerBin() string { return os.Getenv(WorkerBinEnv) }
