package ownership

import (
	"errors"
	"time"
)

// Tables says which tables this replica owns. Package lease's Manager
// implements it; worker hands one value to the planner, the triggers, the
// job pool and the executor. Table names are qualified ("namespace.table").
type Tables interface {
	// Owns reports whether this replica owns the table now: its events
	// are applied here, its state kept here and its jobs start here.
	Owns(table string) bool
	// ShardOf is the shard the table hashes to: where an event of a table
	// another replica owns is forwarded, and what a refusal names.
	ShardOf(table string) int
	// CommitDeadline is the check before every commit attempt, stricter
	// than Owns: nil only while this replica holds the table's lease,
	// renewed recently enough that a commit starting now ends before any
	// other replica can own the table. It returns when that permission
	// could run out; a commit must not outlive it. Its errors wrap
	// ErrNotHeld.
	CommitDeadline(table string) (time.Time, error)
}

// ErrNotHeld: this replica does not hold the table's lease (now, or
// recently enough to commit). Package lease's ErrLeaseLost is this error.
var ErrNotHeld = errors.New("table lease not held by this replica")
