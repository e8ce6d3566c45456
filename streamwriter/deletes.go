package streamwriter

import (
	"context"
	"fmt"
	"slices"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
	"github.com/cenkalti/backoff/v4"
)

// MergeOnReadProperties make a table's deletes, updates and merges write
// delete files instead of rewriting data files, as CDC pipelines configure
// their tables.
var MergeOnReadProperties = iceberg.Properties{
	table.WriteDeleteModeKey: table.WriteModeMergeOnRead,
	"write.update.mode":      table.WriteModeMergeOnRead,
	"write.merge.mode":       table.WriteModeMergeOnRead,
}

// DeleteRows deletes the rows with the given ids in one snapshot, the way
// the table's write.delete.mode says (merge-on-read: position-delete files,
// one per partition touched). Conflicts are retried like commits. Ids that
// were never written or are already deleted are ignored. It returns the
// snapshot id, or 0 when no id was live.
func (w *Writer) DeleteRows(ctx context.Context, ids ...int64) (int64, error) {
	live, cats := w.liveIDs(ids)
	if len(live) == 0 {
		return 0, nil
	}
	values := make([]int64, len(live))
	copy(values, live)
	var committed *table.Table
	op := func() error {
		tbl, err := w.cat.LoadTable(ctx, w.ident)
		if err != nil {
			return w.loadError(err)
		}
		txn := tbl.NewTransaction()
		if err := txn.Delete(ctx, iceberg.IsIn(iceberg.Reference("id"), values...), nil); err != nil {
			return w.commitError(err, "delete from")
		}
		committed, err = txn.Commit(ctx)
		return w.commitError(err, "delete from")
	}
	if err := retry(ctx, op); err != nil {
		return 0, fmt.Errorf("streamwriter: %w", err)
	}
	w.forget(live)
	snap := committed.CurrentSnapshot().SnapshotID
	return snap, w.announce(ctx, snap, "delete", cats...)
}

// DeleteKeys deletes the rows with the given ids by equality deletes on
// the id column (CDC style: the writer does not know where the rows are),
// in one snapshot through a row delta. It returns the snapshot id, or 0
// when no id was live.
func (w *Writer) DeleteKeys(ctx context.Context, ids ...int64) (int64, error) {
	live, cats := w.liveIDs(ids)
	if len(live) == 0 {
		return 0, nil
	}
	w.mu.Lock()
	byID := make(map[int64]string, len(live))
	for _, id := range live {
		byID[id] = w.live[id]
	}
	w.mu.Unlock()
	committed, err := w.commitEqualityDeletes(ctx, live, byID)
	if err != nil {
		return 0, err
	}
	w.forget(live)
	snap := committed.CurrentSnapshot().SnapshotID
	return snap, w.announce(ctx, snap, "delete", cats...)
}

// DeleteKeysIn commits equality deletes on the id column for ids in
// partition category whether or not such rows exist, as a CDC pipeline
// does when it forwards a delete for a key the table never received (or
// already lost). Live ids of that partition leave the tally. It returns
// the snapshot id.
func (w *Writer) DeleteKeysIn(ctx context.Context, category string, ids ...int64) (int64, error) {
	if len(ids) == 0 {
		return 0, nil
	}
	ids = slices.Clone(ids)
	slices.Sort(ids)
	ids = slices.Compact(ids)
	byID := make(map[int64]string, len(ids))
	for _, id := range ids {
		byID[id] = category
	}
	committed, err := w.commitEqualityDeletes(ctx, ids, byID)
	if err != nil {
		return 0, err
	}
	w.mu.Lock()
	var live []int64
	for _, id := range ids {
		if c, ok := w.live[id]; ok && c == category {
			live = append(live, id)
		}
	}
	w.mu.Unlock()
	w.forget(live)
	snap := committed.CurrentSnapshot().SnapshotID
	return snap, w.announce(ctx, snap, "delete", category)
}

// commitEqualityDeletes commits equality deletes on the id column for ids
// (category[id] their partition) in one row delta, retrying conflicts.
func (w *Writer) commitEqualityDeletes(ctx context.Context, ids []int64, category map[int64]string) (*table.Table, error) {
	var committed *table.Table
	op := func() error {
		tbl, err := w.cat.LoadTable(ctx, w.ident)
		if err != nil {
			return w.loadError(err)
		}
		rec, err := keyRecord(tbl, ids, category)
		if err != nil {
			return backoff.Permanent(err)
		}
		defer rec.Release()
		txn := tbl.NewTransaction()
		idField, _ := tbl.Schema().FindFieldByName("id")
		files, err := txn.WriteEqualityDeletes(ctx, []int{idField.ID}, func(yield func(arrow.RecordBatch, error) bool) {
			yield(rec, nil)
		})
		if err != nil {
			return backoff.Permanent(fmt.Errorf("write equality deletes: %w", err))
		}
		if err := txn.NewRowDelta(nil).AddDeletes(files...).Commit(ctx); err != nil {
			return w.commitError(err, "stage equality deletes in")
		}
		committed, err = txn.Commit(ctx)
		return w.commitError(err, "commit equality deletes to")
	}
	if err := retry(ctx, op); err != nil {
		return nil, fmt.Errorf("streamwriter: %w", err)
	}
	return committed, nil
}

// keyRecord holds the equality-delete rows: the id and, because the table
// is partitioned by it, the category of each row.
func keyRecord(tbl *table.Table, ids []int64, category map[int64]string) (arrow.RecordBatch, error) {
	idField, _ := tbl.Schema().FindFieldByName("id")
	catField, _ := tbl.Schema().FindFieldByName("category")
	sc, err := table.SchemaToArrowSchema(iceberg.NewSchema(0, idField, catField), nil, true, false)
	if err != nil {
		return nil, fmt.Errorf("arrow schema: %w", err)
	}
	b := array.NewRecordBuilder(memory.DefaultAllocator, sc)
	defer b.Release()
	for _, id := range ids {
		b.Field(0).(*array.Int64Builder).Append(id)
		b.Field(1).(*array.StringBuilder).Append(category[id])
	}
	return b.NewRecordBatch(), nil
}

// liveIDs returns the ids that are live, sorted, and their partitions.
func (w *Writer) liveIDs(ids []int64) ([]int64, []string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	var live []int64
	var cats []string
	for _, id := range ids {
		c, ok := w.live[id]
		if !ok || slices.Contains(live, id) {
			continue
		}
		live = append(live, id)
		if !slices.Contains(cats, c) {
			cats = append(cats, c)
		}
	}
	slices.Sort(live)
	slices.Sort(cats)
	return live, cats
}

// forget takes deleted rows out of the tally.
func (w *Writer) forget(ids []int64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, id := range ids {
		w.written.Remove(id, w.live[id], Payload(id))
		delete(w.live, id)
	}
	w.commits++
}

// LiveIDs returns the ids of every row written and not deleted, sorted.
func (w *Writer) LiveIDs() []int64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	ids := make([]int64, 0, len(w.live))
	for id := range w.live {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}
