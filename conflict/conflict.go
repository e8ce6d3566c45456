// Package conflict classifies commit errors: it knows how each catalog
// reports a lost optimistic-concurrency race, so callers can retry exactly
// those and nothing else. It must not retry anything itself.
package conflict

import (
	"errors"
	"strings"

	"github.com/apache/iceberg-go/table"
	"github.com/go-sql-driver/mysql"
)

// ErrConflict marks a commit that lost a race with another writer: nothing
// was committed and the same change may be retried against a fresh table.
var ErrConflict = errors.New("commit conflict")

// Is reports whether err is a lost optimistic-concurrency race, in
// which case the catalog committed nothing and a retry is safe.
//
// The REST catalog maps HTTP 409 to table.ErrCommitFailed (and iceberg-go's
// validators wrap it), but the SQL catalog checks commit requirements before
// its compare-and-swap and reports a concurrent commit as a plain
// "requirement failed: branch "main" has changed: expected id X, found Y"
// (docs/design.md#pitfall-sql-conflicts). Both mean the same thing here. Every other
// "requirement failed" (a schema or spec change underneath us) is not a
// race we can win by retrying and is left alone.
func Is(err error) bool {
	if err == nil {
		return false
	}
	if errors.Is(err, ErrConflict) || errors.Is(err, table.ErrCommitFailed) {
		return true
	}
	msg := err.Error()
	if !strings.Contains(msg, "requirement failed") {
		return false
	}
	return strings.Contains(msg, "has changed: expected id") ||
		strings.Contains(msg, "was created concurrently")
}

// IsTransient reports whether err is a fault that happened before anything
// was committed and that goes away by itself: SQLite's lock contention
// between two writers of the same catalog database (SQLITE_BUSY survives
// WAL and a busy timeout when a read transaction must upgrade to a write),
// and a JDBC catalog database's serialization failure or deadlock
// (PostgreSQL SQLSTATE 40001 or 40P01, MySQL and MariaDB errors 1213 and
// 1205), which roll the catalog's transaction back.
func IsTransient(err error) bool {
	if err == nil {
		return false
	}
	var state interface{ SQLState() string }
	if errors.As(err, &state) {
		switch state.SQLState() {
		case "40001", "40P01":
			return true
		}
	}
	var my *mysql.MySQLError
	if errors.As(err, &my) && (my.Number == 1213 || my.Number == 1205) {
		return true
	}
	msg := err.Error()
	return strings.Contains(msg, "SQLITE_BUSY") || strings.Contains(msg, "database is locked")
}

// IsRetryable reports whether the same commit may simply be tried again.
func IsRetryable(err error) bool { return Is(err) || IsTransient(err) }
