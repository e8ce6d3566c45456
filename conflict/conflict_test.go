package conflict

import (
	"errors"
	"fmt"
	"testing"

	"github.com/apache/iceberg-go/table"
	"github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5/pgconn"
)

func TestIs(t *testing.T) {
	tests := []struct {
		name string
		err  error
		want bool
	}{
		{"nil", nil, false},
		{"commit failed", table.ErrCommitFailed, true},
		{"wrapped commit failed", fmt.Errorf("commit: %w", table.ErrCommitFailed), true},
		{"conflicting deletes", table.ErrConflictingDeleteFiles, true},
		{"sql catalog branch moved", errors.New(`requirement failed: branch "main" has changed: expected id 1, found 2`), true},
		{"sql catalog branch created", errors.New(`requirement failed: branch "main" was created concurrently`), true},
		{"schema changed", errors.New("requirement failed: current schema id has changed: expected 0, found 1"), false},
		{"io error", errors.New("open s3://b/k: connection refused"), false},
		{"own sentinel", fmt.Errorf("%w: new deletes", ErrConflict), true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Is(tt.err); got != tt.want {
				t.Errorf("Is(%v) = %v, want %v", tt.err, got, tt.want)
			}
		})
	}
}

func TestIsTransient(t *testing.T) {
	tests := []struct {
		err       error
		transient bool
	}{
		{errors.New("error encountered loading table [db events]: database is locked (5) (SQLITE_BUSY)"), true},
		{errors.New("database is locked"), true},
		{table.ErrCommitFailed, false},
		{errors.New("no such file"), false},
		{fmt.Errorf("error updating table information: %w", &pgconn.PgError{Code: "40P01", Message: "deadlock detected"}), true},
		{fmt.Errorf("commit: %w", &pgconn.PgError{Code: "40001", Message: "could not serialize access"}), true},
		{&pgconn.PgError{Code: "23505", Message: "duplicate key value"}, false},
		{fmt.Errorf("update: %w", &mysql.MySQLError{Number: 1213, Message: "Deadlock found when trying to get lock"}), true},
		{&mysql.MySQLError{Number: 1205, Message: "Lock wait timeout exceeded"}, true},
		{&mysql.MySQLError{Number: 1062, Message: "Duplicate entry"}, false},
		{nil, false},
	}
	for _, tt := range tests {
		if got := IsTransient(tt.err); got != tt.transient {
			t.Errorf("IsTransient(%v) = %v, want %v", tt.err, got, tt.transient)
		}
		if got := IsRetryable(tt.err); got != (tt.transient || Is(tt.err)) {
			t.Errorf("IsRetryable(%v) = %v", tt.err, got)
		}
	}
}
