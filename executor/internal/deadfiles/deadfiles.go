// Package deadfiles finds the delete files that provably apply to no live
// row of a table's current snapshot, by metadata alone (deadfiles.go:
// [Find], [Delete]): scan planning attached them to no task, and their
// sequence numbers, file_path bounds or equality-column ranges prove that
// no live data file they could reach holds a row they delete. It reads
// the table; it must not commit or delete anything (the executor's
// dead-delete removal does, through its commit loop).
package deadfiles

import (
	"cmp"
	"context"
	"fmt"

	"github.com/apache/iceberg-go"
	iceio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"

	"github.com/icereactor/reactor/executor/internal/commit"
	"github.com/icereactor/reactor/executor/internal/datapath"
	"github.com/icereactor/reactor/jobs"
)

// Delete is a live delete file that applies to no live data file.
type Delete struct {
	File iceberg.DataFile
	Key  string // its partition
	Why  string
}

// Find lists the live delete files of the given partitions that
// apply to no live data file of tbl's current snapshot. Two independent
// judgements must agree: scan planning attached the file to no task, and
// its own metadata proves it — every data file it could reach is newer
// than it (sequence numbers), lies outside its file_path bounds, or holds
// no value in the range of one of its equality columns. A delete either
// judgement is unsure about stays.
func Find(ctx context.Context, fs iceio.IO, tbl *table.Table, parts map[string]bool) ([]Delete, error) {
	tasks, err := tbl.Scan().PlanFiles(ctx)
	if err != nil {
		return nil, fmt.Errorf("plan files: %w", err)
	}
	attached := map[string]bool{}
	for _, t := range tasks {
		for _, list := range [][]iceberg.DataFile{t.DeleteFiles, t.EqualityDeleteFiles, t.DeletionVectorFiles} {
			for _, d := range list {
				attached[d.FilePath()] = true
			}
		}
	}
	meta := tbl.Metadata()
	keys := jobs.NewKeyer(meta)
	taskKeys := make([]string, len(tasks))
	for i, t := range tasks {
		taskKeys[i] = keys.Key(t.File.SpecID(), t.File.Partition())
	}
	snap := tbl.CurrentSnapshot()
	manifests, err := snap.Manifests(fs)
	if err != nil {
		return nil, fmt.Errorf("read manifest list of snapshot %d: %w", snap.SnapshotID, err)
	}
	reach := reachCheck{tasks: tasks, taskKeys: taskKeys, meta: meta, schema: meta.CurrentSchema()}
	var dead []Delete
	for _, m := range manifests {
		if m.ManifestContent() != iceberg.ManifestContentDeletes {
			continue
		}
		for entry, err := range m.Entries(fs, true) {
			if err != nil {
				return nil, fmt.Errorf("read manifest %s: %w", m.FilePath(), err)
			}
			df := entry.DataFile()
			key := keys.Key(df.SpecID(), df.Partition())
			if !parts[key] || attached[df.FilePath()] {
				continue
			}
			if why, ok := reach.appliesToNothing(df, key, entry.SequenceNum()); ok {
				dead = append(dead, Delete{File: df, Key: key, Why: why})
			}
		}
	}
	return dead, nil
}

// reachCheck decides from metadata alone whether a delete file can apply
// to any live data file.
type reachCheck struct {
	tasks    []table.FileScanTask
	taskKeys []string
	meta     table.Metadata
	schema   *iceberg.Schema
}

// appliesToNothing reports whether the delete file df (partition key, data
// sequence number seq) provably applies to no live data file, and why.
func (r reachCheck) appliesToNothing(df iceberg.DataFile, key string, seq int64) (string, bool) {
	if seq < 0 {
		return "", false
	}
	switch {
	case df.ContentType() == iceberg.EntryContentEqDeletes:
		return r.equalityReachesNothing(df, key, seq)
	case table.IsDeletionVector(df):
		ref := df.ReferencedDataFile()
		if ref == nil || *ref == "" {
			return "", false
		}
		for _, t := range r.tasks {
			if t.File.FilePath() == *ref && (t.DataSequenceNumber == nil || *t.DataSequenceNumber <= seq) {
				return "", false
			}
		}
		return "deletion vector of a data file that is gone or newer", true
	case df.ContentType() == iceberg.EntryContentPosDeletes:
		return r.positionsReachNothing(df, seq)
	}
	return "", false
}

// positionsReachNothing: a position delete applies to data files of a data
// sequence number at or below its own, named by its rows. Any partition is
// considered (a file-scoped delete applies by path wherever it sits).
func (r reachCheck) positionsReachNothing(df iceberg.DataFile, seq int64) (string, bool) {
	ref := commit.ReferencedDataFile(df)
	lower, upper := df.LowerBoundValues()[datapath.FilePathFieldID], df.UpperBoundValues()[datapath.FilePathFieldID]
	for _, t := range r.tasks {
		path := t.File.FilePath()
		switch {
		case ref != "" && path != ref:
			continue
		case ref == "" && len(lower) > 0 && len(upper) > 0 && (path < string(lower) || path > string(upper)):
			continue
		case t.DataSequenceNumber != nil && *t.DataSequenceNumber > seq:
			continue
		}
		return "", false
	}
	return "position delete naming no live data file at or below its sequence number", true
}

// equalityReachesNothing: an equality delete applies to data files of a
// lower data sequence number, in its partition (all partitions for an
// unpartitioned spec's delete), whose rows may hold its keys.
func (r reachCheck) equalityReachesNothing(df iceberg.DataFile, key string, seq int64) (string, bool) {
	global := len(df.Partition()) == 0
	if spec := r.meta.PartitionSpecByID(int(df.SpecID())); spec != nil && spec.IsUnpartitioned() {
		global = true
	}
	older := 0
	for i, t := range r.tasks {
		if !global && (t.File.SpecID() != df.SpecID() || r.taskKeys[i] != key) {
			continue
		}
		if t.DataSequenceNumber == nil {
			return "", false
		}
		if *t.DataSequenceNumber >= seq {
			continue
		}
		older++
		if !r.keysOutsideRange(df, t.File) {
			return "", false
		}
	}
	if older == 0 {
		return "equality delete older than every live data file it could reach", true
	}
	return fmt.Sprintf("equality delete whose keys lie outside the column ranges of all %d older data files", older), true
}

// keysOutsideRange reports whether, on one of the delete's equality
// columns, the delete's values (none null) and the data file's values lie
// in disjoint ranges: then no row of the file equals a row of the delete.
func (r reachCheck) keysOutsideRange(del, data iceberg.DataFile) bool {
	for _, id := range del.EqualityFieldIDs() {
		if nulls, ok := del.NullValueCounts()[id]; !ok || nulls > 0 {
			continue // a null key matches the file's nulls, which no bound shows
		}
		field, ok := r.schema.FindFieldByID(id)
		if !ok {
			continue
		}
		dl, du := del.LowerBoundValues()[id], del.UpperBoundValues()[id]
		fl, fu := data.LowerBoundValues()[id], data.UpperBoundValues()[id]
		if dl == nil || du == nil || fl == nil || fu == nil {
			continue
		}
		below, ok1 := compareBound(field.Type, du, fl)
		above, ok2 := compareBound(field.Type, dl, fu)
		if ok1 && ok2 && (below < 0 || above > 0) {
			return true
		}
	}
	return false
}

// compareBound compares two serialized bounds of type typ, for the types
// whose order is plain (false for the others: floats with their NaNs,
// decimals, nested types).
func compareBound(typ iceberg.Type, a, b []byte) (int, bool) {
	la, err := iceberg.LiteralFromBytes(typ, a)
	if err != nil {
		return 0, false
	}
	lb, err := iceberg.LiteralFromBytes(typ, b)
	if err != nil {
		return 0, false
	}
	switch x := la.(type) {
	case iceberg.Int32Literal:
		y, ok := lb.(iceberg.Int32Literal)
		return cmp.Compare(x, y), ok
	case iceberg.Int64Literal:
		y, ok := lb.(iceberg.Int64Literal)
		return cmp.Compare(x, y), ok
	case iceberg.DateLiteral:
		y, ok := lb.(iceberg.DateLiteral)
		return cmp.Compare(x, y), ok
	case iceberg.TimeLiteral:
		y, ok := lb.(iceberg.TimeLiteral)
		return cmp.Compare(x, y), ok
	case iceberg.TimestampLiteral:
		y, ok := lb.(iceberg.TimestampLiteral)
		return cmp.Compare(x, y), ok
	case iceberg.TimestampNsLiteral:
		y, ok := lb.(iceberg.TimestampNsLiteral)
		return cmp.Compare(x, y), ok
	case iceberg.StringLiteral:
		y, ok := lb.(iceberg.StringLiteral)
		return cmp.Compare(x, y), ok
	}
	return 0, false
}
