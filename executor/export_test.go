package executor

import (
	"context"
	"time"

	"github.com/apache/iceberg-go/table"

	"github.com/icereactor/reactor/history"
)

// RemovedSnapshots exposes the expiry guard to the external tests.
var RemovedSnapshots = removedSnapshots

// ReplayCommits makes e commit data rewrites the way it did before the
// staged commit path (iceberg-go re-stages every attempt): the peer in the
// commit benchmarks.
func ReplayCommits(e *Executor) { e.replayCommits = true }

// ReReadReferencesBeforeEveryDelete makes e's orphan cleanup re-read the
// table's history before every delete, however recently it read it.
func ReReadReferencesBeforeEveryDelete(e *Executor) { e.referenceMaxAge = 0 }

// UseIcebergWriter makes e write every rewrite group through iceberg-go's
// ExecuteCompactionGroup, as reactor did before its own data path.
func UseIcebergWriter(e *Executor) { e.opts.icebergWriter = true }

// PoisonFreedBuffers makes e's job pools overwrite what Arrow frees and
// never reuse it, so a buffer read after its release shows as garbage.
func PoisonFreedBuffers(e *Executor) { e.opts.poisonFreed = true }

// WalkWholeHistory makes e answer every question about a table's history
// by walking all of it, without history indexes.
func WalkWholeHistory(e *Executor) { e.hist = nil }

// SyncHistory brings e's history index of tbl up to tbl's snapshots, as
// the jobs before a benchmarked one would have.
func SyncHistory(ctx context.Context, e *Executor, tbl *table.Table) error {
	if e.hist == nil {
		return nil
	}
	fs, err := tbl.FS(ctx)
	if err != nil {
		return err
	}
	x, _, err := e.hist.borrow(ctx, tableName(tbl), fs, tbl.Metadata(), history.SyncOptions{})
	if err != nil {
		return err
	}
	e.hist.giveBack(tableName(tbl), x)
	return nil
}

// GuardCommits makes every commit of e ask g first, as Options.Ownership
// does for an executor built with it.
func GuardCommits(e *Executor, g CommitDeadliner) { e.guardWith(commitsOnly{g}) }

// CommitDeadliner is the one method of an ownership.Tables the executor
// asks.
type CommitDeadliner interface {
	CommitDeadline(table string) (time.Time, error)
}

// commitsOnly is a test's guard as an ownership.Tables: the executor never
// asks Owns or ShardOf.
type commitsOnly struct{ CommitDeadliner }

func (commitsOnly) Owns(string) bool   { panic("the executor asks only CommitDeadline") }
func (commitsOnly) ShardOf(string) int { panic("the executor asks only CommitDeadline") }

// MaxRewriteReplans is how often a rewrite plans again after a writer's
// deletes against its inputs.
const MaxRewriteReplans = maxRewriteReplans
