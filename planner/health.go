package planner

import (
	"context"
	"fmt"
	"time"

	"github.com/apache/iceberg-go/table"

	"github.com/icereactor/reactor/tablename"
	"github.com/icereactor/reactor/thresholds"
)

// Health is a table's health report (the seeds' health-check step,
// docs/design.md#origins): what maintenance is supposed to keep in bounds,
// measured, with the problems that make the table unhealthy.
type Health struct {
	Table          string `json:"table"`
	SnapshotID     int64  `json:"snapshot_id"`
	DataFiles      int    `json:"data_files"`
	DataBytes      int64  `json:"data_bytes"`
	AvgFileSize    int64  `json:"avg_file_size"`
	TargetFileSize int64  `json:"target_file_size"`
	SmallFiles     int    `json:"small_files"`
	TinyFiles      int    `json:"tiny_files"`
	TinyFileSize   int64  `json:"tiny_file_size"`
	// TinyFileSizeSource: the thresholds file, or 1/32 of the target.
	TinyFileSizeSource string        `json:"tiny_file_size_source"`
	Snapshots          int           `json:"snapshots"`
	OldestSnapshotAge  time.Duration `json:"oldest_snapshot_age_ns"`
	DataManifests      int           `json:"data_manifests"`
	// Delete files of every kind and the delete rows they hold.
	DeleteFiles int      `json:"delete_files"`
	DeleteRows  int64    `json:"delete_rows"`
	Healthy     bool     `json:"healthy"`
	Problems    []string `json:"problems,omitempty"`
	// Notes are observations that do not make the table unhealthy.
	Notes []string `json:"notes,omitempty"`
}

func sizesOf(set thresholds.Effective) fileSizes {
	return fileSizes{small: set.SmallFileSize, tiny: set.TinyFileSize, fanIn: set.TierFanIn}
}

func buildHealth(name string, tc *tableCounters, snaps snapshotSummary, set thresholds.Effective, now time.Time) Health {
	tot := tc.totals()
	h := Health{
		Table: name, SnapshotID: tc.snapshotID, DataFiles: tot.DataFiles, DataBytes: tot.Bytes,
		TargetFileSize: set.TargetFileSize, SmallFiles: tot.SmallFiles, TinyFiles: tot.TinyFiles,
		TinyFileSize: set.TinyFileSize, TinyFileSizeSource: set.TinyFileSizeSource, Snapshots: snaps.count(), DataManifests: tc.dataManifests,
		DeleteFiles: tot.DeleteFiles(), DeleteRows: tot.DeleteRows(),
	}
	if tot.DataFiles > 0 {
		h.AvgFileSize = tot.Bytes / int64(tot.DataFiles)
	}
	if n := snaps.count(); n > 0 {
		h.OldestSnapshotAge = now.Sub(snaps.at(n - 1))
	}
	if h.TinyFiles > set.HealthMaxTinyFiles {
		h.Problems = append(h.Problems, fmt.Sprintf("%d files below %s (limit %d): compaction is not keeping up with some partitions",
			h.TinyFiles, thresholds.Size(set.TinyFileSize), set.HealthMaxTinyFiles))
	}
	if h.Snapshots > set.HealthMaxSnapshots {
		h.Problems = append(h.Problems, fmt.Sprintf("%d snapshots (limit %d): expiry is not running or retain_last is too large",
			h.Snapshots, set.HealthMaxSnapshots))
	}
	if h.OldestSnapshotAge > set.HealthMaxSnapshotAge {
		h.Problems = append(h.Problems, fmt.Sprintf("oldest snapshot is %s old (limit %s): expiry is not running",
			h.OldestSnapshotAge.Round(time.Second), set.HealthMaxSnapshotAge))
	}
	// The seeds' check: after bin-pack the average file should be within
	// 80-120% of the target; below usually means partitions smaller than
	// one target file, which is not a fault.
	if h.DataFiles > 0 && set.TargetFileSize > 0 {
		if r := float64(h.AvgFileSize) / float64(set.TargetFileSize); r < 0.8 || r > 1.2 {
			h.Notes = append(h.Notes, fmt.Sprintf("average file size is %.0f%% of the target (80-120%% expected after compaction; "+
				"partitions holding less than one target file of data stay below it)", r*100))
		}
	}
	h.Healthy = len(h.Problems) == 0
	return h
}

// Health reports the named table's health from the planner's state (no
// table scan). ok is false when the planner has not seen the table.
func (p *Planner) Health(name string) (Health, bool) {
	p.mu.Lock()
	st, ok := p.tables[name]
	p.mu.Unlock()
	if !ok {
		return Health{}, false
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.counters.partitions == nil {
		return Health{}, false
	}
	return buildHealth(name, &st.counters, st.snapshots, st.settings, p.now()), true
}

// CheckHealth computes a table's health from its current snapshot, reading
// every manifest once: what `reactor health TABLE` runs, without a worker.
func CheckHealth(ctx context.Context, tbl *table.Table, cfg *thresholds.Config, now time.Time) (Health, error) {
	name := tablename.Format(tbl.Identifier())
	set := cfg.For(name, tbl.Properties())
	var tc tableCounters
	if _, err := tc.advance(ctx, tbl, sizesOf(set)); err != nil {
		return Health{}, fmt.Errorf("read %s: %w", name, err)
	}
	return buildHealth(name, &tc, summarizeSnapshots(tbl.Metadata()), set, now), nil
}
