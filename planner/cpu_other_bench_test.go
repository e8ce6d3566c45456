//go:build !(linux || darwin || freebsd || netbsd || openbsd || dragonfly)

package planner_test

import "time"

// processCPU is unavailable here; CPU-based metrics are then not reported.
func processCPU() time.Duration { return 0 }
