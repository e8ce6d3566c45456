package streamwriter

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"
	"github.com/cenkalti/backoff/v4"

	"github.com/icereactor/reactor/conflict"
	"github.com/icereactor/reactor/events"
)

// Publisher receives the commit event of every successful commit.
type Publisher func(ctx context.Context, ev events.CommitEvent) error

// Writer appends rows to one table. It is safe for concurrent use; ids are
// unique across all its commits.
type Writer struct {
	cat     catalog.Catalog
	ident   table.Identifier
	publish Publisher

	mu      sync.Mutex
	nextID  int64
	written Tally
	// live maps the id of every row not yet deleted to its partition, so
	// deletes can take their rows out of the tally.
	live      map[int64]string
	commits   int
	conflicts int
	// files and bytes count the data files the writer committed, from its
	// snapshots' added-data-files and added-files-size.
	files int
	bytes int64
}

// New returns a writer for the table ident. publish may be nil. It
// remembers every live row's id so DeleteRows and DeleteKeys can keep the
// tally exact: for tests and demos, not for writing forever (AppendOnly).
func New(cat catalog.Catalog, ident table.Identifier, publish Publisher) *Writer {
	return &Writer{cat: cat, ident: ident, publish: publish, nextID: 1, live: map[int64]string{}}
}

// AppendOnly returns a writer that only appends and keeps constant memory
// however long it runs (the tally, not the ids); its deletes are no-ops.
func AppendOnly(cat catalog.Catalog, ident table.Identifier, publish Publisher) *Writer {
	return &Writer{cat: cat, ident: ident, publish: publish, nextID: 1}
}

// Payload is the deterministic payload of row id.
func Payload(id int64) string {
	return fmt.Sprintf("row-%010d-%s", id, strings.Repeat("x", int(id%64)+32))
}

// Commit appends rows new rows to partition category in one snapshot, then
// publishes its commit event. A commit that loses a race with another
// writer (or with reactor) is retried against the refreshed table, as a real
// streaming writer does. It returns the committed snapshot id.
func (w *Writer) Commit(ctx context.Context, category string, rows int) (int64, error) {
	w.mu.Lock()
	first := w.nextID
	w.nextID += int64(rows)
	w.mu.Unlock()

	var committed *table.Table
	op := func() error {
		tbl, err := w.cat.LoadTable(ctx, w.ident)
		if err != nil {
			return w.loadError(err)
		}
		rdr, err := records(tbl, category, first, rows)
		if err != nil {
			return backoff.Permanent(err)
		}
		defer rdr.Release()
		committed, err = tbl.Append(ctx, rdr, nil)
		return w.commitError(err, "append to")
	}
	if err := retry(ctx, op); err != nil {
		return 0, fmt.Errorf("streamwriter: %w", err)
	}

	snap := committed.CurrentSnapshot()
	added, files := addedFiles(snap)
	w.mu.Lock()
	w.bytes += added
	w.files += files
	for id := first; id < first+int64(rows); id++ {
		w.written.Add(id, category, Payload(id))
		if w.live != nil {
			w.live[id] = category
		}
	}
	w.commits++
	w.mu.Unlock()

	if err := w.announceAt(ctx, snap.SnapshotID, committed.MetadataLocation(), "append", category); err != nil {
		return snap.SnapshotID, err
	}
	return snap.SnapshotID, nil
}

// loadError classifies a failed table load: lock contention is retried,
// anything else ends the commit.
func (w *Writer) loadError(err error) error {
	if conflict.IsTransient(err) {
		return err
	}
	return backoff.Permanent(fmt.Errorf("load %v: %w", w.ident, err))
}

// commitError classifies a commit's error: a lost race (counted) and lock
// contention are retried, anything else ends the commit.
func (w *Writer) commitError(err error, what string) error {
	switch {
	case err == nil:
		return nil
	case conflict.Is(err):
		w.mu.Lock()
		w.conflicts++
		w.mu.Unlock()
		return err
	case conflict.IsTransient(err):
		return err
	}
	return backoff.Permanent(fmt.Errorf("%s %v: %w", what, w.ident, err))
}

// retry runs a commit the way a streaming writer does: conflicts and lock
// contention are retried against the refreshed table for up to a minute.
func retry(ctx context.Context, op func() error) error {
	bo := backoff.NewExponentialBackOff()
	bo.InitialInterval = 5 * time.Millisecond
	bo.MaxInterval = 200 * time.Millisecond
	bo.MaxElapsedTime = time.Minute
	return backoff.Retry(op, backoff.WithContext(bo, ctx))
}

// announce publishes the commit event of a snapshot the writer committed.
func (w *Writer) announce(ctx context.Context, snapshotID int64, operation string, categories ...string) error {
	return w.announceAt(ctx, snapshotID, "", operation, categories...)
}

// announceAt is announce naming the metadata file the commit wrote (the
// event's optional metadata_location), when known.
func (w *Writer) announceAt(ctx context.Context, snapshotID int64, metadataLocation, operation string, categories ...string) error {
	if w.publish == nil {
		return nil
	}
	parts := make([]string, len(categories))
	for i, c := range categories {
		parts[i] = "category=" + c
	}
	ev := events.CommitEvent{
		Namespace:  strings.Join(catalog.NamespaceFromIdent(w.ident), "."),
		Table:      catalog.TableNameFromIdent(w.ident),
		SnapshotID: snapshotID,
		Operation:  operation,
		Partitions: parts,

		MetadataLocation: metadataLocation,
	}
	if err := w.publish(ctx, ev); err != nil {
		return fmt.Errorf("streamwriter: publish commit event: %w", err)
	}
	return nil
}

// Written is the tally of every row committed so far.
func (w *Writer) Written() Tally {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.written
}

// WrittenBytes is the total size of the data files the writer committed:
// what write amplification is measured against.
func (w *Writer) WrittenBytes() int64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.bytes
}

// WrittenFiles is the number of data files the writer committed.
func (w *Writer) WrittenFiles() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.files
}

// Stats reports the writer's commits and the conflicts it retried.
func (w *Writer) Stats() (commits, conflicts int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.commits, w.conflicts
}

func records(tbl *table.Table, category string, first int64, rows int) (array.RecordReader, error) {
	sc, err := table.SchemaToArrowSchema(tbl.Schema(), nil, false, false)
	if err != nil {
		return nil, fmt.Errorf("arrow schema: %w", err)
	}
	b := array.NewRecordBuilder(memory.DefaultAllocator, sc)
	defer b.Release()
	for id := first; id < first+int64(rows); id++ {
		b.Field(0).(*array.Int64Builder).Append(id)
		b.Field(1).(*array.StringBuilder).Append(category)
		b.Field(2).(*array.StringBuilder).Append(Payload(id))
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	return array.NewRecordReader(sc, []arrow.RecordBatch{rec})
}

// addedFiles is the bytes and data files snap's summary says it added. A
// missing or malformed figure leaves the count short, never the rows:
// these are statistics for benchmarks and the demo.
func addedFiles(snap *table.Snapshot) (bytes int64, files int) {
	if snap.Summary == nil {
		return 0, 0
	}
	bytes, _ = strconv.ParseInt(snap.Summary.Properties["added-files-size"], 10, 64)
	files, _ = strconv.Atoi(snap.Summary.Properties["added-data-files"])
	return bytes, files
}
