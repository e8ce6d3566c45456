package main

import (
	"encoding/csv"
	"fmt"
	"os"
	"strconv"
	"time"

	"github.com/icereactor/reactor/jobkind"
	"github.com/icereactor/reactor/probe"
)

// jobKinds are the job kinds that get their own columns (every kind, in
// jobkind.All's order), then "other": the kinds of a CSV an older or newer
// build wrote that this one does not name (replot ignores the column).
var jobKinds = func() []string {
	var out []string
	for _, k := range jobkind.All() {
		out = append(out, k.String())
	}
	return append(out, "other")
}()

// jobOutcomes are the outcomes of finished jobs (reactor_jobs_total's).
var jobOutcomes = []string{"succeeded", "noop", "gave_up", "failed"}

// column is one CSV column: its name and how a row renders it.
type column[T any] struct {
	name  string
	value func(T) string
}

func ms(d time.Duration) string {
	return strconv.FormatFloat(float64(d)/float64(time.Millisecond), 'f', 1, 64)
}
func secs(d time.Duration) string { return strconv.FormatFloat(d.Seconds(), 'f', 2, 64) }
func num[N int | int64](n N) string {
	return strconv.FormatInt(int64(n), 10)
}
func ratio(f float64) string { return strconv.FormatFloat(f, 'f', 3, 64) }

// sampleColumns are samples.csv's columns, in order.
func sampleColumns() []column[sample] {
	cols := []column[sample]{
		{"elapsed_s", func(s sample) string { return secs(s.Elapsed) }},
		{"commits", func(s sample) string { return num(s.Commits) }},
		{"commit_rate", func(s sample) string { return ratio(s.CommitRate) }},
		{"rows_written", func(s sample) string { return num(s.RowsWritten) }},
		{"bytes_written", func(s sample) string { return num(s.BytesWritten) }},
		{"data_files", func(s sample) string { return num(s.DataFiles) }},
		{"ideal_files", func(s sample) string { return num(s.IdealFiles) }},
		{"allowed_files", func(s sample) string { return num(s.AllowedFiles) }},
		{"delete_files", func(s sample) string { return num(s.DeleteFiles) }},
		{"eq_deletes_per_partition_max", func(s sample) string { return num(s.EqualityDeletesMax) }},
		{"planned_files", func(s sample) string { return num(s.PlannedFiles) }},
		{"snapshots_max", func(s sample) string { return num(s.SnapshotsMax) }},
		{"snapshot_bound", func(s sample) string { return num(s.SnapshotBound) }},
		{"data_manifests_max", func(s sample) string { return num(s.ManifestsMax) }},
		{"manifest_bound", func(s sample) string { return num(s.ManifestBound) }},
		{"disk_data_files", func(s sample) string { return num(s.DiskDataFiles) }},
		{"scan_tables", func(s sample) string { return num(s.ScanTables) }},
		{"live_scan_ms", func(s sample) string { return ifScanned(s, ms(s.LiveScan)) }},
		{"compacted_scan_ms", func(s sample) string { return ifScanned(s, ms(s.CompactedScan)) }},
		{"compacted_files", func(s sample) string { return ifScanned(s, num(s.CompactedFiles)) }},
		{"scan_ratio", func(s sample) string { return ifScanned(s, ratio(s.ScanRatio)) }},
		{"copy_build_ms", func(s sample) string { return ifScanned(s, ms(s.CopyBuild)) }},
		{"bytes_rewritten", func(s sample) string { return num(s.BytesRewritten) }},
		{"write_amp", func(s sample) string { return ratio(s.WriteAmp()) }},
		{"commit_p50_ms", func(s sample) string { return ms(s.CommitP50) }},
		{"commit_p99_ms", func(s sample) string { return ms(s.CommitP99) }},
		{"commits_in_interval", func(s sample) string { return num(s.CommitN) }},
		{"writer_conflicts", func(s sample) string { return num(s.WriterConflicts) }},
		{"reactor_cpu_s", func(s sample) string { return secs(s.ReactorCPU) }},
		{"reactor_cpu_pct", func(s sample) string { return strconv.FormatFloat(s.ReactorCPUPct, 'f', 1, 64) }},
		{"maintainer_rss_mb", func(s sample) string { return strconv.FormatFloat(float64(s.MaintainerRSS)/(1<<20), 'f', 1, 64) }},
		{"load1", func(s sample) string { return strconv.FormatFloat(s.Load1, 'f', 2, 64) }},
		{"jobs_running", func(s sample) string { return num(s.Jobs.Running()) }},
	}
	for _, kind := range jobKinds {
		for _, outcome := range jobOutcomes {
			cols = append(cols, column[sample]{"jobs_" + kind + "_" + outcome,
				func(s sample) string { return num(jobCount(s.Jobs, kind, outcome)) }})
		}
	}
	cols = append(cols,
		column[sample]{"expired_snapshots", func(s sample) string { return num(s.Jobs.ExpiredSnapshots) }},
		column[sample]{"expiry_deleted_files", func(s sample) string { return num(s.Jobs.ExpiryDeletedFiles) }},
		column[sample]{"expiry_deferred_files", func(s sample) string { return num(s.Jobs.ExpiryDeferredFiles) }},
		column[sample]{"deferred_deleted_files", func(s sample) string { return num(s.Jobs.DeferredDeletedFiles) }},
		column[sample]{"pending_deletion_files", func(s sample) string { return num(s.Jobs.PendingDeletion()) }},
		column[sample]{"sample_ms", func(s sample) string { return ms(s.SampleTime) }},
	)
	return cols
}

// ifScanned leaves the scan columns empty in samples without a scan.
func ifScanned(s sample, v string) string {
	if s.ScanTables == 0 {
		return ""
	}
	return v
}

// jobCount counts kind's finished jobs with outcome; "other" counts the
// kinds without columns of their own.
func jobCount(t probe.JobTally, kind, outcome string) int {
	if kind != "other" {
		return t.Count(kind, outcome)
	}
	n := 0
	for k, v := range t.Finished {
		if k.Outcome == outcome && !isListedKind(k.Kind) {
			n += v
		}
	}
	return n
}

func isListedKind(kind string) bool {
	for _, k := range jobKinds[:len(jobKinds)-1] {
		if k == kind {
			return true
		}
	}
	return false
}

// tableRow is a tables.csv row.
type tableRow struct {
	Elapsed time.Duration
	tableSample
}

// tableColumns are tables.csv's columns.
func tableColumns() []column[tableRow] {
	scanned := func(r tableRow, f func(*probe.ScanSample) string) string {
		if r.Scan == nil {
			return ""
		}
		return f(r.Scan)
	}
	return []column[tableRow]{
		{"elapsed_s", func(r tableRow) string { return secs(r.Elapsed) }},
		{"table", func(r tableRow) string { return r.Table }},
		{"data_files", func(r tableRow) string { return num(r.Probe.DataFiles) }},
		{"data_bytes", func(r tableRow) string { return num(r.Probe.DataBytes) }},
		{"ideal_files", func(r tableRow) string { return num(r.Probe.IdealFiles) }},
		{"allowed_files", func(r tableRow) string { return num(r.AllowedFiles) }},
		{"partitions", func(r tableRow) string { return num(r.Probe.Partitions) }},
		{"delete_files", func(r tableRow) string { return num(r.Probe.DeleteFiles) }},
		{"eq_deletes_per_partition_max", func(r tableRow) string { return num(r.Probe.EqualityDeletesMax) }},
		{"planned_files", func(r tableRow) string { return num(r.Probe.PlannedFiles) }},
		{"snapshots", func(r tableRow) string { return num(r.Probe.Snapshots) }},
		{"data_manifests", func(r tableRow) string { return num(r.Probe.DataManifests) }},
		{"oldest_snapshot_age_s", func(r tableRow) string { return secs(r.Probe.OldestSnapshotAge) }},
		{"disk_data_files", func(r tableRow) string { return num(r.Probe.DiskDataFiles) }},
		{"live_scan_ms", func(r tableRow) string { return scanned(r, func(s *probe.ScanSample) string { return ms(s.Live) }) }},
		{"compacted_scan_ms", func(r tableRow) string {
			return scanned(r, func(s *probe.ScanSample) string { return ms(s.Compacted) })
		}},
		{"scan_ratio", func(r tableRow) string {
			return scanned(r, func(s *probe.ScanSample) string { return ratio(s.Ratio()) })
		}},
	}
}

// csvFile writes rows of T as they come, flushed per row, so a run cut
// short still leaves its samples.
type csvFile[T any] struct {
	f    *os.File
	w    *csv.Writer
	cols []column[T]
}

func createCSV[T any](path string, cols []column[T]) (*csvFile[T], error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	c := &csvFile[T]{f: f, w: csv.NewWriter(f), cols: cols}
	header := make([]string, len(cols))
	for i, col := range cols {
		header[i] = col.name
	}
	if err := c.write(header); err != nil {
		f.Close()
		return nil, err
	}
	return c, nil
}

func (c *csvFile[T]) Add(row T) error {
	rec := make([]string, len(c.cols))
	for i, col := range c.cols {
		rec[i] = col.value(row)
	}
	return c.write(rec)
}

func (c *csvFile[T]) write(rec []string) error {
	if err := c.w.Write(rec); err != nil {
		return fmt.Errorf("write %s: %w", c.f.Name(), err)
	}
	c.w.Flush()
	if err := c.w.Error(); err != nil {
		return fmt.Errorf("write %s: %w", c.f.Name(), err)
	}
	return nil
}

func (c *csvFile[T]) Close() error { return c.f.Close() }
