package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"time"

	"github.com/apache/arrow-go/v18/parquet/file"

	"github.com/icereactor/reactor/executor"
	"github.com/icereactor/reactor/jobkind"
	"github.com/icereactor/reactor/jobs"
	"github.com/icereactor/reactor/lease"
	"github.com/icereactor/reactor/metrics"
	"github.com/icereactor/reactor/planner"
	"github.com/icereactor/reactor/streamwriter"
	"github.com/icereactor/reactor/thresholds"
)

// killResult is what the SIGKILL of one replica showed.
type killResult struct {
	victim      string
	at          time.Time
	sinceStart  time.Duration // into the phase
	waited      time.Duration // for a job to start on it
	aim         time.Duration // how long into a job it was meant to die
	deadJobs    []jobRun      // running on it when it was killed
	shards      []int         // it held
	takenBy     map[string]int
	takenMax    time.Duration // kill -> the last of its shards held by a survivor
	takenMin    time.Duration
	untaken     int // shards no survivor took
	expiredSeen int // shards whose key was seen deleted or expired
	// The survivors' jobs on the dead replica's tables after the kill.
	survivorJobs, survivorOK int
	firstSurvivorJob         time.Duration // kill -> the first one started
	// deadJobTableJobs: jobs on the dead job's tables run by survivors.
	deadJobTableJobs int
	// What the dead jobs left: data files in their tables that no
	// snapshot references, written while they ran.
	leftFiles, leftWriterFiles int
	leftTruncated              int // of leftFiles: not a whole Parquet file
	leftBytes                  int64
	leftPaths                  []string
	leftErr                    error
	// The orphan cleanup of the killed job's tables, its leftovers aged
	// past the orphan margin floor: files it deleted of leftPaths, and
	// whether the tables' rows were still exact after it.
	cleaned, cleanDeleted int
	cleanedRowsExact      bool
	cleanErr              error
}

// killOne SIGKILLs the last replica mid-job: once a job of its has run
// half the median job time of the window (so it is likely to have written
// output and not yet committed), or after -kill-wait whatever runs.
func (p *phase) killOne(ctx context.Context) {
	victim := p.children[len(p.children)-1]
	k := &p.res.kill
	k.victim = victim.name
	k.aim = medianJobTime(p.jobs.snapshot()) / 2
	t0 := time.Now()
	deadline := t0.Add(p.cfg.killWait)
	for time.Now().Before(deadline) {
		ready := false
		for _, j := range p.jobs.runningOn(victim.name) {
			if time.Since(j.started) >= k.aim {
				ready = true
			}
		}
		if ready {
			break
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(2 * time.Millisecond):
		}
	}
	k.shards = p.leases.shardsOf(victim.name)
	slices.Sort(k.shards)
	k.at = time.Now()
	victim.Kill()
	k.waited = k.at.Sub(t0)
	k.deadJobs = p.jobs.runningOn(victim.name)
	k.sinceStart = k.at.Sub(t0) + p.cfg.duration
	if len(k.deadJobs) == 0 {
		fmt.Fprintf(p.out, "   SIGKILL %s after waiting %s: no job was running on it (none started within -kill-wait)\n",
			victim.name, k.waited.Round(time.Millisecond))
	} else {
		j := k.deadJobs[0]
		fmt.Fprintf(p.out, "   SIGKILL %s while it ran %d job(s), first %s %s on %s started %s before\n",
			victim.name, len(k.deadJobs), j.kind, j.id, j.table, k.at.Sub(j.started).Round(time.Millisecond))
	}
}

// medianJobTime is the median started..finished time of the jobs that
// finished.
func medianJobTime(runs []jobRun) time.Duration {
	var ds []time.Duration
	for _, r := range runs {
		if !r.finished.IsZero() {
			ds = append(ds, r.finished.Sub(r.started))
		}
	}
	if len(ds) == 0 {
		return 0
	}
	slices.Sort(ds)
	return ds[len(ds)/2]
}

// finishKill measures the takeover once the writers stopped.
func (p *phase) finishKill(ctx context.Context) {
	k := &p.res.kill
	if k.victim == "" {
		return
	}
	taken := p.leases.takenAfter(k.shards, k.victim, k.at)
	k.takenBy = map[string]int{}
	for _, c := range taken {
		k.takenBy[c.owner]++
		d := c.at.Sub(k.at)
		k.takenMax = max(k.takenMax, d)
		if k.takenMin == 0 || d < k.takenMin {
			k.takenMin = d
		}
	}
	k.untaken = len(k.shards) - len(taken)
	k.expiredSeen = len(p.leases.expiredAfter(k.shards, k.at))
	inShards := map[int]bool{}
	for _, s := range k.shards {
		inShards[s] = true
	}
	deadTables := map[string]bool{}
	for _, j := range k.deadJobs {
		deadTables[j.table] = true
	}
	for _, r := range p.jobs.snapshot() {
		if r.replica == k.victim || r.started.Before(k.at) || !inShards[lease.ShardOf(r.table, p.cfg.leaseShards)] {
			continue
		}
		if k.survivorJobs == 0 {
			k.firstSurvivorJob = r.started.Sub(k.at)
		}
		k.survivorJobs++
		if r.outcome == "succeeded" || r.outcome == "noop" {
			k.survivorOK++
		}
		if deadTables[r.table] {
			k.deadJobTableJobs++
		}
	}
	for table := range deadTables {
		from := k.at
		for _, j := range k.deadJobs {
			if j.table == table && j.started.Before(from) {
				from = j.started
			}
		}
		if err := p.leftBy(ctx, table, from.Add(-time.Second), k.at.Add(time.Second)); err != nil {
			k.leftErr = err
		}
	}
}

// leftBy counts the data files of table that no snapshot references and
// were written between from and to; a file of exactly -rows rows is a
// writer's (a commit attempt that lost a race), the rest a job's output
// (whole, or cut off mid-write by the kill).
func (p *phase) leftBy(ctx context.Context, name string, from, to time.Time) error {
	k := &p.res.kill
	for _, t := range p.tables {
		if t.name != name {
			continue
		}
		tbl, err := p.cat.LoadTable(ctx, t.ident)
		if err != nil {
			return err
		}
		stray, err := strayFiles(ctx, tbl)
		if err != nil {
			return err
		}
		for _, f := range stray {
			if f.modTime.Before(from) || f.modTime.After(to) {
				continue
			}
			r, err := file.OpenParquetFile(f.path, false)
			if err != nil {
				// Cut off mid-write: only the killed process writes
				// no more of a file it started.
				k.leftFiles++
				k.leftTruncated++
				k.leftBytes += f.size
				k.leftPaths = append(k.leftPaths, f.path)
				continue
			}
			rows := r.NumRows()
			_ = r.Close()
			if rows == int64(p.cfg.rows) {
				k.leftWriterFiles++
				continue
			}
			k.leftFiles++
			k.leftBytes += f.size
			k.leftPaths = append(k.leftPaths, f.path)
		}
	}
	return nil
}

// cleanLeftovers runs what removes a killed job's output: orphan cleanup
// (remove_orphans, deleting), as `reactor orphans TABLE --older-than 24h
// --dry-run=false` runs it for a table with orphan_delete: true. Orphan cleanup deletes only files older than orphan_margin
// (at least its 24h floor), so the leftovers' modification time is first
// moved back past the floor: it stands for the day that passes in a
// deployment. Files younger than the floor stay.
func (p *phase) cleanLeftovers(ctx context.Context, thresholdsFile string) {
	k := &p.res.kill
	if len(k.leftPaths) == 0 {
		return
	}
	cfg, err := thresholds.Load(thresholdsFile)
	if err != nil {
		k.cleanErr = err
		return
	}
	aged := time.Now().Add(-orphanFloor - time.Hour)
	for _, path := range k.leftPaths {
		if err := os.Chtimes(path, aged, aged); err != nil {
			k.cleanErr = err
			return
		}
	}
	exec, err := executor.New(executor.Options{Catalog: p.cat, Logger: p.log, Metrics: metrics.New()})
	if err != nil {
		k.cleanErr = err
		return
	}
	k.cleanedRowsExact = true
	for _, t := range p.tables {
		if !k.deadTable(t.name) {
			continue
		}
		tbl, err := p.cat.LoadTable(ctx, t.ident)
		if err != nil {
			k.cleanErr = err
			return
		}
		job, err := planner.ManualJob(ctx, tbl, cfg, jobkind.RemoveOrphans,
			planner.ManualOptions{OlderThan: orphanFloor, OrphanDelete: true}, time.Now())
		if err != nil {
			k.cleanErr = err
			return
		}
		res, _ := exec.Run(ctx, job)
		if res.Outcome == jobs.Failed {
			k.cleanErr = fmt.Errorf("remove_orphans on %s: %v", t.name, res.Err)
			return
		}
		k.cleaned++
		if tbl, err = p.cat.LoadTable(ctx, t.ident); err == nil {
			var c streamwriter.Contents
			if c, err = streamwriter.Read(ctx, tbl); err == nil && c.Total != t.w.Written() {
				k.cleanedRowsExact = false
			}
		}
		if err != nil {
			k.cleanErr = err
			return
		}
	}
	for _, path := range k.leftPaths {
		if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
			k.cleanDeleted++
		}
	}
}

// orphanFloor is thresholds' orphan_margin_floor default: no orphan
// cleanup deletes a younger file.
const orphanFloor = 24 * time.Hour

func (k *killResult) deadTable(name string) bool {
	for _, j := range k.deadJobs {
		if j.table == name {
			return true
		}
	}
	return false
}
