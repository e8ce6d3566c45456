package planner

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"

	"github.com/icereactor/reactor/deletions"
	"github.com/icereactor/reactor/embedded"
	"github.com/icereactor/reactor/events"
	"github.com/icereactor/reactor/jobkind"
	"github.com/icereactor/reactor/jobs"
	"github.com/icereactor/reactor/streamwriter"
	"github.com/icereactor/reactor/thresholds"
)

// schedFixture drives the planner's scheduling decisions with a settable
// clock. Durations are hours so the planner's real wake-up timers never
// fire during a test; the clock jumps instead.
type schedFixture struct {
	t      *testing.T
	ctx    context.Context
	cat    catalog.Catalog
	writer *streamwriter.Writer
	p      *Planner
	mu     sync.Mutex
	now    time.Time
	jobs   []jobs.Job
}

func newSchedFixture(t *testing.T, yaml string) *schedFixture {
	t.Helper()
	ctx := t.Context()
	cat, err := embedded.OpenCatalog(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	ident := table.Identifier{"db", "t"}
	if _, err := streamwriter.CreateTable(ctx, cat, ident, nil); err != nil {
		t.Fatal(err)
	}
	cfg, err := thresholds.Parse([]byte(yaml))
	if err != nil {
		t.Fatal(err)
	}
	f := &schedFixture{t: t, ctx: ctx, cat: cat, writer: streamwriter.New(cat, ident, nil), now: time.Now()}
	f.p = New(Options{
		Catalog: cat,
		Config:  cfg,
		Now: func() time.Time {
			f.mu.Lock()
			defer f.mu.Unlock()
			return f.now
		},
		Dispatch: func(j jobs.Job) {
			f.mu.Lock()
			defer f.mu.Unlock()
			f.jobs = append(f.jobs, j)
		},
	})
	t.Cleanup(f.p.Close)
	return f
}

func (f *schedFixture) commit(category string, n int) {
	f.t.Helper()
	for range n {
		if _, err := f.writer.Commit(f.ctx, category, 3); err != nil {
			f.t.Fatal(err)
		}
	}
}

// at sets the clock to the newest commit's time plus d and re-evaluates.
func (f *schedFixture) at(d time.Duration) {
	f.t.Helper()
	tbl, err := f.cat.LoadTable(f.ctx, table.Identifier{"db", "t"})
	if err != nil {
		f.t.Fatal(err)
	}
	f.mu.Lock()
	f.now = time.UnixMilli(tbl.CurrentSnapshot().TimestampMs).Add(d)
	f.mu.Unlock()
	if err := f.p.Apply(f.ctx, events.CommitEvent{Namespace: "db", Table: "t", SnapshotID: tbl.CurrentSnapshot().SnapshotID}); err != nil {
		f.t.Fatal(err)
	}
	// Apply skips snapshots it has already applied; re-evaluate explicitly.
	if err := f.p.Observe(f.ctx, tbl); err != nil {
		f.t.Fatal(err)
	}
}

// expire expires every snapshot but the current one, as a committed
// expiry would, and returns the table.
func (f *schedFixture) expire() *table.Table {
	f.t.Helper()
	tbl, err := f.cat.LoadTable(f.ctx, table.Identifier{"db", "t"})
	if err != nil {
		f.t.Fatal(err)
	}
	txn := tbl.NewTransaction()
	if err := txn.ExpireSnapshots(table.WithOlderThan(0), table.WithRetainLast(1), table.WithPostCommit(false)); err != nil {
		f.t.Fatal(err)
	}
	tbl, err = txn.Commit(f.ctx)
	if err != nil {
		f.t.Fatal(err)
	}
	return tbl
}

func (f *schedFixture) takeJobs() []jobs.Job {
	f.mu.Lock()
	defer f.mu.Unlock()
	j := f.jobs
	f.jobs = nil
	return j
}

const schedYAML = `
defaults:
  target_file_size: 1MiB
  small_file_count: 5
  quiet_period: 1h
  max_quiet_wait: 0s
  cooldown: 2h
  conflict_cooldown: 10h
  orphan_listing_interval: 100000h
  # The hour-long clock jumps would make every partition quiet; the quiet
  # merge has its own tests (quiet_test.go).
  compact_when_quiet_after: off
`

func TestSchedulingDecisions(t *testing.T) {
	t.Run("below threshold: nothing", func(t *testing.T) {
		f := newSchedFixture(t, schedYAML)
		f.commit("a", 4)
		f.at(5 * time.Hour)
		if got := f.takeJobs(); len(got) != 0 {
			t.Errorf("scheduled %d jobs below the threshold", len(got))
		}
	})

	t.Run("quiet period defers, then exactly the hot partition", func(t *testing.T) {
		f := newSchedFixture(t, schedYAML)
		f.commit("b", 2)
		f.commit("a", 6)
		f.at(10 * time.Minute)
		if got := f.takeJobs(); len(got) != 0 {
			t.Fatalf("scheduled within the quiet period: %+v", got)
		}
		f.at(61 * time.Minute)
		got := f.takeJobs()
		if len(got) != 1 || len(got[0].Partitions) != 1 || got[0].Partitions[0].Key != "category=a" {
			t.Fatalf("jobs = %+v, want one job for category=a", got)
		}
		r := got[0].Reasons[0]
		if r.Threshold != "small_file_count" || r.Measured != 6 || r.Limit != 5 {
			t.Errorf("reason = %+v", r)
		}
		// De-duplicated: while it runs, nothing more for the table.
		f.commit("a", 3)
		f.at(2 * time.Hour)
		if got := f.takeJobs(); len(got) != 0 {
			t.Errorf("a second job while the first runs: %+v", got)
		}
	})

	t.Run("max_quiet_wait compacts a partition that never cools", func(t *testing.T) {
		// A quiet period of a day stands for "written all the time".
		yaml := strings.Replace(schedYAML, "max_quiet_wait: 0s", "max_quiet_wait: 3h", 1)
		f := newSchedFixture(t, strings.Replace(yaml, "quiet_period: 1h", "quiet_period: 24h", 1))
		f.commit("a", 6)
		f.at(time.Minute) // starts waiting
		f.at(2 * time.Hour)
		if got := f.takeJobs(); len(got) != 0 {
			t.Fatalf("scheduled before max_quiet_wait: %+v", got)
		}
		f.at(3*time.Hour + 2*time.Minute)
		got := f.takeJobs()
		if len(got) != 1 || !strings.Contains(got[0].Reasons[0].Note, "max_quiet_wait") {
			t.Fatalf("jobs = %+v, want one job noting max_quiet_wait", got)
		}
	})

	t.Run("cool-down after success, conflict cool-down after giving up", func(t *testing.T) {
		f := newSchedFixture(t, schedYAML)
		f.commit("a", 6)
		f.at(2 * time.Hour)
		got := f.takeJobs()
		if len(got) != 1 {
			t.Fatalf("jobs = %d, want 1", len(got))
		}
		f.p.Finished(f.ctx, got[0], jobs.Result{Outcome: jobs.GaveUp})
		f.at(2*time.Hour + 9*time.Hour) // within the 10h conflict cool-down (from the clock at Finished)
		if got := f.takeJobs(); len(got) != 0 {
			t.Fatalf("scheduled within the conflict cool-down: %+v", got)
		}
		f.at(2*time.Hour + 11*time.Hour)
		got = f.takeJobs()
		if len(got) != 1 {
			t.Fatalf("jobs after the conflict cool-down = %d, want 1", len(got))
		}
		f.p.Finished(f.ctx, got[0], jobs.Result{Outcome: jobs.Failed})
		f.at(13*time.Hour + time.Hour) // within the 2h cool-down
		if got := f.takeJobs(); len(got) != 0 {
			t.Fatalf("scheduled within the cool-down: %+v", got)
		}
		f.at(13*time.Hour + 3*time.Hour)
		if got := f.takeJobs(); len(got) != 1 {
			t.Fatalf("jobs after the cool-down = %d, want 1", len(got))
		}
	})

	t.Run("a job that found nothing waits for the next write", func(t *testing.T) {
		f := newSchedFixture(t, schedYAML)
		f.commit("a", 6)
		f.at(2 * time.Hour)
		got := f.takeJobs()
		if len(got) != 1 {
			t.Fatalf("jobs = %d, want 1", len(got))
		}
		f.p.Finished(f.ctx, got[0], jobs.Result{Outcome: jobs.Noop})
		f.at(20 * time.Hour)
		if got := f.takeJobs(); len(got) != 0 {
			t.Fatalf("rescheduled a no-op partition without a new write: %+v", got)
		}
		f.commit("a", 1)
		f.at(20 * time.Hour)
		if got := f.takeJobs(); len(got) != 1 {
			t.Fatalf("jobs after a new write = %d, want 1", len(got))
		}
	})
}

// When compaction and the manifest rewrite are due at once, the manifest
// rewrite runs first: every commit reads the manifest list, and a rewrite
// on few manifests is what makes the compaction's commit cheap
// (docs/design.md#pitfall-manifests-dominate). Compaction follows; a no-op rewrite is not repeated until the
// manifest count changes.
func TestManifestRewriteBeforeCompaction(t *testing.T) {
	f := newSchedFixture(t, schedYAML+"  manifest_count: 4\n")
	f.commit("a", 6)
	f.at(2 * time.Hour)
	got := f.takeJobs()
	if len(got) != 1 || got[0].Kind != jobkind.RewriteManifests || got[0].Reasons[0].Threshold != "manifest_count" ||
		got[0].Reasons[0].Measured != 6 || got[0].Reasons[0].Limit != 4 {
		t.Fatalf("first job = %+v, want a manifest rewrite for 6 >= 4 manifests", got)
	}
	f.p.Finished(f.ctx, got[0], jobs.Result{Outcome: jobs.Noop})
	got = f.takeJobs()
	if len(got) != 1 || got[0].Kind != jobkind.Compact {
		t.Fatalf("after the manifest rewrite = %+v, want compaction", got)
	}
	f.p.Finished(f.ctx, got[0], jobs.Result{Outcome: jobs.Noop})
	f.at(10 * time.Hour)
	if got := f.takeJobs(); len(got) != 0 {
		t.Fatalf("a no-op manifest rewrite was repeated: %+v", got)
	}
}

func TestExpiryScheduling(t *testing.T) {
	yaml := schedYAML + "  snapshot_max_age: 3h\n  min_reader_margin: 30m\n  retain_last: 1\n"
	t.Run("by age", func(t *testing.T) {
		f := newSchedFixture(t, yaml)
		f.commit("a", 3)
		f.at(2 * time.Hour)
		if got := f.takeJobs(); len(got) != 0 {
			t.Fatalf("expiry before snapshot_max_age: %+v", got)
		}
		f.at(4 * time.Hour)
		got := f.takeJobs()
		if len(got) != 1 || got[0].Kind != jobkind.ExpireSnapshots || got[0].ExpireOlderThan != 3*time.Hour ||
			got[0].ExpireRetainLast != 1 || got[0].Reasons[0].Threshold != "snapshot_max_age" {
			t.Fatalf("jobs = %+v, want one expiry with a 3h horizon", got)
		}
	})
	t.Run("by count, keeping the newest half, inside the reader margin", func(t *testing.T) {
		// The reader margin protects files (the pass that deletes them
		// waits for it), not snapshots: a streaming table's history is
		// bounded by count however young it is.
		f := newSchedFixture(t, yaml+"  snapshot_count: 6\n")
		f.commit("a", 5)
		f.at(time.Minute)
		if got := f.takeJobs(); len(got) != 0 {
			t.Fatalf("expiry below snapshot_count: %+v", got)
		}
		f.commit("a", 1)
		f.at(2 * time.Minute)
		got := f.takeJobs()
		if len(got) != 1 || got[0].Kind != jobkind.ExpireSnapshots || got[0].ExpireRetainLast != 3 ||
			got[0].Reasons[0].Threshold != "snapshot_count" || got[0].Reasons[0].Measured != 6 {
			t.Fatalf("jobs = %+v, want one expiry by snapshot_count (6 snapshots) keeping 3", got)
		}
		if got[0].ExpireOlderThan > 2*time.Minute+time.Second {
			t.Errorf("horizon %s: older than the third newest snapshot, not the reader margin", got[0].ExpireOlderThan)
		}
	})
	t.Run("metadata over its bound comes before compaction", func(t *testing.T) {
		f := newSchedFixture(t, strings.Replace(yaml, "quiet_period: 1h", "quiet_period: 0s", 1)+"  snapshot_count: 6\n")
		f.commit("a", 6) // six small files and six snapshots
		f.at(time.Minute)
		got := f.takeJobs()
		if len(got) != 1 || got[0].Kind != jobkind.ExpireSnapshots {
			t.Fatalf("jobs = %+v, want the expiry first", got)
		}
		f.p.Finished(f.ctx, got[0], jobs.Result{Outcome: jobs.Noop})
		if got := f.takeJobs(); len(got) != 1 || got[0].Kind != jobkind.Compact {
			t.Fatalf("after the expiry, jobs = %+v, want the compaction", got)
		}
	})
}

// With every threshold crossed at once, a table's jobs run one at a time:
// the metadata over its bound first (the manifest list here: expiry is due
// by age, not count), then compaction, then the seeds' order for the rest.
func TestJobOrderWhenEverythingIsDue(t *testing.T) {
	yaml := strings.Replace(schedYAML, "orphan_listing_interval: 100000h", "orphan_listing_interval: 1h", 1) +
		"  manifest_count: 4\n  snapshot_max_age: 3h\n  min_reader_margin: 1h\n"
	f := newSchedFixture(t, yaml)
	f.commit("a", 6)
	f.at(10 * time.Hour)
	var kinds []jobkind.Kind
	for range 5 {
		got := f.takeJobs()
		if len(got) == 0 {
			// The first full listing is spread over its 1h interval.
			f.at(12 * time.Hour)
			got = f.takeJobs()
		}
		if len(got) != 1 {
			break
		}
		kinds = append(kinds, got[0].Kind)
		f.p.Finished(f.ctx, got[0], jobs.Result{Outcome: jobs.Noop})
	}
	want := []jobkind.Kind{jobkind.ExpireSnapshots, jobkind.RewriteManifests, jobkind.Compact, jobkind.RemoveOrphans}
	if fmt.Sprint(kinds) != fmt.Sprint(want) {
		t.Errorf("jobs ran in the order %v, want %v", kinds, want)
	}
}

// The files an expiry unlinked are deleted by a later pass once their
// batch is due (min_reader_margin after the expiry), not before, once.
func TestDeletionPassIsScheduledWhenDue(t *testing.T) {
	f := newSchedFixture(t, schedYAML+"  snapshot_max_age: 3h\n  min_reader_margin: 1h\n")
	f.commit("a", 2)
	f.at(4 * time.Hour)
	got := f.takeJobs()
	if len(got) != 1 || got[0].Kind != jobkind.ExpireSnapshots {
		t.Fatalf("jobs = %+v, want an expiry", got)
	}
	due := f.now.Add(time.Hour)
	ref := deletions.Ref{Location: "file:///x/metadata/_reactor/pending-deletes/1-job.json", Due: due}
	f.p.Finished(f.ctx, got[0], jobs.Result{Outcome: jobs.Succeeded, Table: f.expire(), PendingDeletes: []deletions.Ref{ref}})
	f.at(4*time.Hour + 30*time.Minute)
	if got := f.takeJobs(); len(got) != 0 {
		t.Fatalf("the pass ran before its batch was due: %+v", got)
	}
	f.at(5*time.Hour + time.Minute)
	got = f.takeJobs()
	if len(got) != 1 || got[0].Kind != jobkind.DeleteExpiredFiles || len(got[0].PendingDeletes) != 1 || got[0].PendingDeletes[0] != ref {
		t.Fatalf("jobs = %+v, want the pass with the batch", got)
	}
	f.p.Finished(f.ctx, got[0], jobs.Result{Outcome: jobs.Succeeded})
	f.at(9 * time.Hour)
	for _, j := range f.takeJobs() {
		if j.Kind == jobkind.DeleteExpiredFiles {
			t.Errorf("the pass ran twice")
		}
	}
}

// A table with a sort strategy: a partition holding files no sort rewrite
// wrote is sorted once it has been quiet for sort_quiet_period (not before),
// after any compaction; once every file comes from a sort rewrite it is left
// alone until written again.
func TestSortScheduling(t *testing.T) {
	f := newSchedFixture(t, schedYAML+"  strategy: sort\n  sort_order: id DESC\n  sort_quiet_period: 24h\n  snapshot_max_age: 1000h\n")
	f.commit("a", 2) // below small_file_count: no compaction
	f.at(2 * time.Hour)
	if got := f.takeJobs(); len(got) != 0 {
		t.Fatalf("a partition written 2h ago was scheduled: %+v", got)
	}
	f.at(25 * time.Hour)
	got := f.takeJobs()
	if len(got) != 1 || got[0].Kind != jobkind.Sort || got[0].SortOrder != "id DESC" || len(got[0].Partitions) != 1 ||
		got[0].Reasons[0].Threshold != "sort_quiet_period" || got[0].Reasons[0].Limit != 24*3600 {
		t.Fatalf("after 25h quiet: %+v, want a sort job for category=a", got)
	}

	// The job's commit: both files replaced by one written by the sort.
	tbl, err := f.cat.LoadTable(f.ctx, table.Identifier{"db", "t"})
	if err != nil {
		t.Fatal(err)
	}
	tasks, err := tbl.Scan().PlanFiles(f.ctx)
	if err != nil {
		t.Fatal(err)
	}
	spec := tbl.Spec()
	bld, err := iceberg.NewDataFileBuilder(spec, iceberg.EntryContentData, tbl.Location()+"/data/category=a/sorted.parquet",
		iceberg.ParquetFile, map[int]any{1000: "a"}, nil, nil, 6, 1000)
	if err != nil {
		t.Fatal(err)
	}
	txn := tbl.NewTransaction()
	rw := txn.NewRewrite(iceberg.Properties{jobs.SnapshotJobProperty: got[0].ID, jobs.SortSnapshotProperty: "id DESC"})
	for _, task := range tasks {
		rw.DeleteFile(task.File)
	}
	rw.AddDataFile(bld.Build())
	if err := rw.Commit(f.ctx); err != nil {
		t.Fatal(err)
	}
	committed, err := txn.Commit(f.ctx)
	if err != nil {
		t.Fatal(err)
	}
	f.p.Finished(f.ctx, got[0], jobs.Result{Outcome: jobs.Succeeded, Table: committed})
	if _, parts := f.p.TableCounters("db.t"); len(parts) != 1 || parts[0].SortedFiles != 1 || parts[0].DataFiles != 1 {
		t.Fatalf("after the sort: %+v, want one sorted file", parts)
	}
	f.at(100 * time.Hour)
	if got := f.takeJobs(); len(got) != 0 {
		t.Fatalf("a sorted partition was scheduled again: %+v", got)
	}

	// A restart (a fresh planner rebuilding from the snapshot) still knows
	// the file is sorted.
	var tc tableCounters
	if _, err := tc.advance(f.ctx, committed, fileSizes{small: 1 << 20}); err != nil {
		t.Fatal(err)
	}
	if ps := tc.partitions["category=a"]; ps.SortedFiles != 1 {
		t.Errorf("rebuilt counters %+v, want the sorted file counted", ps.Counters)
	}

	f.commit("a", 1)
	f.at(time.Hour)
	if got := f.takeJobs(); len(got) != 0 {
		t.Fatalf("a partition written an hour ago was sorted: %+v", got)
	}
	f.at(30 * time.Hour) // past the sort job's cool-down too
	if got := f.takeJobs(); len(got) != 1 || got[0].Kind != jobkind.Sort {
		t.Fatalf("new unsorted file, quiet for 30h: %+v, want a sort job", got)
	}
}

// A compaction that found nothing to do settles only compaction: the
// partition's sort still comes on its cadence, without a new write.
func TestNoopCompactionDoesNotBlockSort(t *testing.T) {
	yaml := strings.Replace(schedYAML, "small_file_count: 5", "small_file_count: 2\n  min_input_files: 2", 1)
	f := newSchedFixture(t, yaml+"  strategy: zorder\n  sort_order: zorder(id, payload)\n  sort_quiet_period: 24h\n  snapshot_max_age: 1000h\n")
	f.commit("a", 2)
	f.at(2 * time.Hour)
	got := f.takeJobs()
	if len(got) != 1 || got[0].Kind != jobkind.Compact {
		t.Fatalf("first job %+v, want compaction", got)
	}
	f.p.Finished(f.ctx, got[0], jobs.Result{Outcome: jobs.Noop})
	f.at(5 * time.Hour)
	if got := f.takeJobs(); len(got) != 0 {
		t.Fatalf("a no-op compaction was repeated: %+v", got)
	}
	f.at(25 * time.Hour)
	if got := f.takeJobs(); len(got) != 1 || got[0].Kind != jobkind.Sort || got[0].SortOrder != "zorder(id, payload)" {
		t.Fatalf("after 25h quiet: %+v, want the z-order job", got)
	}
}
