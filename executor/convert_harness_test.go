package executor_test

import (
	"fmt"
	"iter"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/icereactor/reactor/jobkind"
	"github.com/icereactor/reactor/jobs"
	"github.com/icereactor/reactor/streamwriter"
)

// eqKey is one row of an equality delete written by eqDelete: the
// partition it goes to, and the values of the columns it holds.
type eqKey struct {
	category string
	id       int64
	payload  string
}

// convJob is a convert_equality_deletes job for the given partitions.
func convJob(f *fixture, categories ...string) jobs.Job {
	j := f.job("", categories...)
	j.Kind = jobkind.ConvertEqualityDeletes
	return j
}

// eqDelete commits one equality delete on the given fields of the demo
// table (1 id, 2 category, 3 payload) through iceberg-go's writer, one
// file per partition of keys.
func eqDelete(t *testing.T, f *fixture, fields []int, keys ...eqKey) {
	t.Helper()
	tbl := f.load()
	cols := slices.Clone(fields)
	if !slices.Contains(cols, 2) {
		cols = append(cols, 2) // the partition source column routes the rows
	}
	slices.Sort(cols)
	var nested []iceberg.NestedField
	for _, id := range cols {
		fld, ok := tbl.Schema().FindFieldByID(id)
		if !ok {
			t.Fatalf("no field %d", id)
		}
		nested = append(nested, fld)
	}
	sc, err := table.SchemaToArrowSchema(iceberg.NewSchema(0, nested...), nil, true, false)
	if err != nil {
		t.Fatal(err)
	}
	b := array.NewRecordBuilder(memory.DefaultAllocator, sc)
	defer b.Release()
	for _, k := range keys {
		for i, id := range cols {
			switch id {
			case 1:
				b.Field(i).(*array.Int64Builder).Append(k.id)
			case 2:
				b.Field(i).(*array.StringBuilder).Append(k.category)
			case 3:
				b.Field(i).(*array.StringBuilder).Append(k.payload)
			}
		}
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	txn := tbl.NewTransaction()
	files, err := txn.WriteEqualityDeletes(f.ctx, fields, iter.Seq2[arrow.RecordBatch, error](func(yield func(arrow.RecordBatch, error) bool) {
		yield(rec, nil)
	}))
	if err != nil {
		t.Fatal(err)
	}
	if err := txn.NewRowDelta(nil).AddDeletes(files...).Commit(f.ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := txn.Commit(f.ctx); err != nil {
		t.Fatal(err)
	}
}

// idKeys are equality-delete keys on id alone, in one partition.
func idKeys(category string, ids ...int64) []eqKey {
	out := make([]eqKey, len(ids))
	for i, id := range ids {
		out[i] = eqKey{category: category, id: id, payload: streamwriter.Payload(id)}
	}
	return out
}

// eqDeleteFiles counts the live equality delete files of the partitions.
func eqDeleteFiles(t *testing.T, f *fixture, categories ...string) int {
	t.Helper()
	n := 0
	for _, c := range categories {
		n += len(deleteFilesByKind(t, f, c)[iceberg.EntryContentEqDeletes])
	}
	return n
}

// sameContents fails t unless the table reads what want held: the same
// rows (count and checksum) and the same multiset of ids.
func sameContents(t *testing.T, what string, want, got streamwriter.Contents) {
	t.Helper()
	if got.Total != want.Total {
		t.Errorf("%s: table reads %v, before %v", what, got.Total, want.Total)
	}
	if fmt.Sprint(got.IDs) != fmt.Sprint(want.IDs) {
		var diff []string
		for id, n := range want.IDs {
			if got.IDs[id] != n {
				diff = append(diff, fmt.Sprintf("id %d: %d -> %d", id, n, got.IDs[id]))
			}
		}
		for id, n := range got.IDs {
			if _, ok := want.IDs[id]; !ok {
				diff = append(diff, fmt.Sprintf("id %d: 0 -> %d", id, n))
			}
		}
		slices.Sort(diff)
		t.Errorf("%s: ids changed: %s", what, strings.Join(diff, ", "))
	}
}

// convertedOnDisk lists the conversion's output files under the table.
func convertedOnDisk(t *testing.T, f *fixture) []string {
	t.Helper()
	var out []string
	if err := walk(f.load().Location(), func(p string) {
		if strings.HasSuffix(p, "-converted-deletes.parquet") {
			out = append(out, p)
		}
	}); err != nil {
		t.Fatal(err)
	}
	return out
}

func itoa(n int) string { return strconv.Itoa(n) }

// trimFileScheme is a local path of a file:// location.
func trimFileScheme(p string) string { return strings.TrimPrefix(p, "file://") }
