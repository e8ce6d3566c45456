package executor_test

import (
	"fmt"
	"log/slog"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/icereactor/reactor/executor"
	"github.com/icereactor/reactor/jobs"
	"github.com/icereactor/reactor/metrics"
)

// Property: over random histories of appends, compactions, expiries and
// failed writes, orphan cleanup (real deletion, full listing) never deletes
// a file any remaining snapshot references nor one younger than the margin
// (an in-flight writer's), and it does remove every old failed write.
func TestOrphanCleanupPropertyOverRandomHistories(t *testing.T) {
	for seed := uint64(1); seed <= 6; seed++ {
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, seed*7919))
			f := newFixture(t, nil)
			f.commit("a", 5)
			dir := strings.TrimPrefix(f.load().Location(), "file://")
			var failed, inFlight []string
			var ops []string
			for step := range 14 {
				switch op := rng.IntN(10); {
				case op < 5:
					f.commit([]string{"a", "b"}[rng.IntN(2)], 1+rng.IntN(20))
					ops = append(ops, "append")
				case op < 7:
					res, _ := f.exec.Run(f.ctx, f.job("defaults: {target_file_size: 1MiB, small_file_count: 2, min_input_files: 2}", "a", "b"))
					if res.Outcome == jobs.Failed {
						t.Fatalf("step %d compaction: %v", step, res.Err)
					}
					ops = append(ops, "compact")
				case op < 8:
					time.Sleep(2 * time.Millisecond)
					res, _ := f.exec.Run(f.ctx, f.expireJob("defaults: {snapshot_max_age: 1ms, min_reader_margin: 0s, retain_last: 1}", time.Millisecond))
					if res.Outcome == jobs.Failed {
						t.Fatalf("step %d expiry: %v", step, res.Err)
					}
					ops = append(ops, "expire")
				default:
					p := filepath.Join(dir, "data", "category=a", fmt.Sprintf("failed-%d-%d.parquet", seed, step))
					if rng.IntN(2) == 0 {
						p = filepath.Join(dir, "metadata", fmt.Sprintf("failed-%d-%d.avro", seed, step))
					}
					writeFile(t, p)
					failed = append(failed, p)
					ops = append(ops, "failed-write")
				}
			}
			ageTree(t, dir)    // everything so far is older than the 1h margin...
			for i := range 2 { // ...except what writers are writing right now
				p := filepath.Join(dir, "data", "category=b", fmt.Sprintf("in-flight-%d.parquet", i))
				writeFile(t, p)
				inFlight = append(inFlight, p)
			}
			referenced, err := allReferenced(f)
			if err != nil {
				t.Fatal(err)
			}
			rows := f.contents().Total

			// The executor's history index (kept across the jobs above)
			// and a walk of the whole history find the same orphans,
			// listed and tracked.
			walking := newTestExecutor(t, f.icat, slog.New(slog.DiscardHandler), metrics.New())
			executor.WalkWholeHistory(walking)
			var tracked []jobs.OrphanCandidate
			for _, p := range append(append([]string{}, failed...), inFlight...) {
				tracked = append(tracked, jobs.OrphanCandidate{Location: p})
			}
			for _, r := range referenced[:min(len(referenced), 20)] {
				tracked = append(tracked, jobs.OrphanCandidate{Location: r})
			}
			for _, source := range []string{jobs.OrphansFromListing, jobs.OrphansFromTracking} {
				var found [2][]string
				for i, e := range []*executor.Executor{f.exec, walking} {
					res, rep := e.Run(f.ctx, f.orphanJob(false, source, tracked...))
					if res.Outcome == jobs.Failed {
						t.Fatalf("%s dry run after %v: %v", source, ops, res.Err)
					}
					for _, o := range rep.Orphans.Orphans {
						found[i] = append(found[i], o.Location)
					}
					slices.Sort(found[i])
				}
				if !slices.Equal(found[0], found[1]) {
					t.Errorf("history %v, %s: orphans with the history index %v, walking the history %v", ops, source, found[0], found[1])
				}
			}

			res, rep := f.exec.Run(f.ctx, f.orphanJob(true, jobs.OrphansFromListing))
			if res.Outcome == jobs.Failed {
				t.Fatalf("orphan cleanup after %v: %v", ops, res.Err)
			}
			for _, p := range referenced {
				if !fileExists(t, p) {
					t.Errorf("history %v: referenced file %s was deleted", ops, p)
				}
			}
			for _, p := range inFlight {
				if !fileExists(t, p) {
					t.Errorf("history %v: in-flight file %s was deleted", ops, p)
				}
			}
			for _, p := range failed {
				if fileExists(t, p) {
					t.Errorf("history %v: failed write %s survived", ops, p)
				}
			}
			if got := f.contents().Total; got != rows || got != f.writer.Written() {
				t.Errorf("history %v: rows %v after cleanup, %v before, %v written", ops, got, rows, f.writer.Written())
			}
			t.Logf("history %v: %d orphans deleted, %d referenced files kept", ops, rep.Orphans.DeletedFiles, len(referenced))
		})
	}
}

// allReferenced lists, as local paths, every file the table's metadata,
// snapshots and manifests reference.
func allReferenced(f *fixture) ([]string, error) {
	t := f.load()
	iofs, err := t.FS(f.ctx)
	if err != nil {
		return nil, err
	}
	out := []string{strings.TrimPrefix(t.MetadataLocation(), "file://")}
	for entry := range t.Metadata().PreviousFiles() {
		out = append(out, strings.TrimPrefix(entry.MetadataFile, "file://"))
	}
	for _, snap := range t.Metadata().Snapshots() {
		out = append(out, strings.TrimPrefix(snap.ManifestList, "file://"))
		ms, err := snap.Manifests(iofs)
		if err != nil {
			return nil, err
		}
		for _, m := range ms {
			out = append(out, strings.TrimPrefix(m.FilePath(), "file://"))
			for e, err := range m.Entries(iofs, true) {
				if err != nil {
					return nil, err
				}
				out = append(out, strings.TrimPrefix(e.DataFile().FilePath(), "file://"))
			}
		}
	}
	return out, nil
}
