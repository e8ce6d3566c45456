package sparkrun

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/apache/spark-connect-go/spark/sparkerrors"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/icereactor/reactor/executor"
	"github.com/icereactor/reactor/jobkind"
	"github.com/icereactor/reactor/sparkcall"
)

const releaseTimeout = 5 * time.Second

// addResult adds one statement's result rows to rep, by the columns the
// procedure returns (sparkcall.ResultColumns). It fails when Spark
// returned other columns than the seeds name (a version that changed the
// procedure), so a count is never silently read as zero.
func addResult(rep *executor.Report, st sparkcall.Statement, columns []string, rows [][]any) error {
	if len(rows) == 0 {
		if st.Procedure == sparkcall.RemoveOrphanFiles {
			return nil // no orphan: no row
		}
		return fmt.Errorf("spark: %s returned no row", st.Procedure)
	}
	want := sparkcall.ResultColumns(st.Procedure)
	for _, c := range want {
		if !slices.Contains(columns, c) {
			return fmt.Errorf("spark: %s returned columns %v, want %v", st.Procedure, columns, want)
		}
	}
	if st.Procedure == sparkcall.RemoveOrphanFiles {
		i := slices.Index(columns, "orphan_file_location")
		for _, r := range rows {
			loc, ok := r[i].(string)
			if !ok {
				return fmt.Errorf("spark: orphan_file_location is %T, want a string", r[i])
			}
			// Spark reports no size.
			rep.Orphans.Orphans = append(rep.Orphans.Orphans, executor.OrphanFile{Location: loc})
		}
		return nil
	}
	if len(rows) != 1 {
		return fmt.Errorf("spark: %s returned %d rows, want 1", st.Procedure, len(rows))
	}
	get := func(name string) (int64, error) {
		v := rows[0][slices.Index(columns, name)]
		n, ok := toInt64(v)
		if !ok {
			return 0, fmt.Errorf("spark: %s.%s is %T (%v), want an integer", st.Procedure, name, v, v)
		}
		return n, nil
	}
	counts := map[string]int64{}
	for _, c := range want {
		n, err := get(c)
		if err != nil {
			return err
		}
		counts[c] = n
	}
	switch st.Procedure {
	case sparkcall.RewriteDataFiles:
		rep.RewrittenDataFiles += int(counts["rewritten_data_files_count"])
		rep.AddedDataFiles += int(counts["added_data_files_count"])
		rep.RewrittenBytes += counts["rewritten_bytes_count"]
		rep.FailedDataFiles += int(counts["failed_data_files_count"])
		rep.RemovedDeleteFiles += int(counts["removed_delete_files_count"])
	case sparkcall.RewritePositionDeleteFiles:
		rep.RewrittenDeleteFiles += int(counts["rewritten_delete_files_count"])
		rep.AddedDeleteFiles += int(counts["added_delete_files_count"])
		rep.RewrittenDeleteBytes += counts["rewritten_bytes_count"]
		rep.AddedDeleteBytes += counts["added_bytes_count"]
	case sparkcall.ExpireSnapshots:
		x := &rep.Expiry
		x.DeletedDataFiles += int(counts["deleted_data_files_count"])
		x.DeletedPositionDeleteFiles += int(counts["deleted_position_delete_files_count"])
		x.DeletedEqualityDeleteFiles += int(counts["deleted_equality_delete_files_count"])
		x.DeletedManifests += int(counts["deleted_manifest_files_count"])
		x.DeletedManifestLists += int(counts["deleted_manifest_lists_count"])
		x.DeletedStatisticsFiles += int(counts["deleted_statistics_files_count"])
	case sparkcall.RewriteManifests:
		rep.ManifestsRewritten += int(counts["rewritten_manifests_count"])
		rep.ManifestsAdded += int(counts["added_manifests_count"])
	default:
		return fmt.Errorf("spark: no result mapping for procedure %s", st.Procedure)
	}
	return nil
}

func toInt64(v any) (int64, bool) {
	switch n := v.(type) {
	case int64:
		return n, true
	case int32:
		return int64(n), true
	case int16:
		return int64(n), true
	case int8:
		return int64(n), true
	case int:
		return int64(n), true
	}
	return 0, false
}

// changedNothing reports whether a statement's counts say it did nothing.
func changedNothing(kind jobkind.Kind, before, after executor.Report) bool {
	switch kind {
	case jobkind.Compact, jobkind.Sort:
		return after.RewrittenDataFiles == before.RewrittenDataFiles && after.RemovedDeleteFiles == before.RemovedDeleteFiles
	case jobkind.RewritePositionDeletes:
		return after.RewrittenDeleteFiles == before.RewrittenDeleteFiles
	case jobkind.RewriteManifests:
		return after.ManifestsRewritten == before.ManifestsRewritten
	}
	return false
}

// How a statement ended, as far as reactor can tell.
type ending int

const (
	// endedOK: Spark ran the statement and returned its result.
	endedOK ending = iota
	// endedFailed: Spark ran it and failed it; the operation is over.
	endedFailed
	// endedConflict: Spark failed it on a commit conflict it could not
	// retry away (CommitFailedException, ValidationException).
	endedConflict
	// endedInterrupted: reactor interrupted it (timeout, shutdown, or
	// after losing the connection) and Spark confirmed the end.
	endedInterrupted
	// endedUnconfirmed: reactor could not learn that the operation ended
	// (Spark unreachable through interrupt_grace, or a commit whose state
	// Spark does not know).
	endedUnconfirmed
)

func (e ending) String() string {
	return [...]string{"ok", "failed", "conflict", "interrupted", "unconfirmed"}[e]
}

// isTransport reports whether err is the connection's (the server could
// not be reached, or the stream broke), not Spark's verdict on the
// statement.
func isTransport(err error) bool {
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		return true
	}
	code := codes.OK
	var se *sparkerrors.SparkError
	if errors.As(err, &se) {
		if se.SqlState != "" || se.ErrorClass != "" {
			return false
		}
		code = se.Code
	} else if s, ok := status.FromError(err); ok {
		code = s.Code()
	}
	switch code {
	case codes.Unavailable, codes.Canceled, codes.DeadlineExceeded, codes.Aborted:
		return true
	}
	return false
}

// isConflict reports whether Spark failed the statement on a commit
// conflict (Iceberg's CommitFailedException, or a ValidationException
// such as "found new delete for replaced data file").
func isConflict(err error) bool {
	msg := err.Error()
	return strings.Contains(msg, "CommitFailedException") || strings.Contains(msg, "ValidationException")
}

// isUnknownCommit reports whether Spark does not know whether its commit
// went through.
func isUnknownCommit(err error) bool {
	return strings.Contains(err.Error(), "CommitStateUnknownException")
}

// sessionGone reports whether an Interrupt failed because the server no
// longer has the session (it restarted, or released it).
func sessionGone(err error) bool {
	msg := err.Error()
	for _, s := range []string{"SESSION_CHANGED", "SESSION_NOT_FOUND", "SESSION_CLOSED"} {
		if strings.Contains(msg, s) {
			return true
		}
	}
	return false
}

// classify says how a statement that returned err ended, before any
// interrupt.
func classify(err error) ending {
	switch {
	case err == nil:
		return endedOK
	case isUnknownCommit(err):
		return endedUnconfirmed
	case isConflict(err):
		return endedConflict
	case isTransport(err):
		return endedUnconfirmed
	}
	return endedFailed
}
