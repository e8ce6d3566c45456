package probe

import (
	"context"
	"errors"
	"fmt"
	iofs "io/fs"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
)

// TableSample is one measurement of a table's current snapshot.
type TableSample struct {
	DataFiles int   // live data files
	DataBytes int64 // their size
	Records   int64 // their record count (before deletes)
	// Partitions is the number of partitions holding live data files.
	Partitions int
	// IdealFiles is what a perfect compaction would leave: per partition,
	// ceil(bytes / target file size).
	IdealFiles int
	// DeleteFiles is the number of distinct delete files (position,
	// equality, deletion vectors) a full scan applies.
	DeleteFiles int
	// EqualityDeletesMax is the most equality delete files a full scan
	// applies within one partition (a CDC table's debt).
	EqualityDeletesMax int
	// PlannedFiles is every file a full scan opens: data plus delete files.
	PlannedFiles      int
	Snapshots         int
	DataManifests     int // data manifests of the current snapshot
	DeleteManifests   int
	OldestSnapshotAge time.Duration
	// DiskDataFiles counts the files under the table's data/ directory:
	// live ones, those older snapshots still reference and those awaiting
	// deletion. -1 when the table is not on the local file system.
	DiskDataFiles int
}

// Measure reads tbl's current snapshot: its manifest list and manifests
// (through a full scan's planning) and, for a local table, its data
// directory. targetFileSize sets the ideal file count.
func Measure(ctx context.Context, tbl *table.Table, targetFileSize int64) (TableSample, error) {
	if targetFileSize <= 0 {
		return TableSample{}, fmt.Errorf("probe: target file size must be positive, got %d", targetFileSize)
	}
	md := tbl.Metadata()
	s := TableSample{Snapshots: len(md.Snapshots()), DiskDataFiles: -1}
	now := time.Now()
	for _, snap := range md.Snapshots() {
		if age := now.Sub(time.UnixMilli(snap.TimestampMs)); age > s.OldestSnapshotAge {
			s.OldestSnapshotAge = age
		}
	}
	if n, err := diskDataFiles(tbl.Location()); err == nil {
		s.DiskDataFiles = n
	} else if !errors.Is(err, errNotLocal) {
		return s, fmt.Errorf("probe: list data files of %v: %w", tbl.Identifier(), err)
	}
	snap := tbl.CurrentSnapshot()
	if snap == nil {
		return s, nil
	}
	fs, err := tbl.FS(ctx)
	if err != nil {
		return s, fmt.Errorf("probe: table io of %v: %w", tbl.Identifier(), err)
	}
	manifests, err := snap.Manifests(fs)
	if err != nil {
		return s, fmt.Errorf("probe: manifest list of %v: %w", tbl.Identifier(), err)
	}
	for _, m := range manifests {
		if m.ManifestContent() == iceberg.ManifestContentDeletes {
			s.DeleteManifests++
		} else {
			s.DataManifests++
		}
	}
	tasks, err := tbl.Scan().PlanFiles(ctx)
	if err != nil {
		return s, fmt.Errorf("probe: plan a full scan of %v: %w", tbl.Identifier(), err)
	}
	bytesByPartition := map[string]int64{}
	deletes := map[string]bool{}
	eqByPartition := map[string]map[string]bool{}
	for _, t := range tasks {
		s.DataFiles++
		s.DataBytes += t.File.FileSizeBytes()
		s.Records += t.File.Count()
		bytesByPartition[PartitionKey(t.File)] += t.File.FileSizeBytes()
		for _, group := range [][]iceberg.DataFile{t.DeleteFiles, t.EqualityDeleteFiles, t.DeletionVectorFiles} {
			for _, d := range group {
				deletes[d.FilePath()] = true
			}
		}
		for _, d := range t.EqualityDeleteFiles {
			key := PartitionKey(t.File)
			if eqByPartition[key] == nil {
				eqByPartition[key] = map[string]bool{}
			}
			eqByPartition[key][d.FilePath()] = true
		}
	}
	for _, eq := range eqByPartition {
		s.EqualityDeletesMax = max(s.EqualityDeletesMax, len(eq))
	}
	s.Partitions = len(bytesByPartition)
	for _, b := range bytesByPartition {
		s.IdealFiles += int((b + targetFileSize - 1) / targetFileSize)
	}
	s.DeleteFiles = len(deletes)
	s.PlannedFiles = s.DataFiles + s.DeleteFiles
	return s, nil
}

// PartitionKey identifies a data file's partition: its spec id and its
// partition values in field order.
func PartitionKey(f iceberg.DataFile) string {
	vals := f.Partition()
	ids := make([]int, 0, len(vals))
	for id := range vals {
		ids = append(ids, id)
	}
	sort.Ints(ids)
	var b strings.Builder
	fmt.Fprintf(&b, "%d", f.SpecID())
	for _, id := range ids {
		fmt.Fprintf(&b, "/%d=%v", id, vals[id])
	}
	return b.String()
}

var errNotLocal = errors.New("table is not on the local file system")

// diskDataFiles counts the regular, non-hidden files under location/data.
func diskDataFiles(location string) (int, error) {
	u, err := url.Parse(location)
	if err != nil || (u.Scheme != "file" && u.Scheme != "") {
		return 0, errNotLocal
	}
	dir := filepath.Join(filepath.FromSlash(u.Path), "data")
	n := 0
	err = filepath.WalkDir(dir, func(path string, d iofs.DirEntry, err error) error {
		switch {
		case errors.Is(err, iofs.ErrNotExist):
			return nil // no data yet, or a file deleted under the walk
		case err != nil:
			return err
		case strings.HasPrefix(d.Name(), "."):
			if d.IsDir() && path != dir {
				return filepath.SkipDir
			}
			return nil
		case d.Type().IsRegular():
			n++
		}
		return nil
	})
	if errors.Is(err, os.ErrNotExist) {
		return 0, nil
	}
	return n, err
}
