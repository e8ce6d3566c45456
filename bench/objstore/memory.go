package main

import (
	"bufio"
	"os"
	"runtime"
	"runtime/debug"
	"runtime/pprof"
	"strconv"
	"strings"
	"time"
)

// localDisk stands for the "local" latency: the table on local disk, no
// proxy, no S3.
const localDisk = -1

// resetPeakRSS returns freed heap to the system and resets the kernel's
// peak resident set size (VmHWM) to the current one, so peakRSS after a
// command is that command's peak, not an earlier one's. Linux only; a
// kernel without clear_refs leaves the process's lifetime peak.
func resetPeakRSS() {
	debug.FreeOSMemory()
	_ = os.WriteFile("/proc/self/clear_refs", []byte("5"), 0)
}

// peakRSS is VmHWM in bytes, 0 when /proc does not say.
func peakRSS() int64 {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		rest, ok := strings.CutPrefix(sc.Text(), "VmHWM:")
		if !ok {
			continue
		}
		kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
		if err != nil {
			return 0
		}
		return kb * 1024
	}
	return 0
}

// peakHeapProfiler writes a heap profile to path whenever the heap in use
// reaches a new peak (checked every 100 ms), so the file shows what held
// memory at the highest point of the run (-memprofile).
func peakHeapProfiler(path string, stop <-chan struct{}) {
	var peak uint64
	for {
		select {
		case <-stop:
			return
		case <-time.After(100 * time.Millisecond):
		}
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		if ms.HeapInuse <= peak {
			continue
		}
		peak = ms.HeapInuse
		f, err := os.Create(path)
		if err != nil {
			return
		}
		_ = pprof.Lookup("heap").WriteTo(f, 0)
		f.Close()
	}
}
