package executor_test

import (
	"errors"
	"maps"
	"os"
	"testing"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/icereactor/reactor/executor"
	"github.com/icereactor/reactor/jobs"
	"github.com/icereactor/reactor/streamwriter"
)

// Two deletion vectors for one data file (a writer that did not merge with
// the existing one) are merged into one holding both; the rows and their
// lineage read as before, and a second run plans nothing.
func TestV3PositionDeleteRewriteMergesDuplicateDVs(t *testing.T) {
	f := newFixture(t, v3Props())
	f.commit("a", 20) // ids 1..20
	f.commit("a", 20) // ids 21..40
	pdmDelete(t, f, 3, 25)
	loc := pdmLocate(t, f, 5, 6)
	before, lineage := v3Without(f.contents(), "a", 5, 6), v3LineageWithout(v3RowLineage(t, f), 5, 6)
	v3CommitDeletes(t, f, v3WriteDV(t, f, "a", loc[5].Path, loc[5].Pos, loc[6].Pos))
	dvs := v3DVs(t, f)
	if len(dvs) != 3 {
		t.Fatalf("%d deletion vectors, want 3 (two for one data file)", len(dvs))
	}

	nextRowID := f.load().Metadata().NextRowID()
	res, rep := f.exec.Run(f.ctx, pdmJob(f, "", "a"))
	if res.Outcome != jobs.Succeeded {
		t.Fatalf("rewrite: %v %v", res.Outcome, res.Err)
	}
	if rep.RewrittenDeleteFiles != 2 || rep.AddedDeleteFiles != 1 {
		t.Errorf("report: %d delete files rewritten, %d added; want the two vectors of one file merged into one",
			rep.RewrittenDeleteFiles, rep.AddedDeleteFiles)
	}
	v3AssertLineageSnapshot(t, f, nextRowID)
	after := v3DVs(t, f)
	if len(after) != 2 {
		t.Fatalf("%d deletion vectors after the merge, want 2 (one per data file)", len(after))
	}
	for _, d := range after {
		if d.ref == loc[5].Path && (d.df.Count() != 3 || d.seq != dvSeqMax(dvs, d.ref)) {
			t.Errorf("merged vector: %d rows at sequence number %d, want 3 at %d", d.df.Count(), d.seq, dvSeqMax(dvs, d.ref))
		}
	}
	sameContents(t, "after merge", before, f.contents())
	if got := v3RowLineage(t, f); !maps.Equal(got, lineage) {
		t.Errorf("row lineage changed:\n got %v\nwant %v", got, lineage)
	}
	v3AssertDVRules(t, f)
	if res, _ := f.exec.Run(f.ctx, pdmJob(f, "", "a")); res.Outcome != jobs.Noop {
		t.Errorf("second run: %v %v, want noop", res.Outcome, res.Err)
	}
}

// v3DuplicateSetup is a v3 table whose partition a has two data files, the
// first with two deletion vectors (ids 3 and 5, 6), the second with one
// (id 25); want and lineage are what it reads.
//
// loc has where ids 5, 6 and 7 are (a scan refuses the table once it has
// two vectors for one file).
func v3DuplicateSetup(t *testing.T) (f *fixture, dup iceberg.DataFile, want streamwriter.Contents, lineage map[int64]v3Lineage, loc map[int64]pdmRow) {
	t.Helper()
	f = newFixture(t, v3Props())
	f.commit("a", 20) // ids 1..20
	f.commit("a", 20) // ids 21..40
	pdmDelete(t, f, 3, 25)
	loc = pdmLocate(t, f, 5, 6, 7)
	want, lineage = v3Without(f.contents(), "a", 5, 6), v3LineageWithout(v3RowLineage(t, f), 5, 6)
	dup = v3WriteDV(t, f, "a", loc[5].Path, loc[5].Pos, loc[6].Pos)
	v3CommitDeletes(t, f, dup)
	return f, dup, want, lineage, loc
}

// A deletion vector the job cannot read (a corrupt blob, a Puffin file
// gone) fails the job with ErrBadDeletionVector before anything is
// written: the table keeps its snapshot and no output is left on disk.
func TestV3PositionDeleteRewriteRefusesBadDeletionVectors(t *testing.T) {
	for name, damage := range map[string]func(t *testing.T, path string){
		"corrupt blob": func(t *testing.T, path string) {
			fh, err := os.OpenFile(path, os.O_WRONLY, 0)
			if err != nil {
				t.Fatal(err)
			}
			defer fh.Close()
			if _, err := fh.WriteAt([]byte{0xde, 0xad, 0xbe, 0xef, 0xde, 0xad, 0xbe, 0xef}, 8); err != nil {
				t.Fatal(err)
			}
		},
		"puffin file missing": func(t *testing.T, path string) {
			if err := os.Remove(path); err != nil {
				t.Fatal(err)
			}
		},
	} {
		t.Run(name, func(t *testing.T) {
			f, dup, _, _, _ := v3DuplicateSetup(t)
			snap := f.load().CurrentSnapshot().SnapshotID
			damage(t, trimFileScheme(dup.FilePath()))
			res, rep := f.exec.Run(f.ctx, pdmJob(f, "", "a"))
			if res.Outcome != jobs.Failed || !errors.Is(res.Err, executor.ErrBadDeletionVector) {
				t.Fatalf("outcome %v, err %v; want Failed with ErrBadDeletionVector", res.Outcome, res.Err)
			}
			t.Logf("job error: %v", res.Err)
			if got := f.load().CurrentSnapshot().SnapshotID; got != snap || rep.Commits != 0 {
				t.Errorf("table moved from snapshot %d to %d", snap, got)
			}
			if got := v3MergedOnDisk(t, f); len(got) != 0 {
				t.Errorf("outputs left on disk: %v", got)
			}
		})
	}
}

// A writer deleting rows while the job runs: of a data file the job does
// not rewrite, the job retries and keeps the writer's vector; of the data
// file whose vectors the job merges, the job's vector would be a second
// one (ErrNewDeletes): the job deletes its outputs and plans again, the
// writer's vector then among those merged; a writer adding one before
// every plan's commit makes it give up with the table as the writer left
// it, and the next run merges.
func TestV3PositionDeleteRewriteWithConcurrentDeletes(t *testing.T) {
	t.Run("other file", func(t *testing.T) {
		f, _, want, lineage, _ := v3DuplicateSetup(t)
		f.icat.beforeNextCommits(func() { pdmDelete(t, f, 30) })
		res, rep := f.exec.Run(f.ctx, pdmJob(f, "", "a"))
		if res.Outcome != jobs.Succeeded || rep.Conflicts != 1 {
			t.Fatalf("outcome %v (err %v), %d conflicts; want success after one conflict", res.Outcome, res.Err, rep.Conflicts)
		}
		sameContents(t, "after the merge", v3Without(want, "a", 30), f.contents())
		if got := v3RowLineage(t, f); !maps.Equal(got, v3LineageWithout(lineage, 30)) {
			t.Errorf("row lineage changed:\n got %v\nwant %v", got, lineage)
		}
		v3AssertDVRules(t, f)
	})
	t.Run("merged file", func(t *testing.T) {
		f, _, want, lineage, loc := v3DuplicateSetup(t)
		onDisk := f.filesOnDisk()
		// Not through the writer: iceberg-go's delete refuses to add a
		// vector to a file that has two.
		f.icat.beforeNextCommits(func() { v3CommitDeletes(t, f, v3WriteDV(t, f, "a", loc[7].Path, loc[7].Pos)) })
		res, rep := f.exec.Run(f.ctx, pdmJob(f, "", "a"))
		if res.Outcome != jobs.Succeeded || rep.Conflicts != 2 || rep.OutputFilesCleanedUp == 0 {
			t.Fatalf("outcome %v (err %v), %d conflicts, %d outputs cleaned up; want success after a re-plan (2 conflicts, outputs deleted)",
				res.Outcome, res.Err, rep.Conflicts, rep.OutputFilesCleanedUp)
		}
		if left := leftOnDisk(t, f, onDisk); len(left) != 0 {
			t.Errorf("outputs of the abandoned plan left on disk: %v", left)
		}
		sameContents(t, "after the re-planned merge", v3Without(want, "a", 7), f.contents())
		if got := v3RowLineage(t, f); !maps.Equal(got, v3LineageWithout(lineage, 7)) {
			t.Errorf("row lineage changed:\n got %v\nwant %v", got, lineage)
		}
		v3AssertDVRules(t, f)
	})
	t.Run("merged file every plan", func(t *testing.T) {
		f, _, want, _, loc := v3DuplicateSetup(t)
		onDisk := f.filesOnDisk()
		var hooks []func()
		for range executor.MaxRewriteReplans + 1 {
			hooks = append(hooks, func() { v3CommitDeletes(t, f, v3WriteDV(t, f, "a", loc[7].Path, loc[7].Pos)) })
		}
		f.icat.beforeNextCommits(hooks...)
		res, _ := f.exec.Run(f.ctx, pdmJob(f, "", "a"))
		if res.Outcome != jobs.GaveUp || !errors.Is(res.Err, executor.ErrNewDeletes) {
			t.Fatalf("outcome %v, err %v; want gave_up with ErrNewDeletes", res.Outcome, res.Err)
		}
		if left := leftOnDisk(t, f, onDisk); len(left) != 0 {
			t.Errorf("outputs left on disk: %v", left)
		}
		// The table as the writer left it: the three vectors of the setup
		// and the writer's (duplicates: only the job's merge makes it
		// readable again).
		if got, want := len(v3DVs(t, f)), 3+len(hooks); got != want {
			t.Errorf("%d deletion vectors, want %d", got, want)
		}
		res, _ = f.exec.Run(f.ctx, pdmJob(f, "", "a"))
		if res.Outcome != jobs.Succeeded {
			t.Fatalf("next run: %v %v", res.Outcome, res.Err)
		}
		sameContents(t, "after the next run", v3Without(want, "a", 7), f.contents())
		v3AssertDVRules(t, f)
	})
}

// A v2 table with Parquet position deletes upgraded to v3 (scenario (c) of
// the interop suite): the job rewrites them into deletion vectors, one per
// data file; no Parquet position delete is left, the rows read as before,
// and the rows keep the row ids the first v3 commit gave them through a
// later compaction too.
//
// "after a v3 delete": iceberg-go v0.7.0's delete writes a file's vector
// without merging the file's Parquet position deletes into it, and by the
// spec's reader rule the vector alone then applies: ids 2, 4 and 63 read
// again. The job keeps what the table reads (it drops those Parquet rows)
// rather than what the writer meant.
func TestV3PositionDeleteRewriteAfterUpgrade(t *testing.T) {
	for _, deleteAfterUpgrade := range []bool{false, true} {
		name := "job is the first v3 commit"
		if deleteAfterUpgrade {
			name = "after a v3 delete"
		}
		t.Run(name, func(t *testing.T) {
			f := newFixture(t, streamwriter.MergeOnReadProperties) // v2
			for range 3 {
				f.commit("a", 20) // ids 1..60
			}
			f.commit("b", 10) // ids 61..70
			pdmDelete(t, f, 2, 22, 63)
			pdmDelete(t, f, 4, 44)
			txn := f.load().NewTransaction()
			if err := txn.UpgradeFormatVersion(3); err != nil {
				t.Fatal(err)
			}
			if _, err := txn.Commit(f.ctx); err != nil {
				t.Fatal(err)
			}
			if deleteAfterUpgrade {
				pdmDelete(t, f, 5, 66)
			}
			parquet := 0
			for _, d := range pdmDeleteFiles(t, f) {
				if !table.IsDeletionVector(d.df) {
					parquet++
				}
			}
			if parquet == 0 {
				t.Fatal("no Parquet position deletes before the job")
			}
			before := f.contents()
			if deleteAfterUpgrade {
				t.Logf("ids 2, 4, 63 read %d, %d, %d times before the job", before.IDs[2], before.IDs[4], before.IDs[63])
			}
			var lineage map[int64]v3Lineage
			if deleteAfterUpgrade {
				lineage = v3RowLineage(t, f)
			}

			res, rep := f.exec.Run(f.ctx, pdmJob(f, "", "a", "b"))
			if res.Outcome != jobs.Succeeded {
				t.Fatalf("rewrite: %v %v", res.Outcome, res.Err)
			}
			t.Logf("rewrote %d delete files into %d deletion vectors", rep.RewrittenDeleteFiles, rep.AddedDeleteFiles)
			if !deleteAfterUpgrade {
				// The first v3 commit: its manifest list gives the v2-era
				// data manifests their first_row_id, 70 row ids in all
				// (the spec's first row id inheritance).
				snap := f.load().CurrentSnapshot()
				if snap.FirstRowID == nil || *snap.FirstRowID != 0 || snap.AddedRows == nil || *snap.AddedRows != 70 ||
					f.load().Metadata().NextRowID() != 70 {
					t.Errorf("first v3 snapshot: first-row-id %v added-rows %v next-row-id %d; want 0, 70, 70",
						snap.FirstRowID, snap.AddedRows, f.load().Metadata().NextRowID())
				}
			}
			sameContents(t, "after the rewrite", before, f.contents())
			for _, d := range pdmDeleteFiles(t, f) {
				if !table.IsDeletionVector(d.df) {
					t.Errorf("Parquet position delete %s left on a v3 table", d.path)
				}
			}
			if got := len(v3DVs(t, f)); got != 4 {
				t.Errorf("%d deletion vectors, want 4 (one per data file with deletes)", got)
			}
			v3AssertDVRules(t, f)
			got := v3RowLineage(t, f) // every row has lineage now
			if lineage != nil && !maps.Equal(got, lineage) {
				t.Errorf("row lineage changed:\n got %v\nwant %v", got, lineage)
			}
			if res, _ := f.exec.Run(f.ctx, pdmJob(f, "", "a", "b")); res.Outcome != jobs.Noop {
				t.Errorf("second run: %v %v, want noop", res.Outcome, res.Err)
			}
			res, _ = f.exec.Run(f.ctx, applyDeletes(f.job("defaults: {target_file_size: 1MiB, small_file_count: 5, min_input_files: 1}", "a", "b")))
			if res.Outcome != jobs.Succeeded {
				t.Fatalf("compaction: %v %v", res.Outcome, res.Err)
			}
			sameContents(t, "after compaction", before, f.contents())
			if after := v3RowLineage(t, f); !maps.Equal(after, got) {
				t.Errorf("compaction changed row lineage:\n got %v\nwant %v", after, got)
			}
		})
	}
}

// Deletion vectors whose data file is no longer live (a writer that
// removed a data file without its vector) are removed without
// replacement; the others stay as they are.
func TestV3PositionDeleteRewriteRemovesDanglingDVs(t *testing.T) {
	f := newFixture(t, v3Props())
	f.commit("a", 20)
	f.commit("a", 20)
	f.commit("a", 5)
	pdmDelete(t, f, 3, 25, 41, 42)
	before, lineage := v3Without(f.contents(), "a", 43, 44, 45), v3LineageWithout(v3RowLineage(t, f), 43, 44, 45)
	v3DropDataFile(t, f, pdmLocate(t, f, 43)[43].Path)
	if len(v3DVs(t, f)) != 3 {
		t.Fatalf("%d deletion vectors, want 3", len(v3DVs(t, f)))
	}
	res, rep := f.exec.Run(f.ctx, pdmJob(f, "", "a"))
	if res.Outcome != jobs.Succeeded || rep.RewrittenDeleteFiles != 1 || rep.AddedDeleteFiles != 0 || rep.DanglingDeleteRows != 2 {
		t.Fatalf("outcome %v (err %v), %d removed %d added %d dangling rows; want the dangling vector removed alone",
			res.Outcome, res.Err, rep.RewrittenDeleteFiles, rep.AddedDeleteFiles, rep.DanglingDeleteRows)
	}
	sameContents(t, "after the rewrite", before, f.contents())
	if got := v3RowLineage(t, f); !maps.Equal(got, lineage) {
		t.Errorf("row lineage changed:\n got %v\nwant %v", got, lineage)
	}
	if len(v3DVs(t, f)) != 2 {
		t.Errorf("%d deletion vectors, want the two live ones", len(v3DVs(t, f)))
	}
	v3AssertDVRules(t, f)
}
