// Command eqdelete commits equality deletes to a table through iceberg-go,
// as a Flink upsert sink or a Kafka Connect CDC writer does: Spark never
// writes them, so the interop harness (interop/run, the eqdeletes
// scenario) writes them with this and has Spark read the result.
//
//	eqdelete --catalog-uri URI --warehouse W --catalog-name lake \
//	    --equality id --columns id,category db.cdc < keys.json
//
// keys.json is a JSON array of objects, one per delete row, holding the
// --columns (the equality columns and the source columns of the table's
// partition fields, which iceberg-go's writer partitions the rows by). One
// row delta commits the files; it prints {"snapshot_id", "sequence_number",
// "files"} as JSON. Exits 2 on bad arguments, 1 on other errors.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"iter"
	"os"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	_ "github.com/apache/iceberg-go/catalog/sql"
	"github.com/apache/iceberg-go/table"
	"github.com/uptrace/bun/driver/sqliteshim"

	"github.com/icereactor/reactor/tablename"
)

type result struct {
	SnapshotID     int64    `json:"snapshot_id"`
	SequenceNumber int64    `json:"sequence_number"`
	Files          []string `json:"files"`
	Rows           int64    `json:"rows"`
}

func main() {
	os.Exit(run())
}

func run() int {
	fs := flag.NewFlagSet("eqdelete", flag.ContinueOnError)
	uri := fs.String("catalog-uri", "", "SQL catalog DSN (SQLite file URI)")
	warehouse := fs.String("warehouse", "", "warehouse location")
	name := fs.String("catalog-name", "lake", "catalog name, shared by iceberg-go's SQL catalog and Spark's JdbcCatalog")
	equality := fs.String("equality", "", "equality columns, comma-separated")
	columns := fs.String("columns", "", "columns of the input rows, comma-separated (default: --equality)")
	if err := fs.Parse(os.Args[1:]); err != nil {
		return 2
	}
	if fs.NArg() != 1 || *uri == "" || *equality == "" {
		fmt.Fprintln(os.Stderr, "usage: eqdelete --catalog-uri URI --equality COLS [--columns COLS] namespace.table < rows.json")
		return 2
	}
	if *columns == "" {
		*columns = *equality
	}
	ident, err := tablename.Parse(fs.Arg(0))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	res, err := commit(context.Background(), *name, iceberg.Properties{
		"type": "sql", "uri": *uri, "warehouse": *warehouse,
		"sql.driver": sqliteshim.ShimName, "sql.dialect": "sqlite",
	}, ident, strings.Split(*equality, ","), strings.Split(*columns, ","))
	if err != nil {
		fmt.Fprintln(os.Stderr, "eqdelete:", err)
		return 1
	}
	if err := json.NewEncoder(os.Stdout).Encode(res); err != nil {
		return 1
	}
	return 0
}

func commit(ctx context.Context, name string, props iceberg.Properties, ident table.Identifier, equality, columns []string) (result, error) {
	cat, err := catalog.Load(ctx, name, props)
	if err != nil {
		return result{}, fmt.Errorf("open catalog: %w", err)
	}
	tbl, err := cat.LoadTable(ctx, ident)
	if err != nil {
		return result{}, fmt.Errorf("load table: %w", err)
	}
	ids := make([]int, 0, len(equality))
	for _, c := range equality {
		f, ok := tbl.Schema().FindFieldByName(c)
		if !ok {
			return result{}, fmt.Errorf("no column %q", c)
		}
		ids = append(ids, f.ID)
	}
	sel, err := tbl.Schema().Select(true, columns...)
	if err != nil {
		return result{}, fmt.Errorf("columns: %w", err)
	}
	sc, err := table.SchemaToArrowSchema(sel, nil, true, false)
	if err != nil {
		return result{}, fmt.Errorf("arrow schema: %w", err)
	}
	rec, _, err := array.RecordFromJSON(memory.DefaultAllocator, sc, os.Stdin)
	if err != nil {
		return result{}, fmt.Errorf("read rows (a JSON array of objects with %v): %w", columns, err)
	}
	defer rec.Release()
	var records iter.Seq2[arrow.RecordBatch, error] = func(yield func(arrow.RecordBatch, error) bool) { yield(rec, nil) }
	txn := tbl.NewTransaction()
	files, err := txn.WriteEqualityDeletes(ctx, ids, records)
	if err != nil {
		return result{}, fmt.Errorf("write equality deletes: %w", err)
	}
	if err := txn.NewRowDelta(nil).AddDeletes(files...).Commit(ctx); err != nil {
		return result{}, fmt.Errorf("stage row delta: %w", err)
	}
	committed, err := txn.Commit(ctx)
	if err != nil {
		return result{}, fmt.Errorf("commit: %w", err)
	}
	snap := committed.CurrentSnapshot()
	out := result{SnapshotID: snap.SnapshotID, SequenceNumber: snap.SequenceNumber, Rows: rec.NumRows()}
	for _, f := range files {
		out.Files = append(out.Files, f.FilePath())
	}
	return out, nil
}
