package executor_test

import (
	"fmt"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/icereactor/reactor/executor"
	"github.com/icereactor/reactor/jobs"
)

// BenchmarkOrphanDeletion: what the deletion guard costs a real cleanup.
// A table with 300 snapshots (real Parquet, one file per commit) and 1,000
// tracked strays, all two hours old; each iteration runs the dry run (the
// guard's canonical check, stat and reference check, no re-read) and the
// real deletion (the same plus the catalog re-reads and the deletes), in
// rotating order, and rewrites the strays untimed. reread=amortised is
// what reactor does (re-read unless the last re-read ended less than it
// took ago); reread=every-delete re-reads before every delete.
//
//	go test -run '^$' -bench OrphanDeletion -benchtime 5x -count 3 ./executor/
func BenchmarkOrphanDeletion(b *testing.B) {
	const snapshots, strays = 300, 1000
	f := newFixture(b, nil)
	for i := range snapshots {
		f.commit(fmt.Sprintf("c%02d", i%10), 5)
	}
	dir := strings.TrimPrefix(f.load().Location(), "file://")
	var cands []jobs.OrphanCandidate
	var paths []string
	for i := range strays {
		p := filepath.Join(dir, "data", fmt.Sprintf("category=c%02d", i%10), fmt.Sprintf("00000-%d-failed-write.parquet", i))
		paths = append(paths, p)
		cands = append(cands, jobs.OrphanCandidate{Location: "file://" + p, Size: 26, Created: time.Now().Add(-2 * time.Hour)})
	}
	writeStrays := func() {
		for _, p := range paths {
			writeFile(b, p)
		}
		ageTree(b, dir)
	}
	dry := f.orphanJob(false, jobs.OrphansFromTracking, cands...)
	real := f.orphanJob(true, jobs.OrphansFromTracking, cands...)
	b.Run("reread=amortised", func(b *testing.B) { benchDeletion(b, f, dry, real, strays, writeStrays) })
	b.Run("reread=every-delete", func(b *testing.B) {
		executor.ReReadReferencesBeforeEveryDelete(f.exec)
		benchDeletion(b, f, dry, real, strays, writeStrays)
	})
}

func benchDeletion(b *testing.B, f *fixture, dry, real jobs.Job, strays int, writeStrays func()) {
	var dryTook, realTook time.Duration
	var loads int
	i := 0
	for b.Loop() {
		b.StopTimer()
		writeStrays()
		runtime.GC()
		b.StartTimer()
		for k := range 2 {
			start := time.Now()
			if (i+k)%2 == 0 {
				res, rep := f.exec.Run(f.ctx, dry)
				if res.Outcome != jobs.Succeeded || len(rep.Orphans.Orphans) != strays || rep.Orphans.DeletedFiles != 0 {
					b.Fatalf("dry run: %v %v %d orphans", res.Outcome, res.Err, len(rep.Orphans.Orphans))
				}
				dryTook += time.Since(start)
				continue
			}
			before := f.icat.loadCount()
			res, rep := f.exec.Run(f.ctx, real)
			if res.Outcome != jobs.Succeeded || rep.Orphans.DeletedFiles != strays {
				b.Fatalf("deletion: %v %v %d deleted", res.Outcome, res.Err, rep.Orphans.DeletedFiles)
			}
			realTook += time.Since(start)
			loads += f.icat.loadCount() - before
			b.StopTimer()
			writeStrays() // for the dry run, if it comes second
			b.StartTimer()
		}
		i++
	}
	n := float64(b.N)
	b.ReportMetric(dryTook.Seconds()/n, "dry-s/op")
	b.ReportMetric(realTook.Seconds()/n, "delete-s/op")
	b.ReportMetric(realTook.Seconds()/dryTook.Seconds(), "delete/dry")
	b.ReportMetric(float64(loads)/n, "loads/op")
}
