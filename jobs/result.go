package jobs

import (
	"time"

	"github.com/apache/iceberg-go/table"

	"github.com/icereactor/reactor/deletions"
)

// Outcome is how a job ended, as reported back to the planner.
type Outcome int

const (
	// Succeeded: the job committed; Table is the committed table.
	Succeeded Outcome = iota
	// Noop: nothing worth rewriting was found; the partition is left alone
	// until it is written again.
	Noop
	// GaveUp: every commit attempt conflicted within the retry budget; the
	// partition gets the longer conflict cool-down.
	GaveUp
	// Failed: any other error; the partition gets the normal cool-down.
	Failed
)

func (o Outcome) String() string {
	switch o {
	case Succeeded:
		return "succeeded"
	case Noop:
		return "noop"
	case GaveUp:
		return "gave_up"
	default:
		return "failed"
	}
}

// Result is what the executor reports for a finished job.
type Result struct {
	Outcome Outcome
	// Table is the table after the job's last commit (nil if none).
	Table *table.Table
	Err   error
	// Settled lists tracked locations the job dealt with (deleted, found
	// referenced or gone, or refused for good): the planner stops tracking
	// them.
	Settled []string
	// Deferred are tracked locations the object store says are younger
	// than the orphan margin, with the LastModified it reported: the
	// planner keeps tracking them from that time instead of the
	// notification's eventTime.
	Deferred map[string]time.Time
	// PendingDeletes are the batches of files an expiry unlinked, due for
	// deletion once min_reader_margin has passed.
	PendingDeletes []deletions.Ref
	// NothingToDo names the job's partitions (by key) where it found
	// nothing whose rewrite would change the partition, with why: the
	// planner settles the job's kind for them until they are written
	// again, whatever the job's outcome elsewhere.
	NothingToDo map[string]string
	// OwnSnapshots are snapshots the job committed without reactor's
	// snapshot properties (Spark commits a job's procedure call, and its
	// summary cannot carry reactor.job-id): the planner treats them as its
	// own (not a write; sorted files for a sort job) for as long as it
	// runs. After a restart they read as another writer's once.
	OwnSnapshots []int64
}
