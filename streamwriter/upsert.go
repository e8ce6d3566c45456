package streamwriter

import (
	"context"
	"errors"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
	"github.com/cenkalti/backoff/v4"
)

// Upsert commits rows rows to partition category the way a Flink upsert
// sink or a Kafka Connect CDC writer does: up to updates of them replace
// live rows of the partition (an equality delete of their ids and the
// rows again, with the same ids), the rest are new ids, all in one row
// delta. The equality delete has the snapshot's sequence number, so it
// deletes the older copies and not the rows appended beside it. Conflicts
// are retried like commits. It returns the snapshot id.
func (w *Writer) Upsert(ctx context.Context, category string, rows, updates int) (int64, error) {
	if rows < 1 || updates < 0 || updates > rows {
		return 0, fmt.Errorf("streamwriter: upsert: need rows >= 1 and 0 <= updates <= rows, got %d and %d", rows, updates)
	}
	w.mu.Lock()
	if w.live == nil {
		w.mu.Unlock()
		return 0, errors.New("streamwriter: upsert: an append-only writer keeps no ids to update")
	}
	var keys []int64
	for id, c := range w.live { // map order: random keys
		if len(keys) == updates {
			break
		}
		if c == category {
			keys = append(keys, id)
		}
	}
	first := w.nextID
	fresh := rows - len(keys)
	w.nextID += int64(fresh)
	w.mu.Unlock()
	ids := append(keys[:len(keys):len(keys)], make([]int64, 0, fresh)...)
	for id := first; id < first+int64(fresh); id++ {
		ids = append(ids, id)
	}

	var committed *table.Table
	op := func() error {
		tbl, err := w.cat.LoadTable(ctx, w.ident)
		if err != nil {
			return w.loadError(err)
		}
		txn := tbl.NewTransaction()
		delta := txn.NewRowDelta(nil)
		if len(keys) > 0 {
			byID := make(map[int64]string, len(keys))
			for _, id := range keys {
				byID[id] = category
			}
			rec, err := keyRecord(tbl, keys, byID)
			if err != nil {
				return backoff.Permanent(err)
			}
			idField, _ := tbl.Schema().FindFieldByName("id")
			deletes, err := txn.WriteEqualityDeletes(ctx, []int{idField.ID}, func(yield func(arrow.RecordBatch, error) bool) {
				yield(rec, nil)
			})
			rec.Release()
			if err != nil {
				return backoff.Permanent(fmt.Errorf("write equality deletes: %w", err))
			}
			delta.AddDeletes(deletes...)
		}
		data, err := dataFilesFor(ctx, tbl, category, ids)
		if err != nil {
			return backoff.Permanent(err)
		}
		if err := delta.AddRows(data...).Commit(ctx); err != nil {
			return w.commitError(err, "stage upsert in")
		}
		committed, err = txn.Commit(ctx)
		return w.commitError(err, "commit upsert to")
	}
	if err := retry(ctx, op); err != nil {
		return 0, fmt.Errorf("streamwriter: %w", err)
	}
	snap := committed.CurrentSnapshot()
	added, files := addedFiles(snap)
	w.mu.Lock()
	w.bytes += added
	w.files += files
	for id := first; id < first+int64(fresh); id++ {
		w.written.Add(id, category, Payload(id))
		w.live[id] = category
	}
	// The updated rows are the same rows again: the tally does not move.
	w.commits++
	w.mu.Unlock()
	return snap.SnapshotID, w.announceAt(ctx, snap.SnapshotID, committed.MetadataLocation(), "overwrite", category)
}

// dataFilesFor writes the rows with ids to partition category as Parquet
// data files of tbl (not committed).
func dataFilesFor(ctx context.Context, tbl *table.Table, category string, ids []int64) ([]iceberg.DataFile, error) {
	sc, err := table.SchemaToArrowSchema(tbl.Schema(), nil, false, false)
	if err != nil {
		return nil, fmt.Errorf("arrow schema: %w", err)
	}
	b := array.NewRecordBuilder(memory.DefaultAllocator, sc)
	for _, id := range ids {
		b.Field(0).(*array.Int64Builder).Append(id)
		b.Field(1).(*array.StringBuilder).Append(category)
		b.Field(2).(*array.StringBuilder).Append(Payload(id))
	}
	rec := b.NewRecordBatch()
	b.Release()
	var files []iceberg.DataFile
	for f, err := range table.WriteRecords(ctx, tbl, sc, func(yield func(arrow.RecordBatch, error) bool) { yield(rec, nil) }) {
		if err != nil {
			return nil, fmt.Errorf("write data files: %w", err)
		}
		files = append(files, f)
	}
	return files, nil
}
