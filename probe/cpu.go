package probe

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"time"
)

// ErrUnsupported: this platform has no /proc to read process times from.
var ErrUnsupported = errors.New("probe: process CPU time needs Linux /proc")

// userHZ is the unit of /proc/<pid>/stat's times: USER_HZ, 100 on every
// Linux architecture Go supports, whatever the kernel's HZ.
const userHZ = 100

// ProcessCPU returns the user plus system CPU time the process pid and
// all its threads have used so far (10 ms resolution).
func ProcessCPU(pid int) (time.Duration, error) {
	if runtime.GOOS != "linux" {
		return 0, ErrUnsupported
	}
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, fmt.Errorf("probe: %w", err)
	}
	return parseStatCPU(string(data))
}

// parseStatCPU reads utime and stime (fields 14 and 15) of a
// /proc/<pid>/stat line. The command name (field 2) is in parentheses and
// may hold spaces or parentheses itself, so fields are counted from the last
// ')'.
func parseStatCPU(line string) (time.Duration, error) {
	i := strings.LastIndexByte(line, ')')
	if i < 0 {
		return 0, fmt.Errorf("probe: malformed /proc stat line %q", line)
	}
	fields := strings.Fields(line[i+1:])
	// fields[0] is field 3 (state): utime is field 14, stime field 15.
	if len(fields) < 13 {
		return 0, fmt.Errorf("probe: /proc stat line has %d fields after the name, want at least 13", len(fields))
	}
	var ticks int64
	for _, f := range fields[11:13] {
		n, err := strconv.ParseInt(f, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("probe: /proc stat time %q: %w", f, err)
		}
		ticks += n
	}
	return time.Duration(ticks) * time.Second / userHZ, nil
}

// LoadAverage returns the 1, 5 and 15 minute load averages of the machine
// from /proc/loadavg.
func LoadAverage() ([3]float64, error) {
	var la [3]float64
	if runtime.GOOS != "linux" {
		return la, ErrUnsupported
	}
	data, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return la, fmt.Errorf("probe: %w", err)
	}
	fields := strings.Fields(string(data))
	if len(fields) < 3 {
		return la, fmt.Errorf("probe: malformed /proc/loadavg %q", data)
	}
	for i := range la {
		if la[i], err = strconv.ParseFloat(fields[i], 64); err != nil {
			return la, fmt.Errorf("probe: /proc/loadavg: %w", err)
		}
	}
	return la, nil
}
