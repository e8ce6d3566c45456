package executor

import (
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/apache/iceberg-go/catalog"
	iceio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"

	"github.com/icereactor/reactor/deletions"
	"github.com/icereactor/reactor/embedded"
	"github.com/icereactor/reactor/jobkind"
	"github.com/icereactor/reactor/jobs"
	"github.com/icereactor/reactor/metrics"
	"github.com/icereactor/reactor/streamwriter"
	"github.com/icereactor/reactor/tablename"
	"github.com/icereactor/reactor/thresholds"
)

// historyTable is a table with a random history, and two executors on it:
// one with history indexes (kept across every step, as in reactor run),
// one walking the whole history for every question.
type historyTable struct {
	t       *testing.T
	ctx     context.Context
	cat     catalog.Catalog
	w       *streamwriter.Writer
	cached  *Executor
	walking *Executor
	ident   table.Identifier
	// unlinkedCompared counts the expiries compared that would unlink
	// more than manifest lists.
	unlinkedCompared int
}

func newHistoryTable(t *testing.T) *historyTable {
	ctx := t.Context()
	cat, err := embedded.OpenCatalog(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	ident := table.Identifier{"db", "events"}
	if _, err := streamwriter.CreateTable(ctx, cat, ident, streamwriter.MergeOnReadProperties); err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.DiscardHandler)
	cached, err := New(Options{Catalog: cat, Logger: log, Metrics: metrics.New()})
	if err != nil {
		t.Fatal(err)
	}
	walking, err := New(Options{Catalog: cat, Logger: log, Metrics: metrics.New()})
	if err != nil {
		t.Fatal(err)
	}
	h := &historyTable{t: t, ctx: ctx, cat: cat, w: streamwriter.New(cat, ident, nil), ident: ident,
		cached: cached, walking: walking}
	h.walking.hist = nil
	return h
}

func (h *historyTable) load() *table.Table {
	h.t.Helper()
	tbl, err := h.cat.LoadTable(h.ctx, h.ident)
	if err != nil {
		h.t.Fatal(err)
	}
	return tbl
}

func (h *historyTable) fs(tbl *table.Table) iceio.IO {
	h.t.Helper()
	fs, err := tbl.FS(h.ctx)
	if err != nil {
		h.t.Fatal(err)
	}
	return fs
}

func (h *historyTable) update(updates ...table.Update) {
	h.t.Helper()
	if _, _, err := h.cat.CommitTable(h.ctx, h.ident, nil, updates); err != nil {
		h.t.Fatal(err)
	}
}

func (h *historyTable) job(kind jobkind.Kind, yaml string) jobs.Job {
	h.t.Helper()
	cfg, err := thresholds.Parse([]byte(yaml))
	if err != nil {
		h.t.Fatal(err)
	}
	j := jobs.Job{ID: fmt.Sprintf("%s-%d", kind, time.Now().UnixNano()), Kind: kind, Table: tablename.Of(h.ident),
		Settings: cfg.For("db.events", h.load().Properties()), ScheduledAt: time.Now()}
	if kind == jobkind.Compact {
		j.Partitions = []jobs.Partition{{Key: "category=a", ApplyDeletes: true}, {Key: "category=b"}}
	}
	return j
}

// referenced is every identity each executor's deletion check calls
// referenced, over the union of both sets.
func (h *historyTable) compareReferenced(step string) {
	h.t.Helper()
	tbl := h.load()
	fs := h.fs(tbl)
	walked, err := reachable(h.ctx, fs, tbl.Metadata())
	if err != nil {
		h.t.Fatal(err)
	}
	want := walked.locations(tbl)
	metadataRefs(want, tbl)
	cachedRef, done, err := h.cached.referencedBy(h.ctx, tbl, fs)
	if err != nil {
		h.t.Fatal(err)
	}
	walkingRef, walkingDone, err := h.walking.referencedBy(h.ctx, tbl, fs)
	if err != nil {
		h.t.Fatal(err)
	}
	for id := range want {
		if !cachedRef(id) || !walkingRef(id) {
			h.t.Errorf("%s: %s referenced by the history, cached %v, walking %v", step, id, cachedRef(id), walkingRef(id))
		}
	}
	done()
	walkingDone()
	h.cached.hist.tables["db.events"].x.Each(func(id string) {
		if !want[id] {
			h.t.Errorf("%s: the index counts %s, which the history does not reference", step, id)
		}
	})

	// The orphan guard's view: the same set both ways.
	cachedRefs, err := h.cached.readReferences(h.ctx, fs, tbl, time.Now(), 0)
	if err != nil {
		h.t.Fatal(err)
	}
	walkingRefs, err := h.walking.readReferences(h.ctx, fs, tbl, time.Now(), 0)
	if err != nil {
		h.t.Fatal(err)
	}
	for id := range walkingRefs.ids {
		if !cachedRefs.has(id) {
			h.t.Errorf("%s: the guard without index has %s, with index not", step, id)
		}
	}
	cachedRefs.index.Each(func(id string) {
		if !walkingRefs.ids[id] {
			h.t.Errorf("%s: the guard with index has %s, without not", step, id)
		}
	})
	cachedRefs.close()
}

// compareUnlinked stages an expiry and compares what each executor says
// it would unlink.
func (h *historyTable) compareUnlinked(step string, retainLast int) {
	h.t.Helper()
	pre := h.load()
	txn := pre.NewTransaction()
	if err := txn.ExpireSnapshots(table.WithOlderThan(0), table.WithRetainLast(retainLast), table.WithPostCommit(false)); err != nil {
		h.t.Fatal(err)
	}
	staged, err := txn.StagedTable()
	if err != nil {
		h.t.Fatal(err)
	}
	fs := h.fs(pre)
	cached, err := h.cached.expiryUnlinked(h.ctx, fs, pre, staged.Table, true)
	if err != nil {
		h.t.Fatal(err)
	}
	walked, err := h.walking.expiryUnlinked(h.ctx, fs, pre, staged.Table, true)
	if err != nil {
		h.t.Fatal(err)
	}
	key := func(fs []deletions.File) []string {
		var out []string
		for _, f := range fs {
			out = append(out, f.Kind.String()+" "+f.Path)
		}
		slices.Sort(out)
		return out
	}
	if len(walked) > len(staged.Metadata().Snapshots()) {
		h.unlinkedCompared++
	}
	if a, b := key(cached), key(walked); !slices.Equal(a, b) {
		h.t.Errorf("%s: an expiry keeping %d would unlink, by the index:\n%v\nby the walk:\n%v", step, retainLast, a, b)
	}
}

// Property: over random histories of appends, position and equality
// deletes, compactions (which drop deletes), branches, tags, ref removals,
// statistics and partition statistics files and expiries, the history
// index (kept across every step) and a walk of the whole history call the
// same files referenced, the orphan guard sees the same set either way, and
// an expiry would unlink the same files.
func TestHistoryIndexAgreesWithWalk(t *testing.T) {
	seen := map[string]int{}
	unlinked := 0
	defer func() {
		for _, op := range []string{"append", "position-delete", "equality-delete", "compact", "ref", "remove-ref", "statistics", "expire"} {
			if seen[op] == 0 && !t.Failed() {
				t.Errorf("no history had a %s", op)
			}
		}
		if unlinked == 0 && !t.Failed() {
			t.Error("no expiry compared unlinked any manifest or data file")
		}
	}()
	for seed := uint64(1); seed <= 5; seed++ {
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 0xbeef))
			h := newHistoryTable(t)
			for range 3 {
				if _, err := h.w.Commit(h.ctx, "a", 10); err != nil {
					t.Fatal(err)
				}
			}
			var ops, refs []string
			for step := range 25 {
				op := rng.IntN(11)
				switch {
				case op < 3:
					if _, err := h.w.Commit(h.ctx, []string{"a", "b"}[rng.IntN(2)], 1+rng.IntN(10)); err != nil {
						t.Fatal(err)
					}
					ops = append(ops, "append")
				case op == 3:
					if ids := h.w.LiveIDs(); len(ids) > 0 {
						if _, err := h.w.DeleteRows(h.ctx, ids[rng.IntN(len(ids))]); err != nil {
							t.Fatal(err)
						}
						ops = append(ops, "position-delete")
					}
				case op == 4:
					if ids := h.w.LiveIDs(); len(ids) > 0 {
						if _, err := h.w.DeleteKeys(h.ctx, ids[rng.IntN(len(ids))]); err != nil {
							t.Fatal(err)
						}
						ops = append(ops, "equality-delete")
					}
				case op == 5:
					res, _ := h.cached.Run(h.ctx, h.job(jobkind.Compact, "defaults: {target_file_size: 1MiB, small_file_count: 2, min_input_files: 2}"))
					if res.Outcome == jobs.Failed {
						t.Fatalf("step %d compaction: %v", step, res.Err)
					}
					ops = append(ops, "compact")
				case op == 6:
					snaps := h.load().Metadata().Snapshots()
					kind := []table.RefType{table.BranchRef, table.TagRef}[rng.IntN(2)]
					name := fmt.Sprintf("ref-%d", step)
					refs = append(refs, name)
					h.update(table.NewSetSnapshotRefUpdate(name, snaps[rng.IntN(len(snaps))].SnapshotID, kind, 0, 0, 0))
					ops = append(ops, "ref")
				case op == 7 && len(refs) > 0:
					i := rng.IntN(len(refs))
					h.update(table.NewRemoveSnapshotRefUpdate(refs[i]))
					refs = slices.Delete(refs, i, i+1)
					ops = append(ops, "remove-ref")
				case op == 8:
					tbl := h.load()
					cur := tbl.CurrentSnapshot().SnapshotID
					loc := tbl.Location() + fmt.Sprintf("/metadata/stats-%d-%d.puffin", seed, step)
					h.update(table.NewSetStatisticsUpdate(table.StatisticsFile{SnapshotID: cur, StatisticsPath: loc, FileSizeInBytes: 1}),
						table.NewSetPartitionStatisticsUpdate(table.PartitionStatisticsFile{SnapshotID: cur,
							StatisticsPath: loc + ".partitions", FileSizeInBytes: 1}))
					ops = append(ops, "statistics")
				default:
					h.compareUnlinked(fmt.Sprintf("step %d before expiry", step), 1+rng.IntN(3))
					time.Sleep(2 * time.Millisecond)
					e := []*Executor{h.cached, h.walking}[rng.IntN(2)]
					res, _ := e.Run(h.ctx, h.job(jobkind.ExpireSnapshots, fmt.Sprintf(
						"defaults: {snapshot_max_age: 1ms, min_reader_margin: 0s, retain_last: %d}", 1+rng.IntN(3))))
					if res.Outcome == jobs.Failed {
						t.Fatalf("step %d expiry: %v", step, res.Err)
					}
					ops = append(ops, "expire")
				}
				h.compareReferenced(fmt.Sprintf("step %d after %v", step, ops))
			}
			for _, op := range ops {
				seen[op]++
			}
			unlinked += h.unlinkedCompared
		})
	}
}
