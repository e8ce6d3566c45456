package main

import (
	"time"

	"github.com/icereactor/reactor/probe"
)

// sample is one row of samples.csv: every table measured at one moment,
// added up (files, bytes) or at their worst (snapshots, manifests, scan
// ratio: their bounds are per table).
type sample struct {
	Elapsed      time.Duration
	Commits      int
	CommitRate   float64 // commits per second since the previous sample, all tables
	RowsWritten  int64
	BytesWritten int64
	DataFiles    int
	IdealFiles   int
	AllowedFiles int
	DeleteFiles  int
	// EqualityDeletesMax is the most equality delete files one partition
	// of one table applies (a CDC table's debt).
	EqualityDeletesMax int
	PlannedFiles       int
	SnapshotsMax       int
	SnapshotBound      int
	ManifestsMax       int
	ManifestBound      int
	DiskDataFiles      int
	ScanTables         int           // tables whose full scan was timed in this sample
	LiveScan           time.Duration // summed over ScanTables
	CompactedScan      time.Duration
	CompactedFiles     int
	ScanRatio          float64 // the worst table's
	CopyBuild          time.Duration
	BytesRewritten     int64
	CommitP50          time.Duration // the writers' commits that ended since the previous sample
	CommitP99          time.Duration
	CommitN            int
	WriterConflicts    int
	ReactorCPU         time.Duration // the maintainer's (reactor's process by default), since the previous sample
	ReactorCPUPct      float64       // of one core
	MaintainerRSS      int64         // the maintainer's resident bytes now (reactor's, or the peer's process group)
	Load1              float64
	Jobs               probe.JobTally // cumulative
	SampleTime         time.Duration  // how long measuring took
	Tables             []tableSample
}

// WriteAmp is bytes rewritten over bytes written so far.
func (s sample) WriteAmp() float64 {
	if s.BytesWritten == 0 {
		return 0
	}
	return float64(s.BytesRewritten) / float64(s.BytesWritten)
}

// tableSample is one table at one sample (a row of tables.csv).
type tableSample struct {
	Table         string
	Probe         probe.TableSample
	AllowedFiles  int
	SnapshotBound int
	ManifestBound int
	Scan          *probe.ScanSample // nil when not scanned in this sample
}
