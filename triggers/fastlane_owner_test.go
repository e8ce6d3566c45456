package triggers

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/iceberg-go/table"

	"github.com/icereactor/reactor/embedded/embeddedtest"
	"github.com/icereactor/reactor/events"
	"github.com/icereactor/reactor/metrics"
	"github.com/icereactor/reactor/tablename"
)

// hotApplier: every table is hot and nothing is covered; refreshes are
// counted.
type hotApplier struct{ refreshes atomic.Int64 }

func (a *hotApplier) Refresh(context.Context, tablename.Name) (*table.Table, error) {
	a.refreshes.Add(1)
	return nil, nil
}
func (a *hotApplier) CheckCommit(events.CommitEvent) error  { return nil }
func (a *hotApplier) CommitCovered(events.CommitEvent) bool { return false }
func (a *hotApplier) NearThreshold(string) bool             { return true }

// switchedOwner owns every table until moved.
type switchedOwner struct {
	mu    sync.Mutex
	owned bool
}

func (o *switchedOwner) Owns(string) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.owned
}
func (o *switchedOwner) ShardOf(string) int { return 0 }
func (o *switchedOwner) CommitDeadline(string) (time.Time, error) {
	panic("the triggers never commit")
}

func (o *switchedOwner) set(owned bool) {
	o.mu.Lock()
	o.owned = owned
	o.mu.Unlock()
}

// On replicas only the owner looks: a lane opens for an owned hot table
// and asks for a refresh per event; once the table's shard moved away the
// next event refreshes nothing here and closes the lane (the new owner
// applies it from its shard stream).
func TestFastLaneFollowsOwnership(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	_, nc, js := embeddedtest.JetStream(t, "")
	a := &hotApplier{}
	own := &switchedOwner{owned: true}
	log := slog.New(slog.DiscardHandler)
	c := &CommitConsumer{js: js, opts: CommitOptions{Subject: DefaultCommitSubject}, applier: a, log: log, met: metrics.New(),
		ctx: ctx, own: own}
	c.refreshes = NewCoalescer(ctx, a, 1, 0, log, c.met)
	defer c.refreshes.Close()
	c.lane = newFastLane(c, nc, 0)
	if c.lane == nil {
		t.Fatal("no fast lane for an applier that tells hot tables")
	}
	defer c.lane.close()

	c.lane.follow("db.t")
	if n := c.lane.lanes(); n != 1 {
		t.Fatalf("%d lanes for an owned hot table, want 1", n)
	}
	publish := func(snapshot int64) {
		data, err := events.CommitEvent{Namespace: "db", Table: "t", SnapshotID: snapshot}.Encode()
		if err != nil {
			t.Fatal(err)
		}
		if err := nc.Publish("iceberg.commits.db.t", data); err != nil {
			t.Fatal(err)
		}
		if err := nc.Flush(); err != nil {
			t.Fatal(err)
		}
	}
	publish(1)
	for deadline := time.Now().Add(time.Minute); a.refreshes.Load() < 1; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the owner's lane asked for no refresh")
		}
	}

	own.set(false)
	publish(2)
	for deadline := time.Now().Add(time.Minute); c.lane.lanes() != 0; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the lane stayed open after the table's shard moved away")
		}
	}
	if n := a.refreshes.Load(); n != 1 {
		t.Errorf("%d refreshes, want 1: a table owned elsewhere is not refreshed here", n)
	}
	c.lane.follow("db.t")
	if n := c.lane.lanes(); n != 0 {
		t.Errorf("%d lanes for a hot table owned elsewhere, want 0", n)
	}
}
