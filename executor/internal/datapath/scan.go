package datapath

import (
	"context"

	"github.com/apache/iceberg-go/table"

	"github.com/icereactor/reactor/objectio"
)

// Scan is tbl's scan reading as many files at once as its object store's
// read concurrency (objectio), or iceberg-go's default (GOMAXPROCS) for
// a local warehouse, where a read waits on a core rather than a round
// trip. The scan's manifest reads in planning use the same bound.
func Scan(ctx context.Context, tbl *table.Table) *table.Scan {
	fsys, err := tbl.FS(ctx)
	if err != nil {
		// The scan reports it when it opens the FileIO itself.
		return tbl.Scan()
	}
	if n := objectio.ReadConcurrency(fsys); n > 0 {
		return tbl.Scan(table.WithMaxConcurrency(n))
	}
	return tbl.Scan()
}
