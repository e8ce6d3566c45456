package main

import (
	"cmp"
	"fmt"
	"math"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/icereactor/reactor/probe"
)

// The streaming targets (docs/design.md#streaming-targets).
const (
	targetScanRatio    = 1.5 // full scan vs the compacted copy
	targetLatencyRatio = 1.5 // commit p50, last window vs first
	targetWriteAmp     = 5.0 // bytes rewritten / bytes written
)

// header describes the run: the setup, the policy the bounds come from, and
// the machine's load when it started.
func (s *soak) header() string {
	var b strings.Builder
	c := s.cfg
	fmt.Fprintf(&b, "soak: %d table(s) x %d partitions, %g commits/s per table of %d rows, %s; sample every %s, targets after %s\n",
		c.tables, c.partitions, c.rate, c.rows, c.duration, c.interval, c.warmup)
	if c.deleteEvery > 0 {
		fmt.Fprintf(&b, "  every %d commits a position delete of %d rows (merge-on-read)\n", c.deleteEvery, c.deleteRows)
	}
	e := s.tables[0].eff
	fmt.Fprintf(&b, "maintainer: %s; log %s/%s.log\n", s.mx.Describe(), c.out, c.maintainer)
	if c.maintainer != maintainerReactor {
		b.WriteString("reactor's policy (the soak's bounds, not applied):")
	} else {
		b.WriteString("reactor:")
	}
	fmt.Fprintf(&b, " target_file_size %s (%s), small_file_count %d, min_input_files %d, tier_fan_in %d,\n",
		sizeText(e.TargetFileSize), e.TargetFileSizeSource, e.SmallFileCount, e.MinInputFiles, e.TierFanIn)
	fmt.Fprintf(&b, "  quiet_period %s, max_quiet_wait %s, cooldown %s, conflict_cooldown %s, commit_retry_time %s,\n",
		e.QuietPeriod, e.MaxQuietWait, e.Cooldown, e.ConflictCooldown, e.CommitRetryTime)
	fmt.Fprintf(&b, "  manifest_count %d, snapshot_count %d, snapshot_max_age %s, retain_last %d, min_reader_margin %s, expire_deletion_delay %s\n",
		e.ManifestCount, e.SnapshotCount, e.SnapshotMaxAge, e.RetainLast, e.MinReaderMargin, e.ExpireDeletionDelay)
	if c.thresholdsFile != "" || len(c.sets) > 0 {
		fmt.Fprintf(&b, "  thresholds: file %q, -set %v\n", c.thresholdsFile, c.sets)
	}
	fmt.Fprintf(&b, "machine: %d CPUs, %s at start\n", runtime.NumCPU(), loadText())
	return b.String()
}

func loadText() string {
	la, err := probe.LoadAverage()
	if err != nil {
		return "load average unknown"
	}
	return fmt.Sprintf("load average %.2f %.2f %.2f", la[0], la[1], la[2])
}

func sizeText(n int64) string {
	switch {
	case n >= 1<<30 && n%(1<<30) == 0:
		return fmt.Sprintf("%dGiB", n>>30)
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%dMiB", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%dKiB", n>>10)
	}
	return fmt.Sprintf("%dB", n)
}

// verdict is one target, met or missed, with the measured figure.
type verdict struct {
	target   string
	met      bool
	measured string
	unknown  bool // nothing to measure it on
}

func (v verdict) String() string {
	status := "met   "
	switch {
	case v.unknown:
		status = "n/a   "
	case !v.met:
		status = "MISSED"
	}
	return fmt.Sprintf("  %s  %s: %s", status, v.target, v.measured)
}

// verdicts evaluates the targets on the samples after the warm-up.
func (s *soak) verdicts() []verdict {
	var after []sample
	for _, r := range s.samples {
		if r.Elapsed >= s.cfg.warmup {
			after = append(after, r)
		}
	}
	allowanceCommits := int(math.Ceil(s.cfg.rate * s.cfg.allowance.Seconds()))
	var out []verdict

	// Live data files, per table, at every sample.
	v := verdict{target: "live data files <= ideal + small_file_count per partition, every table, every sample"}
	worst, worstAt, worstTable, worstAllowed := math.MinInt, time.Duration(0), "", 0
	for _, r := range after {
		for _, t := range r.Tables {
			if ex := t.Probe.DataFiles - t.AllowedFiles; ex > worst {
				worst, worstAt, worstTable, worstAllowed = ex, r.Elapsed, t.Table, t.AllowedFiles
			}
		}
	}
	if worstTable == "" {
		v.unknown, v.measured = true, "no sample after the warm-up"
	} else {
		v.met = worst <= 0
		v.measured = fmt.Sprintf("worst %d files vs %d allowed (%s at %s)", worstAllowed+worst, worstAllowed,
			worstTable, worstAt.Round(time.Second))
		if !v.met {
			v.measured += fmt.Sprintf(", %.1fx the allowance", float64(worstAllowed+worst)/float64(worstAllowed))
		}
	}
	out = append(out, v)

	// Full scan vs the compacted copy.
	v = verdict{target: fmt.Sprintf("full scan <= %.1fx the compacted copy", targetScanRatio)}
	var ratios []float64
	var worstScan *sample
	for i, r := range after {
		if r.ScanTables == 0 {
			continue
		}
		ratios = append(ratios, r.ScanRatio)
		if worstScan == nil || r.ScanRatio > worstScan.ScanRatio {
			worstScan = &after[i]
		}
	}
	if worstScan == nil {
		v.unknown, v.measured = true, "no scan after the warm-up"
	} else {
		slices.Sort(ratios)
		v.met = worstScan.ScanRatio <= targetScanRatio
		v.measured = fmt.Sprintf("worst %.1fx at %s (%d table(s) scanned: %s vs %s), median %.1fx over %d samples",
			worstScan.ScanRatio, worstScan.Elapsed.Round(time.Second), worstScan.ScanTables,
			worstScan.LiveScan.Round(time.Millisecond), worstScan.CompactedScan.Round(time.Millisecond),
			ratios[len(ratios)/2], len(ratios))
	}
	out = append(out, v)

	// Snapshots and manifests within their bounds.
	for _, m := range []struct {
		what, knob string
		value      func(tableSample) int
		bound      func(tableSample) int
	}{
		{"snapshots", "snapshot_count", func(t tableSample) int { return t.Probe.Snapshots }, func(t tableSample) int { return t.SnapshotBound }},
		{"data manifests", "manifest_count", func(t tableSample) int { return t.Probe.DataManifests }, func(t tableSample) int { return t.ManifestBound }},
	} {
		v := verdict{target: fmt.Sprintf("%s <= %s (+%d commits' allowance: %s at %g/s)", m.what, m.knob,
			allowanceCommits, s.cfg.allowance, s.cfg.rate)}
		maxV, bound, at, tbl := -1, 0, time.Duration(0), ""
		for _, r := range after {
			for _, t := range r.Tables {
				if x := m.value(t); x > maxV {
					maxV, bound, at, tbl = x, m.bound(t), r.Elapsed, t.Table
				}
			}
		}
		if tbl == "" {
			v.unknown, v.measured = true, "no sample after the warm-up"
		} else {
			v.met = maxV <= bound+allowanceCommits
			v.measured = fmt.Sprintf("max %d vs bound %d (%s at %s)", maxV, bound, tbl, at.Round(time.Second))
			if !v.met {
				v.measured += fmt.Sprintf(", %.1fx the bound", float64(maxV)/float64(bound))
			}
		}
		out = append(out, v)
	}

	// Commit latency, last window vs first.
	w := s.cfg.window
	first := s.lat.Window(s.start, s.start.Add(w))
	last := s.lat.Window(s.writersEnd.Add(-w), s.writersEnd.Add(time.Second))
	v = verdict{target: fmt.Sprintf("writer commit p50, last %s <= %.1fx the first %s", w, targetLatencyRatio, w)}
	if first.N == 0 || last.N == 0 || s.writersEnd.Sub(s.start) < 2*w {
		v.unknown = true
		v.measured = fmt.Sprintf("the run is shorter than two windows (first %d, last %d commits)", first.N, last.N)
	} else {
		r := float64(last.P50) / float64(first.P50)
		v.met = r <= targetLatencyRatio
		v.measured = fmt.Sprintf("%.1fx: %s (p99 %s, %d commits) vs %s (p99 %s, %d commits)", r,
			shortDur(last.P50), shortDur(last.P99), last.N, shortDur(first.P50), shortDur(first.P99), first.N)
	}
	out = append(out, v)

	// No job gave up (or failed).
	end := s.samples[len(s.samples)-1]
	tally := s.jobs.Tally() // with the events reactor sent while stopping
	gaveUp, failed := tally.Outcome("gave_up"), tally.Outcome("failed")
	v = verdict{target: "no job gave up or failed", met: gaveUp+failed == 0}
	v.measured = fmt.Sprintf("%d gave up, %d failed of %d finished", gaveUp, failed, finishedJobs(tally))
	if s.cfg.maintainer != maintainerReactor {
		v.unknown, v.measured = true, s.cfg.maintainer+" sends no job events"
	}
	if gaveUp+failed > 0 {
		v.measured += " (" + byKind(tally, "gave_up", "failed") + ")"
	}
	out = append(out, v)

	// Write amplification.
	rewritten := s.rewrittenBytes(end)
	wa := end.WriteAmp()
	if end.BytesWritten > 0 {
		wa = float64(rewritten) / float64(end.BytesWritten)
	}
	out = append(out, verdict{target: fmt.Sprintf("write amplification <= %.0fx", targetWriteAmp), met: wa <= targetWriteAmp,
		measured: fmt.Sprintf("%.2fx: %s rewritten / %s written", wa, bytesText(rewritten), bytesText(end.BytesWritten))})
	return append(out, s.quietVerdicts()...)
}

// rewrittenBytes is what the maintainer rewrote by the end: reactor's
// job events (with those it sent while stopping), a peer's replace
// snapshots.
func (s *soak) rewrittenBytes(end sample) int64 {
	if s.rw != nil {
		return s.rw.Bytes()
	}
	return s.jobs.Tally().RewrittenBytes
}

func finishedJobs(t probe.JobTally) int {
	n := 0
	for _, v := range t.Finished {
		n += v
	}
	return n
}

// byKind lists the finished jobs with the given outcomes by kind.
func byKind(t probe.JobTally, outcomes ...string) string {
	var parts []string
	for k, n := range t.Finished {
		if slices.Contains(outcomes, k.Outcome) {
			parts = append(parts, fmt.Sprintf("%s %s %d", k.Kind, k.Outcome, n))
		}
	}
	slices.Sort(parts)
	return strings.Join(parts, ", ")
}

func bytesText(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.2f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}

// summary is printed and saved at the end.
func (s *soak) summary(checks []rowCheck, interrupted bool) string {
	var b strings.Builder
	if len(s.samples) == 0 {
		fmt.Fprintln(&b, "no samples")
		return b.String()
	}
	end := s.samples[len(s.samples)-1]
	written := s.writersEnd.Sub(s.start)
	fmt.Fprintf(&b, "\nwriters: %d commits in %s (%.2f/s, target %g/s per table x %d)", end.Commits,
		written.Round(time.Second), float64(end.Commits)/written.Seconds(), s.cfg.rate, s.cfg.tables)
	missed := 0
	for _, t := range s.tables {
		missed += t.pace.Missed
	}
	fmt.Fprintf(&b, ", %d commit slots missed (writer busy), %d conflicts retried\n", missed, end.WriterConflicts)
	if s.cfg.deleteEvery > 0 {
		var commits, rows int64
		dropped := 0
		for _, t := range s.tables {
			c, r, d := t.del.stats()
			commits, rows, dropped = commits+c, rows+r, dropped+d
		}
		fmt.Fprintf(&b, "deletes: %d position-delete commits of up to %d rows (%d rows asked for), %d requests dropped while one was under way\n",
			commits, s.cfg.deleteRows, rows, dropped)
	}
	tally := s.jobs.Tally()
	fmt.Fprintf(&b, "jobs: %s\n", jobsText(tally))
	fmt.Fprintf(&b, "expiry: %d snapshots expired; of the files they held, %d deleted at once, %d deferred to min_reader_margin, of which %d deleted, %d kept (referenced again), %d pending\n",
		tally.ExpiredSnapshots, tally.ExpiryDeletedFiles, tally.ExpiryDeferredFiles, tally.DeferredDeletedFiles,
		tally.DeferredKeptFiles, tally.PendingDeletion())
	for kind, msg := range tally.LastError {
		fmt.Fprintf(&b, "last error of %s: %s\n", kind, truncate(msg, 300))
	}
	if s.sampleErrors > 0 {
		fmt.Fprintf(&b, "samples skipped after a measurement error: %d (see the warnings above)\n", s.sampleErrors)
	}
	var cpu time.Duration
	for _, r := range s.samples {
		cpu += r.ReactorCPU
	}
	fmt.Fprintf(&b, "%s CPU: %.1f s over %s (%.0f%% of one core), peak memory %s; %s at the end\n", s.cfg.maintainer,
		cpu.Seconds(), written.Round(time.Second), 100*cpu.Seconds()/written.Seconds(), bytesText(s.peakRSS), loadText())
	b.WriteString(s.fleetText(cpu, end.Commits))
	fmt.Fprintf(&b, "last sample: %d live data files (ideal %d), %d snapshots, %d data manifests, %d data files on disk\n",
		end.DataFiles, end.IdealFiles, end.SnapshotsMax, end.ManifestsMax, end.DiskDataFiles)

	fmt.Fprintf(&b, "\ntargets (docs/design.md#streaming-targets), on the %d samples after the first %s:\n", countAfter(s.samples, s.cfg.warmup), s.cfg.warmup)
	met, total := 0, 0
	for _, v := range s.verdicts() {
		fmt.Fprintln(&b, v)
		if !v.unknown {
			total++
			if v.met {
				met++
			}
		}
	}
	fmt.Fprintf(&b, "  %d of %d targets met\n", met, total)
	if interrupted {
		fmt.Fprintln(&b, "  (interrupted: the run is shorter than asked)")
	}

	fmt.Fprintln(&b, "\nrows and checksum, table by table:")
	for _, c := range checks {
		status := "OK      "
		if !c.ok {
			status = "MISMATCH"
		}
		fmt.Fprintf(&b, "  %s %s: read %s, wrote %s", status, c.table, c.got, c.want)
		if c.dupIDs > 0 {
			fmt.Fprintf(&b, ", %d ids more than once", c.dupIDs)
		}
		fmt.Fprintln(&b)
	}
	return b.String()
}

func countAfter(samples []sample, warmup time.Duration) int {
	n := 0
	for _, r := range samples {
		if r.Elapsed >= warmup {
			n++
		}
	}
	return n
}

// jobsText lists finished jobs by kind and outcome.
func jobsText(t probe.JobTally) string {
	type kv struct {
		k probe.JobOutcome
		n int
	}
	var all []kv
	for k, n := range t.Finished {
		all = append(all, kv{k, n})
	}
	if len(all) == 0 {
		return "none finished"
	}
	slices.SortFunc(all, func(a, b kv) int {
		return cmp.Or(cmp.Compare(a.k.Kind, b.k.Kind), cmp.Compare(a.k.Outcome, b.k.Outcome))
	})
	parts := make([]string, len(all))
	for i, x := range all {
		parts[i] = fmt.Sprintf("%s %s %d", x.k.Kind, x.k.Outcome, x.n)
	}
	s := strings.Join(parts, ", ")
	if n := t.Running(); n > 0 {
		s += fmt.Sprintf("; %d scheduled and unfinished", n)
	}
	return s
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}

// plotNotes is the plot's subtitle.
func (s *soak) plotNotes() string {
	return fmt.Sprintf("maintainer %s; %d table(s) x %d partitions, %g commits/s/table x %d rows, %s; %s", s.cfg.maintainer,
		s.cfg.tables, s.cfg.partitions, s.cfg.rate, s.cfg.rows, s.cfg.duration, loadText())
}
