package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/icereactor/reactor/embedded"
)

// peerEnv is what -maintainer-cmd is told about the soak's tables: the
// catalog reactor would share (embedded.OpenCatalog's SQLite file, keyed
// by its catalog name), the warehouse, the tables and the target file size
// every maintainer aims at.
func (s *soak) peerEnv(dataDir string) []string {
	dir := filepath.Join(dataDir, "catalog")
	names := make([]string, len(s.tables))
	for i, t := range s.tables {
		names[i] = t.name
	}
	return []string{
		"SOAK_CATALOG_DB=" + filepath.Join(dir, "catalog.db"),
		"SOAK_CATALOG_NAME=" + embedded.CatalogName,
		"SOAK_WAREHOUSE=file://" + filepath.Join(dir, "warehouse"),
		"SOAK_TABLES=" + strings.Join(names, ","),
		"SOAK_TARGET_FILE_SIZE=" + strconv.FormatInt(s.tables[0].eff.TargetFileSize, 10),
	}
}

// result is result.json: one run's figures for a side-by-side table of
// maintainers (interop/peers). Ratios and medians are over the samples
// after the warm-up; the per-sample series are in samples.csv.
type result struct {
	Maintainer     string  `json:"maintainer"`
	Command        string  `json:"command,omitempty"`
	Rate           float64 `json:"rate"`
	Partitions     int     `json:"partitions"`
	Rows           int     `json:"rows_per_commit"`
	Tables         int     `json:"tables"`
	WrittenS       float64 `json:"written_s"`
	Commits        int     `json:"commits"`
	Samples        int     `json:"samples_after_warmup"`
	FilesLast      int     `json:"live_files_last"`
	IdealLast      int     `json:"ideal_files_last"`
	FilesMedian    float64 `json:"live_files_median"`
	FilesMax       int     `json:"live_files_max"`
	ScanMedian     float64 `json:"scan_ratio_median"`
	ScanMax        float64 `json:"scan_ratio_max"`
	ScanLast       float64 `json:"scan_ratio_last"`
	WriteAmp       float64 `json:"write_amp"`
	RewrittenBytes int64   `json:"rewritten_bytes"`
	WrittenBytes   int64   `json:"written_bytes"`
	CPUS           float64 `json:"cpu_s"`       // while the writers wrote
	CPUTotalS      float64 `json:"cpu_total_s"` // with the start-up, until the stop
	PeakRSS        int64   `json:"peak_rss_bytes"`
	SnapshotsMax   int     `json:"snapshots_max"`
	SnapshotsLast  int     `json:"snapshots_last"`
	ManifestsMax   int     `json:"data_manifests_max"`
	ManifestsLast  int     `json:"data_manifests_last"`
	CommitP50Ms    float64 `json:"commit_p50_ms"`
	CommitP99Ms    float64 `json:"commit_p99_ms"`
	Conflicts      int     `json:"writer_conflicts"`
	RowsOK         bool    `json:"rows_ok"`
	RowsRead       int64   `json:"rows_read"`
	RowsWritten    int64   `json:"rows_written"`
	Load1Mean      float64 `json:"load1_mean"`
}

func (s *soak) writeResult(path string, checks []rowCheck, end usage) error {
	if len(s.samples) == 0 {
		return nil
	}
	c := s.cfg
	last := s.samples[len(s.samples)-1]
	r := result{Maintainer: c.maintainer, Command: c.maintainerCmd, Rate: c.rate, Partitions: c.partitions,
		Rows: c.rows, Tables: c.tables, WrittenS: s.writersEnd.Sub(s.start).Seconds(), Commits: last.Commits,
		FilesLast: last.DataFiles, IdealLast: last.IdealFiles, RewrittenBytes: s.rewrittenBytes(last),
		WrittenBytes: last.BytesWritten, CPUTotalS: end.cpu.Seconds(), PeakRSS: max(s.peakRSS, end.peak),
		SnapshotsLast: last.SnapshotsMax, ManifestsLast: last.ManifestsMax, Conflicts: last.WriterConflicts,
		RowsOK: true}
	if r.WrittenBytes > 0 {
		r.WriteAmp = float64(r.RewrittenBytes) / float64(r.WrittenBytes)
	}
	var files, scans []float64
	var load float64
	for _, x := range s.samples {
		r.CPUS += x.ReactorCPU.Seconds()
		load += x.Load1
		if x.Elapsed < c.warmup || x.Elapsed > s.writersEnd.Sub(s.start) {
			continue
		}
		r.Samples++
		files = append(files, float64(x.DataFiles))
		r.FilesMax = max(r.FilesMax, x.DataFiles)
		r.SnapshotsMax = max(r.SnapshotsMax, x.SnapshotsMax)
		r.ManifestsMax = max(r.ManifestsMax, x.ManifestsMax)
		if x.ScanTables > 0 {
			scans = append(scans, x.ScanRatio)
			r.ScanMax = max(r.ScanMax, x.ScanRatio)
			r.ScanLast = x.ScanRatio
		}
	}
	r.Load1Mean = load / float64(len(s.samples))
	if len(files) > 0 {
		r.FilesMedian = median(files)
	}
	if len(scans) > 0 {
		r.ScanMedian = median(scans)
	}
	all := s.lat.Window(s.start, s.writersEnd.Add(time.Second))
	r.CommitP50Ms = float64(all.P50.Microseconds()) / 1000
	r.CommitP99Ms = float64(all.P99.Microseconds()) / 1000
	for _, ch := range checks {
		r.RowsOK = r.RowsOK && ch.ok
		r.RowsRead += ch.got.Rows
		r.RowsWritten += ch.want.Rows
	}
	data, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return fmt.Errorf("result.json: %w", err)
	}
	if err := os.WriteFile(path, append(data, '\n'), 0o644); err != nil {
		return fmt.Errorf("result.json: %w", err)
	}
	return nil
}
