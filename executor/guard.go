package executor

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"
)

// CommitGuard says whether this process may commit to a table now: with
// replicas, whether it holds the table's lease (package lease). It returns
// when the permission could run out; a commit must not outlive it.
type CommitGuard interface {
	CommitDeadline(table string) (time.Time, error)
}

// ErrCommitRefused: the guard refused a commit before it reached the
// catalog, so nothing of the attempt was committed and its files may go.
var ErrCommitRefused = errors.New("commit refused: this replica may not commit to the table")

// guardWith makes every commit of the executor ask g first (see
// Options.CommitGuard).
func (e *Executor) guardWith(g CommitGuard) {
	e.guard = g
	e.cat = &guardedCatalog{Catalog: e.cat, guard: g}
}

// checkCommit asks the guard (nil: always allowed).
func (e *Executor) checkCommit(table string) error {
	if e.guard == nil {
		return nil
	}
	if _, err := e.guard.CommitDeadline(table); err != nil {
		return fmt.Errorf("%w: %w", ErrCommitRefused, err)
	}
	return nil
}

// guardedCatalog asks its guard before every CommitTable and hands out
// tables that commit through it, so that a transaction's Commit (which
// goes to the catalog the table was loaded from) is guarded too.
type guardedCatalog struct {
	catalog.Catalog
	guard CommitGuard
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
	deadline, err := g.guard.CommitDeadline(strings.Join(ident, "."))
	if err != nil {
		return nil, "", fmt.Errorf("%w: %w", ErrCommitRefused, err)
	}
	ctx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	return g.Catalog.CommitTable(ctx, ident, reqs, updates)
}

// unknownUnlessRefused marks a commit error whose outcome the catalog did
// not tell as unknown (its files must stay), unless the guard refused the
// commit before it reached the catalog (nothing committed: they may go).
func unknownUnlessRefused(err error) error {
	if errors.Is(err, ErrCommitRefused) {
		return err
	}
	return fmt.Errorf("%w: %w", errUnknownCommitState, err)
}
