package planner

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/icereactor/reactor/events"
	"github.com/icereactor/reactor/jobs"
	"github.com/icereactor/reactor/location"
	"github.com/icereactor/reactor/tablename"
)

// newIndexedPlanner returns a planner whose location index knows one table,
// s3://b/wh/db/t, and will not rebuild (there is no catalog behind it).
func newIndexedPlanner(t testing.TB) *Planner {
	t.Helper()
	p := New(Options{Dispatch: func(jobs.Job) {}, LocationRebuildInterval: time.Hour, MissRefreshInterval: time.Hour})
	p.locations.set(map[string][]tableLocation{
		"b": {{bucket: "b", prefix: "wh/db/t/", table: tablename.MustParseName("db.t")}},
	})
	p.locations.builtAt = time.Now()
	p.locations.missRefreshAt = time.Now() // refreshed a moment ago: unclaimed objects are held at once
	return p
}

func TestApplyObjectTracking(t *testing.T) {
	ctx := context.Background()
	p := newIndexedPlanner(t)
	t0 := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	obj := func(action events.ObjectAction, key string, at time.Time) events.ObjectEvent {
		return events.ObjectEvent{Action: action, Bucket: "b", Key: key, Size: 10, Time: at}
	}
	steps := []struct {
		name string
		ev   events.ObjectEvent
		want ObjectOutcome
		err  error
	}{
		{"new data file", obj(events.ObjectCreated, "wh/db/t/data/p=1/f1.parquet", t0), ObjectTracked, nil},
		{"duplicate", obj(events.ObjectCreated, "wh/db/t/data/p=1/f1.parquet", t0), ObjectTracked, nil},
		{"manifest is not data", obj(events.ObjectCreated, "wh/db/t/metadata/snap-1.avro", t0), ObjectIgnored, nil},
		{"tagging is not a write", events.ObjectEvent{Action: events.ObjectOther, Bucket: "b", Key: "wh/db/t/data/x", Time: t0}, ObjectIgnored, nil},
		{"removal", obj(events.ObjectRemoved, "wh/db/t/data/p=1/f1.parquet", t0.Add(time.Second)), ObjectRemoved, nil},
		{"stale creation after the removal", obj(events.ObjectCreated, "wh/db/t/data/p=1/f1.parquet", t0), ObjectIgnored, nil},
		{"a new object at the same key", obj(events.ObjectCreated, "wh/db/t/data/p=1/f1.parquet", t0.Add(2*time.Second)), ObjectTracked, nil},
		{"other bucket", obj(events.ObjectCreated, "wh/db/t/data/f.parquet", t0), ObjectOutside, ErrOutsideTables},
		// Beside the table, where the namespace's next table would be: held.
		{"sibling prefix", obj(events.ObjectCreated, "wh/db/t2/data/f.parquet", t0), ObjectHeld, ErrUnclaimed},
		{"outside the namespace", obj(events.ObjectCreated, "elsewhere/t/data/f.parquet", t0), ObjectOutside, ErrOutsideTables},
		// Another spelling of a key: never tracked.
		{"doubled slash", obj(events.ObjectCreated, "wh/db/t/data//p=1/f2.parquet", t0), ObjectRefused, nil},
		{"dot segment", obj(events.ObjectCreated, "wh/db/t/data/./p=1/f2.parquet", t0), ObjectRefused, nil},
		{"directory marker", obj(events.ObjectCreated, "wh/db/t/data/p=1/", t0), ObjectIgnored, nil},
	}
	steps[7].ev.Bucket = "other"
	for _, s := range steps {
		got, err := p.ApplyObject(ctx, s.ev)
		if got != s.want || !errors.Is(err, s.err) {
			t.Errorf("%s: ApplyObject = %q, %v; want %q, %v", s.name, got, err, s.want, s.err)
		}
	}
	st := p.tables["db.t"]
	if len(st.unconfirmed) != 1 {
		t.Errorf("tracking %d files, want 1", len(st.unconfirmed))
	}
	// A snapshot that references the file confirms it.
	st.confirmLocked([]string{"s3a://b/wh/db/t/data/p=1/f1.parquet"})
	if len(st.unconfirmed) != 0 {
		t.Errorf("s3a:// path did not confirm the s3:// tracked file")
	}
}

// A notification's eventTime only nominates: a missing or future one never
// postpones a file (it is tracked from its arrival), an old one nominates
// it at once, and a deferral moves it to the store's LastModified.
func TestTrackedEventTimes(t *testing.T) {
	ctx := context.Background()
	p := newIndexedPlanner(t)
	before := time.Now()
	for key, at := range map[string]time.Time{
		"wh/db/t/data/future.parquet": before.Add(1000 * time.Hour),
		"wh/db/t/data/zero.parquet":   {},
		"wh/db/t/data/old.parquet":    before.Add(-1000 * time.Hour),
	} {
		if got, err := p.ApplyObject(ctx, events.ObjectEvent{Action: events.ObjectCreated, Bucket: "b", Key: key, Time: at}); got != ObjectTracked || err != nil {
			t.Fatalf("%s: %q, %v", key, got, err)
		}
	}
	st := p.tables["db.t"]
	created := func(key string) time.Time { return st.unconfirmed[location.Identity("s3://b/"+key)].created }
	for _, key := range []string{"wh/db/t/data/future.parquet", "wh/db/t/data/zero.parquet"} {
		if c := created(key); c.Before(before) || c.After(time.Now()) {
			t.Errorf("%s tracked from %v, want its arrival", key, c)
		}
	}
	modified := time.Now().Add(-time.Minute)
	p.deferOrphansLocked(st, map[string]time.Time{"s3://b/wh/db/t/data/old.parquet": modified})
	if c := created("wh/db/t/data/old.parquet"); !c.Equal(modified) {
		t.Errorf("deferred file tracked from %v, want the store's %v", c, modified)
	}
}

func TestTrackingIsBounded(t *testing.T) {
	ctx := context.Background()
	p := newIndexedPlanner(t)
	for i := range MaxUnconfirmedPerTable {
		if _, err := p.ApplyObject(ctx, events.ObjectEvent{Action: events.ObjectCreated, Bucket: "b",
			Key: fmt.Sprintf("wh/db/t/data/f%d.parquet", i)}); err != nil {
			t.Fatal(err)
		}
	}
	got, err := p.ApplyObject(ctx, events.ObjectEvent{Action: events.ObjectCreated, Bucket: "b", Key: "wh/db/t/data/one-too-many.parquet"})
	if got != ObjectUntrackable || err != nil {
		t.Fatalf("past the bound: %q, %v", got, err)
	}
	st := p.tables["db.t"]
	if !st.trackingIncomplete || len(st.unconfirmed) != MaxUnconfirmedPerTable {
		t.Errorf("incomplete=%v tracked=%d", st.trackingIncomplete, len(st.unconfirmed))
	}
}

// BenchmarkApplyObject: route a data-file notification to its table and
// track it (the 90 % case of a lake's notifications; a metadata file costs
// an event-path update, see BenchmarkEventPath). Reports the memory each
// tracked file holds.
func BenchmarkApplyObject(b *testing.B) {
	ctx := context.Background()
	p := newIndexedPlanner(b)
	keys := make([]string, 100_000)
	for i := range keys {
		keys[i] = fmt.Sprintf("wh/db/t/data/category=c%03d/00000-%d-6f1c0a52-8a4e-4bd1-b1c2-%012d-00001.parquet", i%100, i, i)
	}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		if _, err := p.ApplyObject(ctx, events.ObjectEvent{Action: events.ObjectCreated, Bucket: "b", Key: keys[i%len(keys)], Size: 1 << 20}); err != nil {
			b.Fatal(err)
		}
		i++
	}
	b.StopTimer()
	// What tracking retains: the heap with the tracked set, minus the heap
	// once it is dropped.
	var with, without runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&with)
	st := p.tables["db.t"]
	tracked := len(st.unconfirmed)
	st.unconfirmed = nil
	runtime.GC()
	runtime.ReadMemStats(&without)
	b.ReportMetric(float64(with.HeapAlloc-without.HeapAlloc)/float64(tracked), "heap-B/tracked-file")
	b.ReportMetric(float64(tracked), "tracked-files")
}
