package executor

import (
	"context"
	"errors"
	"fmt"

	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"

	"github.com/icereactor/reactor/ownership"
	"github.com/icereactor/reactor/tablename"
)

// ErrCommitRefused: the guard refused a commit before it reached the
// catalog, so nothing of the attempt was committed and its files may go.
var ErrCommitRefused = errors.New("commit refused: this replica may not commit to the table")

// guardWith makes every commit of the executor ask g's CommitDeadline
// first (see Options.Ownership): with replicas, whether this process holds
// the table's lease (package lease), and until when; a commit must not
// outlive it.
func (e *Executor) guardWith(g ownership.Tables) {
	e.guard = g
	e.cat = &guardedCatalog{Catalog: e.cat, guard: g}
}

// checkCommit asks the guard (nil: always allowed).
func (e *Executor) checkCommit(name string) error {
	if e.guard == nil {
		return nil
	}
	if _, err := e.guard.CommitDeadline(name); err != nil {
		return fmt.Errorf("%w: %w", ErrCommitRefused, err)
	}
	return nil
}

// guardedCatalog asks its guard before every CommitTable and hands out
// tables that commit through it, so that a transaction's Commit (which
// goes to the catalog the table was loaded from) is guarded too.
type guardedCatalog struct {
	catalog.Catalog
	guard ownership.Tables
}

func (g *guardedCatalog) LoadTable(ctx context.Context, ident table.Identifier) (*table.Table, error) {
	tbl, err := g.Catalog.LoadTable(ctx, ident)
	if err != nil {
		return nil, err
	}
	return g.wrap(tbl), nil
}

func (g *guardedCatalog) wrap(tbl *table.Table) *table.Table {
	return table.New(tbl.Identifier(), tbl.Metadata(), tbl.MetadataLocation(), tbl.FS, g)
}

func (g *guardedCatalog) CommitTable(ctx context.Context, ident table.Identifier, reqs []table.Requirement,
	updates []table.Update) (table.Metadata, string, error) {
	deadline, err := g.guard.CommitDeadline(tablename.Format(ident))
	if err != nil {
		return nil, "", fmt.Errorf("%w: %w", ErrCommitRefused, err)
	}
	ctx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	return g.Catalog.CommitTable(ctx, ident, reqs, updates)
}

// CommitObserved tells the executor that a commit to table (its qualified
// name, "namespace.table") was just observed: a commit event or a new
// metadata file. A commit of that table that lost a race and is waiting to
// retry attempts at once. It never blocks. It is Options.CommitWatch's
// Observed: reactor run's triggers call that directly.
func (e *Executor) CommitObserved(name string) {
	e.watch.Observed(name)
}
