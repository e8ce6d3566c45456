//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package planner_test

import (
	"syscall"
	"time"
)

// processCPU is the user+system CPU time the whole process has used so far
// (every thread: the benchmark goroutine, SQLite, the GC). Differences of it
// around the measured part of a benchmark give CPU time per operation, which
// on a shared machine is steadier than wall time and is what "per core"
// figures are computed from.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
