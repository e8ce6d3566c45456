package triggers_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/icereactor/reactor/embedded"
	"github.com/icereactor/reactor/embedded/embeddedtest"
	"github.com/icereactor/reactor/events"
	"github.com/icereactor/reactor/streamwriter"
)

// lake is a catalog of many tables for the scale benchmarks: tables of
// snapshots each, in the embedded SQLite catalog, built once under the
// system's temporary directory and reused by later runs (it takes about a
// minute per 1,000 tables on the reference machine; the benchmarks only
// read it). The snapshots are single-file fast appends of fabricated 1 MiB
// entries over 8 partitions: the planner reads manifests only.
type lake struct {
	dir    string
	cat    catalog.Catalog
	tables []table.Identifier
	// snapshots holds each table's snapshot ids, oldest first.
	snapshots [][]int64
}

func openLake(b *testing.B, tables, snapshots int) *lake {
	b.Helper()
	ctx := context.Background()
	dir := filepath.Join(os.TempDir(), fmt.Sprintf("reactor-bench-lake-%dx%d", tables, snapshots))
	l := &lake{dir: dir}
	done := filepath.Join(dir, "complete")
	if _, err := os.Stat(done); errors.Is(err, os.ErrNotExist) {
		_ = os.RemoveAll(dir)
		b.Logf("building %d tables of %d snapshots under %s (reused by later runs)", tables, snapshots, dir)
	}
	var err error
	if l.cat, err = embedded.OpenCatalog(ctx, filepath.Join(dir, "catalog")); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = l.cat.(io.Closer).Close() })
	_, statErr := os.Stat(done)
	start := time.Now()
	for i := range tables {
		ident := table.Identifier{"lake", fmt.Sprintf("t%05d", i)}
		l.tables = append(l.tables, ident)
		var tbl *table.Table
		if statErr == nil {
			tbl, err = l.cat.LoadTable(ctx, ident)
		} else {
			tbl, err = l.build(ctx, ident, snapshots)
		}
		if err != nil {
			b.Fatal(err)
		}
		snaps := tbl.Metadata().Snapshots()
		ids := make([]int64, len(snaps))
		for j, s := range snaps {
			ids[j] = s.SnapshotID
		}
		l.snapshots = append(l.snapshots, ids)
		if statErr != nil && (i+1)%200 == 0 {
			b.Logf("built %d tables in %s", i+1, time.Since(start).Round(time.Second))
		}
	}
	if statErr != nil {
		if err := os.WriteFile(done, nil, 0o644); err != nil {
			b.Fatal(err)
		}
	}
	return l
}

func (l *lake) build(ctx context.Context, ident table.Identifier, snapshots int) (*table.Table, error) {
	tbl, err := streamwriter.CreateTable(ctx, l.cat, ident, nil)
	if err != nil {
		return nil, err
	}
	txn := tbl.NewTransaction()
	for i := range snapshots {
		part := fmt.Sprintf("p%d", i%8)
		df, err := iceberg.NewDataFileBuilder(tbl.Spec(), iceberg.EntryContentData,
			fmt.Sprintf("%s/data/category=%s/bench-%06d.parquet", tbl.Location(), part, i),
			iceberg.ParquetFile, map[int]any{1000: part}, nil, nil, 100, 1<<20)
		if err != nil {
			return nil, err
		}
		if err := txn.AddDataFiles(ctx, []iceberg.DataFile{df.Build()}, nil, table.WithoutDuplicateCheck()); err != nil {
			return nil, err
		}
	}
	return txn.Commit(ctx)
}

// eventsFor renders n commit events for table i, cycling over its
// snapshots (newest last).
func (l *lake) eventsFor(b *testing.B, i, n int) [][]byte {
	b.Helper()
	ident := l.tables[i]
	out := make([][]byte, n)
	for k := range out {
		ids := l.snapshots[i]
		ev := events.CommitEvent{Namespace: ident[0], Table: ident[1], SnapshotID: ids[k%len(ids)], Operation: "append"}
		data, err := ev.Encode()
		if err != nil {
			b.Fatal(err)
		}
		out[k] = data
	}
	return out
}

// publishAll publishes the payloads (subject per table) asynchronously and
// waits until JetStream stored every one.
func publishAll(b *testing.B, ctx context.Context, js jetstream.JetStream, subjects []string, payloads [][]byte) {
	b.Helper()
	for i, p := range payloads {
		for {
			_, err := js.PublishAsync(subjects[i], p)
			if err == nil {
				break
			}
			// A loaded machine acknowledges slower than the window
			// allows: wait for the outstanding ones and go on.
			if !errors.Is(err, jetstream.ErrTooManyStalledMsgs) {
				b.Fatal(err)
			}
			select {
			case <-js.PublishAsyncComplete():
			case <-time.After(5 * time.Minute):
				b.Fatal("the outstanding publishes did not complete")
			}
		}
	}
	select {
	case <-js.PublishAsyncComplete():
	case <-time.After(5 * time.Minute):
		b.Fatal("publishing did not complete")
	case <-ctx.Done():
		b.Fatal(ctx.Err())
	}
}

// benchNATS is an embedded NATS server with JetStream and a connection.
func benchNATS(b *testing.B) (jetstream.JetStream, *nats.Conn) {
	b.Helper()
	_, nc, js := embeddedtest.JetStream(b, "", jetstream.WithPublishAsyncMaxPending(4096))
	return js, nc
}

// streamEmpty reports whether the stream holds no message (work-queue
// retention: every event was acknowledged).
func streamEmpty(b *testing.B, ctx context.Context, js jetstream.JetStream, name string) bool {
	s, err := js.Stream(ctx, name)
	if err != nil {
		b.Fatal(err)
	}
	info, err := s.Info(ctx)
	if err != nil {
		b.Fatal(err)
	}
	return info.State.Msgs == 0
}
