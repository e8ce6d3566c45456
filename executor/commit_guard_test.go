package executor_test

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/icereactor/reactor/executor"
	"github.com/icereactor/reactor/jobs"
)

// switchGuard allows commits until refused is set (a replica whose table
// lease was taken over meanwhile).
type switchGuard struct{ refused atomic.Bool }

func (g *switchGuard) CommitDeadline(table string) (time.Time, error) {
	if g.refused.Load() {
		return time.Time{}, fmt.Errorf("lease of %s taken over by another replica", table)
	}
	return time.Now().Add(time.Minute), nil
}

// A replica that loses the table's lease while its job runs commits
// nothing: whether the loss comes before an attempt of the retry loop or
// between an attempt's load and its catalog commit, the job fails with
// ErrCommitRefused, the table has no snapshot of the job, its outputs are
// deleted, and the rows are those written.
func TestLostLeaseCommitsNothing(t *testing.T) {
	for _, when := range []string{"before a retry", "inside the attempt"} {
		t.Run(when, func(t *testing.T) {
			f := newFixture(t, nil)
			for range 6 {
				f.commit("a", 10)
			}
			before := f.contents()
			files := f.parquetFilesOnDisk()
			g := &switchGuard{}
			executor.GuardCommits(f.exec, g)
			switch when {
			case "before a retry":
				// The first attempt loses a race to a writer, and the
				// lease goes with it: the retry must not be attempted.
				f.icat.beforeNextCommits(func() {
					f.commit("a", 10)
					g.refused.Store(true)
				})
			case "inside the attempt":
				// Once the outputs are written, the next load is an
				// attempt's: the lease goes right after it.
				f.icat.beforeLoad = func(int) {
					if f.parquetFilesOnDisk() > files {
						g.refused.Store(true)
					}
				}
			}
			job := f.job("defaults: {target_file_size: 1MiB, min_input_files: 2, small_file_count: 5, commit_retry_time: 30s}", "a")
			res, rep := f.exec.Run(f.ctx, job)
			if res.Outcome != jobs.Failed || !errors.Is(res.Err, executor.ErrCommitRefused) {
				t.Fatalf("outcome %v (%v), want failed with ErrCommitRefused", res.Outcome, res.Err)
			}
			tbl := f.load()
			for _, s := range tbl.Metadata().Snapshots() {
				if s.Summary != nil && s.Summary.Properties[jobs.SnapshotJobProperty] == job.ID {
					t.Fatalf("snapshot %d of the job was committed", s.SnapshotID)
				}
			}
			after := f.contents()
			wantFiles := files
			if when == "before a retry" {
				wantFiles++ // the racing writer's file
				if after.Total.Rows != before.Total.Rows+10 {
					t.Errorf("rows %d, want %d", after.Total.Rows, before.Total.Rows+10)
				}
			} else if after.Total != before.Total {
				t.Errorf("rows %v, want %v", after.Total, before.Total)
			}
			if got := f.parquetFilesOnDisk(); got != wantFiles {
				t.Errorf("%d Parquet files on disk, want %d: the refused job's outputs were left behind", got, wantFiles)
			}
			t.Logf("attempts %d, conflicts %d, outputs cleaned %d", rep.Attempts, rep.Conflicts, rep.OutputFilesCleanedUp)
		})
	}
}

// budgetGuard allows a number of checks, then refuses every one (a
// replica whose lease lapses in the middle of a deletion pass).
type budgetGuard struct{ left atomic.Int64 }

func (g *budgetGuard) CommitDeadline(table string) (time.Time, error) {
	if g.left.Add(-1) < 0 {
		return time.Time{}, fmt.Errorf("lease of %s not renewed", table)
	}
	return time.Now().Add(time.Minute), nil
}

// Orphan deletion asks the lease before every file: a replica that loses
// it in the middle of a pass deletes no file after the loss, and the job
// fails with ErrCommitRefused.
func TestOrphanDeletionStopsWithinOneFileOfALostLease(t *testing.T) {
	f := newFixture(t, nil)
	for range 2 {
		f.commit("a", 10)
	}
	dir := strings.TrimPrefix(f.load().Location(), "file://")
	var strays []string
	for i := range 5 {
		p := filepath.Join(dir, "data", "category=a", fmt.Sprintf("00000-%d-failed-write.parquet", i))
		writeFile(t, p)
		strays = append(strays, p)
	}
	ageTree(t, dir)
	rows := f.contents().Total
	g := &budgetGuard{}
	g.left.Store(2)
	executor.GuardCommits(f.exec, g)
	res, rep := f.exec.Run(f.ctx, f.orphanJob(true, jobs.OrphansFromListing))
	if res.Outcome != jobs.Failed || !errors.Is(res.Err, executor.ErrCommitRefused) {
		t.Fatalf("outcome %v (%v), want failed with ErrCommitRefused", res.Outcome, res.Err)
	}
	left := 0
	for _, p := range strays {
		if fileExists(t, p) {
			left++
		}
	}
	if left != 3 || rep.Orphans.DeletedFiles != 2 {
		t.Fatalf("%d of 5 orphans left, %d reported deleted; want 3 left after the 2 checks the lease allowed", left, rep.Orphans.DeletedFiles)
	}
	if got := f.contents().Total; got != rows {
		t.Errorf("rows %v, want %v", got, rows)
	}
}
