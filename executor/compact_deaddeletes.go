package executor

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"

	"github.com/apache/iceberg-go"
	iceio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"

	"github.com/icereactor/reactor/executor/internal/commit"
	"github.com/icereactor/reactor/executor/internal/datapath"
	"github.com/icereactor/reactor/jobs"
)

// deadDelete is a live delete file that applies to no live data file.
type deadDelete struct {
	file iceberg.DataFile
	key  string // its partition
	why  string
}

// dropDeadDeletes finishes a delete-triggered compaction: the delete files
// of its delete-triggered partitions that apply to no live data file are
// removed in a metadata-only commit (a rewrite that deletes only delete
// files). Rewriting data cannot remove them: an equality delete whose keys
// lie outside every older file's range, beside a file too large to rewrite,
// is "live" to the partition-wide rule the rewrite's commit uses
// (CollectDeadEqualityDeletes) for ever, and the delete thresholds would
// schedule the same useless compaction every cool-down.
//
// Each attempt decides on the snapshot it commits on: it reloads the
// table, plans it, and commits only if the catalog head is still that
// snapshot (a conflict re-plans).
func (e *Executor) dropDeadDeletes(ctx context.Context, log *slog.Logger, job jobs.Job, res jobs.Result, rep Report) (jobs.Result, Report) {
	parts := map[string]bool{}
	for _, p := range job.Partitions {
		if p.ApplyDeletes {
			parts[p.Key] = true
		}
	}
	if len(parts) == 0 || res.Err != nil || (res.Outcome != jobs.Succeeded && res.Outcome != jobs.Noop) {
		return res, rep
	}
	var dead []deadDelete
	loop := commitLoop{e: e, log: log, job: job, rep: &rep, countCommitsOnly: true}
	committed, err := loop.run(ctx, func(ctx context.Context, tbl *table.Table) (*table.Table, error) {
		dead = nil
		if tbl.CurrentSnapshot() == nil {
			return nil, nil
		}
		fs, err := tbl.FS(ctx)
		if err != nil {
			return nil, fmt.Errorf("open table io: %w", err)
		}
		if dead, err = findDeadDeletes(ctx, fs, tbl, parts); err != nil {
			return nil, err
		}
		if len(dead) == 0 || job.DryRun {
			return nil, nil
		}
		if err := e.checkMetadataLog(tbl); err != nil {
			return nil, err
		}
		txn := tbl.NewTransaction()
		rw := txn.NewRewrite(iceberg.Properties{jobs.SnapshotJobProperty: job.ID})
		for _, d := range dead {
			rw.DeleteFile(d.file)
		}
		if err := rw.Commit(ctx); err != nil {
			return nil, fmt.Errorf("stage removal of dead delete files: %w", err)
		}
		staged := stagedFiles(txn, fs)
		next, err := txn.Commit(ctx)
		if err != nil {
			// The compaction this finishes committed under the same job
			// id: only this commit's own snapshot id tells it landed.
			return nil, lost(err, tbl, fs, staged, bySnapshotID, stagedSnapshotID(txn))
		}
		return next, nil
	})
	if err != nil {
		if res.Outcome == jobs.Succeeded {
			// The rewrite itself committed; the dead deletes wait for the
			// next job.
			log.Warn("could not remove delete files that apply to nothing", "error", err)
			return res, rep
		}
		return retryOutcome(err, loop.n), rep
	}
	if len(dead) == 0 {
		return res, rep
	}
	for _, d := range dead {
		log.Debug("delete file applies to no live data file", "partition", d.key, "delete_file", d.file.FilePath(), "why", d.why)
		delete(res.NothingToDo, d.key)
	}
	rep.RemovedDeleteFiles += len(dead)
	if job.DryRun {
		log.Info("would remove delete files that apply to no live data file", "delete_files", len(dead))
		return res, rep
	}
	rep.Commits++
	rep.CommittedSnapshotID = committed.CurrentSnapshot().SnapshotID
	log.Info("removed delete files that apply to no live data file (metadata only)", "delete_files", len(dead),
		"snapshot_id", rep.CommittedSnapshotID)
	return jobs.Result{Outcome: jobs.Succeeded, Table: committed, NothingToDo: res.NothingToDo}, rep
}

// findDeadDeletes lists the live delete files of the given partitions that
// apply to no live data file of tbl's current snapshot. Two independent
// judgements must agree: scan planning attached the file to no task, and
// its own metadata proves it — every data file it could reach is newer
// than it (sequence numbers), lies outside its file_path bounds, or holds
// no value in the range of one of its equality columns. A delete either
// judgement is unsure about stays.
func findDeadDeletes(ctx context.Context, fs iceio.IO, tbl *table.Table, parts map[string]bool) ([]deadDelete, error) {
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
	var dead []deadDelete
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
				dead = append(dead, deadDelete{file: df, key: key, why: why})
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
