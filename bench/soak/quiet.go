package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
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
	s.quietStop = s.careful(ctx)
	end := time.NewTimer(s.cfg.quietTail - time.Since(s.writersEnd))
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
	s.quietEnd = s.careful(context.WithoutCancel(ctx))
}

// carefulScan is the first table's full scan against its compacted copy,
// measured with more repetitions than a sample's: carefulRounds
// comparisons of up to 15 runs each (2 s), the median of their ratios.
type carefulScan struct {
	ratio           float64
	live, compacted time.Duration // medians
	files, ideal    int
	rounds          int
}

const carefulRounds = 3

func (s *soak) careful(ctx context.Context) carefulScan {
	t := s.tables[0]
	runs, budget := s.copies.MaxRuns, s.copies.RunBudget
	s.copies.MaxRuns, s.copies.RunBudget = 15, 2*time.Second
	defer func() { s.copies.MaxRuns, s.copies.RunBudget = runs, budget }()
	var c carefulScan
	var ratios []float64
	var live, compacted []time.Duration
	for range carefulRounds {
		ts, err := s.measureTable(ctx, t, true)
		if err != nil {
			s.log.Warn("careful scan failed; skipped", "table", t.name, "error", err)
			continue
		}
		ratios = append(ratios, ts.Scan.Ratio())
		live, compacted = append(live, ts.Scan.Live), append(compacted, ts.Scan.Compacted)
		c.files, c.ideal = ts.Probe.DataFiles, ts.Probe.IdealFiles
	}
	if len(ratios) == 0 {
		return c
	}
	slices.Sort(live)
	slices.Sort(compacted)
	c.ratio, c.live, c.compacted, c.rounds = median(ratios), live[len(live)/2], compacted[len(compacted)/2], len(ratios)
	return c
}

func (c carefulScan) String() string {
	return fmt.Sprintf("%.2fx (%s vs %s, median of %d comparisons of up to 15 runs; %d files, ideal %d)",
		c.ratio, c.live.Round(100*time.Microsecond), c.compacted.Round(100*time.Microsecond), c.rounds, c.files, c.ideal)
}

// quietVerdicts are the quiet tail's targets: the full scan, from
// targetQuietWithin after the writers stopped on, within
// targetQuietScanRatio of the compacted copy (the median of those samples:
// at a few MB a single scan's time swings with the machine's load, both
// sides alike); the live files at the ideal at the end; and no quiet merge
// while the tables were written, so the write amplification of those
// minutes is the tier rule's alone.
func (s *soak) quietVerdicts() []verdict {
	if s.cfg.quietTail <= 0 || len(s.samples) == 0 {
		return nil
	}
	stopped := s.writersEnd.Sub(s.start)
	var atStop *sample
	var before, after []float64 // tail scan ratios above the ideal file count, and from targetQuietWithin on
	var settledAt time.Duration = -1
	for i, r := range s.samples {
		if r.Elapsed < stopped {
			continue
		}
		if atStop == nil {
			atStop = &s.samples[i] // taken as the writers stopped
		}
		if settledAt < 0 && r.DataFiles <= r.IdealFiles {
			settledAt = r.Elapsed - stopped
		}
		if r.ScanTables == 0 {
			continue
		}
		if r.DataFiles > r.IdealFiles {
			before = append(before, r.ScanRatio)
		}
		if r.Elapsed-stopped >= targetQuietWithin {
			after = append(after, r.ScanRatio)
		}
	}
	if atStop == nil {
		return []verdict{{target: "quiet tail", unknown: true, measured: "no sample after the writers stopped"}}
	}
	last := s.samples[len(s.samples)-1]
	v := verdict{target: fmt.Sprintf("quiet: full scan <= %.1fx the compacted copy from %s after the writers stop", targetQuietScanRatio, targetQuietWithin)}
	switch {
	case s.cfg.quietTail < targetQuietWithin || len(after) == 0:
		v.unknown, v.measured = true, fmt.Sprintf("the tail (%s) is shorter than %s", s.cfg.quietTail, targetQuietWithin)
	case s.quietEnd.rounds == 0:
		v.unknown, v.measured = true, "the careful scan at the end of the tail failed"
	default:
		v.met = s.quietEnd.ratio <= targetQuietScanRatio
		v.measured = fmt.Sprintf("at the end %s; at the stop %s; samples from %s on: median %.2fx over %d (%.2fx to %.2fx)",
			s.quietEnd, s.quietStop, targetQuietWithin, median(after), len(after), slices.Min(after), slices.Max(after))
		if len(before) > 0 {
			v.measured += fmt.Sprintf(", before the merge median %.2fx over %d", median(before), len(before))
		}
	}
	out := []verdict{v}
	files := verdict{target: "quiet: live data files at the ideal at the end of the tail",
		met:      last.DataFiles <= last.IdealFiles,
		measured: fmt.Sprintf("%d files, ideal %d (%d at the stop)", last.DataFiles, last.IdealFiles, atStop.DataFiles)}
	if settledAt >= 0 {
		files.measured += fmt.Sprintf("; at the ideal from %s after the stop", settledAt.Round(time.Second))
	}
	out = append(out, files)
	early, total, err := quietMergesLogged(filepath.Join(s.cfg.out, "reactor.log"), s.writersEnd)
	wa := verdict{target: "quiet: no quiet merge while written (write amplification while written is the tier rule's)", met: err == nil && early == 0,
		measured: fmt.Sprintf("%d of %d quiet merges (reactor.log) before the stop; write amplification %.2fx at the stop, %.2fx with the tail's merges",
			early, total, atStop.WriteAmp(), last.WriteAmp())}
	if err != nil {
		wa.unknown, wa.measured = true, err.Error()
	}
	return append(out, wa)
}

func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
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
