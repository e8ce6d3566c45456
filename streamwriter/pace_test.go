package streamwriter

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/apache/iceberg-go/table"

	"github.com/icereactor/reactor/embedded"
	"github.com/icereactor/reactor/events"
)

// Pace stops at its commit count or its duration, hands each commit its
// index, publishes every commit's event, and counts what it wrote.
func TestPace(t *testing.T) {
	ctx := t.Context()
	cat, err := embedded.OpenCatalog(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	ident := table.Identifier{"db", "t"}
	if _, err := CreateTable(ctx, cat, ident, nil); err != nil {
		t.Fatal(err)
	}
	var (
		mu        sync.Mutex
		published []int64
		seqs      = map[int]string{}
	)
	w := New(cat, ident, func(_ context.Context, ev events.CommitEvent) error {
		mu.Lock()
		defer mu.Unlock()
		published = append(published, ev.SnapshotID)
		return nil
	})
	part := func(i int) string { return fmt.Sprintf("p%d", i%3) }
	onCommit := func(c Committed) {
		mu.Lock()
		defer mu.Unlock()
		seqs[c.Seq] = c.Partition
		if c.Took <= 0 || c.SnapshotID == 0 {
			t.Errorf("commit %+v", c)
		}
	}

	stats, err := w.Pace(ctx, PaceOptions{Rate: 1000, Commits: 7, Rows: 3, Concurrency: 2, Partition: part, OnCommit: onCommit})
	if err != nil || stats.Commits != 7 {
		t.Fatalf("by count: %+v, %v", stats, err)
	}
	for i := range 7 {
		if seqs[i] != part(i) {
			t.Errorf("commit %d went to %q, want %q", i, seqs[i], part(i))
		}
	}
	// A duration bounds the commits to ceil(rate * duration), however fast
	// they are.
	stats, err = w.Pace(ctx, PaceOptions{Rate: 10, Duration: 250 * time.Millisecond, Rows: 3, Partition: part})
	if err != nil || stats.Commits > 3 || stats.Commits < 1 {
		t.Fatalf("by duration: %+v, %v", stats, err)
	}
	total := 7 + stats.Commits
	if commits, _ := w.Stats(); commits != total || len(published) != total {
		t.Errorf("%d commits, %d events, want %d", commits, len(published), total)
	}
	if w.Written().Rows != int64(3*total) || w.WrittenFiles() != total || w.WrittenBytes() <= 0 {
		t.Errorf("written %s, %d files, %d bytes", w.Written(), w.WrittenFiles(), w.WrittenBytes())
	}

	if _, err := w.Pace(ctx, PaceOptions{Rate: 0, Rows: 1, Partition: part}); err == nil {
		t.Error("a zero rate should be refused")
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := w.Pace(cancelled, PaceOptions{Rate: 10, Rows: 1, Partition: part}); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: %v", err)
	}
}
