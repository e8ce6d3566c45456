package sparkrun

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/apache/spark-connect-go/spark/sparkerrors"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/icereactor/reactor/executor"
	"github.com/icereactor/reactor/jobkind"
	"github.com/icereactor/reactor/sparkcall"
)

func stmt(procedure string) sparkcall.Statement {
	return sparkcall.Statement{Procedure: procedure, Columns: sparkcall.ResultColumns(procedure)}
}

// TestAddResult maps each procedure's result columns (as Spark types
// them: INT and BIGINT) to the report fields whose job-event counts carry
// the same names.
func TestAddResult(t *testing.T) {
	for _, tc := range []struct {
		kind      jobkind.Kind
		procedure string
		row       []any
		want      map[string]int64
	}{
		{jobkind.Compact, sparkcall.RewriteDataFiles, []any{int32(30), int32(2), int64(123456), int32(1), int32(4)},
			map[string]int64{"rewritten_data_files_count": 30, "added_data_files_count": 2, "rewritten_bytes_count": 123456,
				"failed_data_files_count": 1, "removed_delete_files_count": 4}},
		{jobkind.RewritePositionDeletes, sparkcall.RewritePositionDeleteFiles, []any{int32(12), int32(1), int64(5000), int64(900)},
			map[string]int64{"rewritten_delete_files_count": 12, "added_delete_files_count": 1, "rewritten_bytes_count": 5000, "added_bytes_count": 900}},
		{jobkind.ExpireSnapshots, sparkcall.ExpireSnapshots, []any{int64(3), int64(2), int64(1), int64(7), int64(5), int64(0)},
			map[string]int64{"deleted_data_files_count": 3, "deleted_position_delete_files_count": 2, "deleted_equality_delete_files_count": 1,
				"deleted_manifest_files_count": 7, "deleted_manifest_lists_count": 5, "deleted_statistics_files_count": 0}},
		{jobkind.RewriteManifests, sparkcall.RewriteManifests, []any{int32(40), int32(2)},
			map[string]int64{"rewritten_manifests_count": 40, "added_manifests_count": 2}},
	} {
		t.Run(tc.procedure, func(t *testing.T) {
			var rep executor.Report
			st := stmt(tc.procedure)
			if err := addResult(&rep, st, st.Columns, [][]any{tc.row}); err != nil {
				t.Fatal(err)
			}
			got := rep.CountMap(tc.kind)
			for k, v := range tc.want {
				if got[k] != v {
					t.Errorf("%s = %d, want %d (counts %v)", k, got[k], v, got)
				}
			}
		})
	}
}

func TestAddResultSumsStatements(t *testing.T) {
	// A compaction with delete-triggered partitions is two calls.
	var rep executor.Report
	st := stmt(sparkcall.RewriteDataFiles)
	for _, row := range [][]any{{int32(10), int32(1), int64(100), int32(0), int32(0)}, {int32(5), int32(1), int64(50), int32(0), int32(3)}} {
		if err := addResult(&rep, st, st.Columns, [][]any{row}); err != nil {
			t.Fatal(err)
		}
	}
	if rep.RewrittenDataFiles != 15 || rep.AddedDataFiles != 2 || rep.RewrittenBytes != 150 || rep.RemovedDeleteFiles != 3 {
		t.Fatalf("summed report = %+v", rep)
	}
}

func TestAddResultOrphans(t *testing.T) {
	var rep executor.Report
	st := stmt(sparkcall.RemoveOrphanFiles)
	if err := addResult(&rep, st, nil, nil); err != nil || len(rep.Orphans.Orphans) != 0 {
		t.Fatalf("no orphan: %v, %+v", err, rep.Orphans)
	}
	rows := [][]any{{"s3://b/t/data/x.parquet"}, {"s3://b/t/metadata/y.avro"}}
	if err := addResult(&rep, st, st.Columns, rows); err != nil {
		t.Fatal(err)
	}
	if len(rep.Orphans.Orphans) != 2 || rep.Orphans.Orphans[1].Location != "s3://b/t/metadata/y.avro" {
		t.Fatalf("orphans = %+v", rep.Orphans.Orphans)
	}
}

// A Spark whose procedure returns other columns or types than the seeds
// name is refused: a count is never read as zero by accident.
func TestAddResultRefusesOtherShapes(t *testing.T) {
	st := stmt(sparkcall.RewriteDataFiles)
	for _, tc := range []struct {
		name    string
		columns []string
		rows    [][]any
		want    string
	}{
		{"missing column", st.Columns[:4], [][]any{{int32(1), int32(1), int64(1), int32(0)}}, "returned columns"},
		{"no row", st.Columns, nil, "returned no row"},
		{"two rows", st.Columns, [][]any{{int32(1), int32(1), int64(1), int32(0), int32(0)}, {int32(1), int32(1), int64(1), int32(0), int32(0)}}, "2 rows"},
		{"a string count", st.Columns, [][]any{{"1", int32(1), int64(1), int32(0), int32(0)}}, "want an integer"},
		{"a null count", st.Columns, [][]any{{nil, int32(1), int64(1), int32(0), int32(0)}}, "want an integer"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var rep executor.Report
			err := addResult(&rep, st, tc.columns, tc.rows)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("addResult = %v, want an error saying %q", err, tc.want)
			}
		})
	}
}

// TestClassify: what an error from a statement says about its end. Only
// Spark's own verdict (an error with a SQL state or error class) ends a
// job for sure; a broken connection leaves it open.
func TestClassify(t *testing.T) {
	spark := func(code codes.Code, class, msg string) error {
		se := &sparkerrors.SparkError{Code: code, ErrorClass: class, Message: msg}
		if class != "" {
			se.SqlState = "XX000"
		}
		return sparkerrors.WithType(fmt.Errorf("failed to execute sql: %w", se), sparkerrors.ExecutionError)
	}
	for _, tc := range []struct {
		name string
		err  error
		want ending
	}{
		{"ok", nil, endedOK},
		{"server killed", spark(codes.Unavailable, "", "error reading from server: EOF"), endedUnconfirmed},
		{"raw transport", status.Error(codes.Unavailable, "connection refused"), endedUnconfirmed},
		{"plain error", fmt.Errorf("x: %w", errors.New("y")), endedFailed},
		{"table missing", spark(codes.Internal, "TABLE_OR_VIEW_NOT_FOUND", "The table cannot be found"), endedFailed},
		{"commit conflict", spark(codes.Internal, "", "org.apache.iceberg.exceptions.CommitFailedException: Cannot commit"), endedConflict},
		{"validation", spark(codes.Internal, "", "org.apache.iceberg.exceptions.ValidationException: found new delete for replaced data file"), endedConflict},
		{"unknown commit state", spark(codes.Internal, "", "CommitStateUnknownException: timeout"), endedUnconfirmed},
	} {
		if got := classify(tc.err); got != tc.want {
			t.Errorf("%s: classify(%v) = %s, want %s", tc.name, tc.err, got, tc.want)
		}
	}
}

func TestElideKeepsTheCause(t *testing.T) {
	sql := "CALL `lake`.system.rewrite_data_files(table => 't', options => map('a', 'b'))"
	se := &sparkerrors.SparkError{Code: codes.Unavailable, Message: "error reading from server: EOF"}
	err := elide(sparkerrors.WithType(fmt.Errorf("failed to execute sql: %s: %w", sql, se), sparkerrors.ExecutionError), sql)
	if strings.Contains(err.Error(), "options") || !strings.Contains(err.Error(), "rewrite_data_files(...)") {
		t.Fatalf("elided error = %q", err)
	}
	if classify(err) != endedUnconfirmed {
		t.Fatalf("the elided error no longer classifies as a broken connection")
	}
}
