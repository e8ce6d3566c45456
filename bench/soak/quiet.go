package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// The quiet tail: after the writers stop, the soak keeps sampling for
// -quiet-tail, the tables unwritten, to measure what a table a writer
// left ends at (compact_when_quiet_after merges what the tier rule left
// there once a partition has been quiet that long).

// Quiet targets: a full scan of the unwritten table close to the
// compacted copy's, soon after the writer stopped.
const (
	targetQuietScanRatio = 1.1
	targetQuietWithin    = 2 * time.Minute
)

// quietTail samples every interval until -quiet-tail has passed since the
// writers stopped, then once more at its end.
func (s *soak) quietTail(ctx context.Context) {
	if s.cfg.quietTail <= 0 {
		return
	}
	fmt.Fprintf(s.out, "-- writers stopped at %s; sampling the quiet table for %s --\n",
		s.writersEnd.Sub(s.start).Round(time.Second), s.cfg.quietTail)
	end := time.NewTimer(s.cfg.quietTail)
	defer end.Stop()
	tick := time.NewTicker(s.cfg.interval)
	defer tick.Stop()
	for {
		select {
		case <-tick.C:
			s.sample(ctx)
			continue
		case <-end.C:
		case <-ctx.Done():
		}
		break
	}
	s.sample(context.WithoutCancel(ctx))
}

// quietVerdicts are the quiet tail's targets: the first sample after the
// writers stopped whose scan is within targetQuietScanRatio of the
// compacted copy, no later than targetQuietWithin; and the write
// amplification while the tables were written, which the quiet merge must
// not raise (it runs only once they are not).
func (s *soak) quietVerdicts() []verdict {
	if s.cfg.quietTail <= 0 || len(s.samples) == 0 {
		return nil
	}
	stopped := s.writersEnd.Sub(s.start)
	var atStop *sample
	var tail []sample
	for i, r := range s.samples {
		if r.Elapsed < stopped {
			continue
		}
		if atStop == nil {
			atStop = &s.samples[i] // taken as the writers stopped
			continue
		}
		tail = append(tail, r)
	}
	v := verdict{target: fmt.Sprintf("quiet: full scan <= %.1fx the compacted copy within %s of the writers stopping", targetQuietScanRatio, targetQuietWithin)}
	var hit *sample
	worstLate := 0.0
	for i, r := range tail {
		if r.ScanTables == 0 {
			continue
		}
		if hit == nil && r.ScanRatio <= targetQuietScanRatio {
			hit = &tail[i]
		}
		if r.Elapsed-stopped >= targetQuietWithin {
			worstLate = max(worstLate, r.ScanRatio)
		}
	}
	last := s.samples[len(s.samples)-1]
	switch {
	case len(tail) == 0 || atStop == nil:
		v.unknown, v.measured = true, "no sample in the quiet tail"
	case hit != nil:
		v.met = hit.Elapsed-stopped <= targetQuietWithin && worstLate <= targetQuietScanRatio
		v.measured = fmt.Sprintf("%.2fx at %s after the stop (%s vs %s; %d files, ideal %d), from %.1fx (%d files) at the stop; %.2fx at the end (%d files)",
			hit.ScanRatio, (hit.Elapsed - stopped).Round(time.Second), hit.LiveScan.Round(100*time.Microsecond), hit.CompactedScan.Round(100*time.Microsecond),
			hit.DataFiles, hit.IdealFiles, atStop.ScanRatio, atStop.DataFiles, last.ScanRatio, last.DataFiles)
		if worstLate > targetQuietScanRatio {
			v.measured += fmt.Sprintf("; worst %.2fx after %s", worstLate, targetQuietWithin)
		}
	default:
		best := tail[0]
		for _, r := range tail {
			if r.ScanTables > 0 && (best.ScanTables == 0 || r.ScanRatio < best.ScanRatio) {
				best = r
			}
		}
		v.measured = fmt.Sprintf("never: best %.2fx at %s after the stop (%d files, ideal %d, %d data manifests), from %.1fx (%d files) at the stop",
			best.ScanRatio, (best.Elapsed - stopped).Round(time.Second), best.DataFiles, best.IdealFiles, best.ManifestsMax, atStop.ScanRatio, atStop.DataFiles)
	}
	out := []verdict{v}
	if atStop != nil {
		files := verdict{target: "quiet: live data files at the ideal at the end of the tail",
			met:      last.DataFiles <= last.IdealFiles,
			measured: fmt.Sprintf("%d files, ideal %d (%d at the stop)", last.DataFiles, last.IdealFiles, atStop.DataFiles)}
		out = append(out, files)
		early, total, err := quietMergesLogged(filepath.Join(s.cfg.out, "reactor.log"), s.writersEnd)
		wa := verdict{target: "quiet: no quiet merge while written (write amplification while written is the tier rule's)", met: err == nil && early == 0,
			measured: fmt.Sprintf("%d of %d quiet merges (reactor.log) before the stop; write amplification %.2fx at the stop, %.2fx with the tail's merges",
				early, total, atStop.WriteAmp(), last.WriteAmp())}
		if err != nil {
			wa.unknown, wa.measured = true, err.Error()
		}
		out = append(out, wa)
	}
	return out
}

// quietMergesLogged counts reactor's "partition quiet" lines in its JSON
// log, and those logged before stop.
func quietMergesLogged(path string, stop time.Time) (early, total int, err error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, 0, fmt.Errorf("read reactor's log: %w", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64<<10), 4<<20)
	for sc.Scan() {
		line := sc.Bytes()
		if !bytes.Contains(line, []byte("partition quiet: merging")) {
			continue
		}
		var rec struct {
			Time time.Time `json:"time"`
		}
		if json.Unmarshal(line, &rec) != nil {
			continue
		}
		total++
		if rec.Time.Before(stop) {
			early++
		}
	}
	return early, total, sc.Err()
}
