package catalogs

import (
	"context"
	"errors"
	"fmt"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"
)

// ErrReadOnly marks a change refused by a catalog opened read-only (plan,
// health, dry runs).
var ErrReadOnly = errors.New("catalog opened read-only")

// readOnly refuses every change, so that a command that only reads cannot
// commit by mistake, and so that a Hadoop catalog on an object store can be
// read without accepting its commit risk.
type readOnly struct{ catalog.Catalog }

func refused(op string, ident table.Identifier) error {
	return fmt.Errorf("%w: %s %s refused", ErrReadOnly, op, formatIdent(ident))
}

func (readOnly) CreateTable(_ context.Context, ident table.Identifier, _ *iceberg.Schema, _ ...catalog.CreateTableOpt) (*table.Table, error) {
	return nil, refused("create table", ident)
}

func (readOnly) CommitTable(_ context.Context, ident table.Identifier, _ []table.Requirement, _ []table.Update) (table.Metadata, string, error) {
	return nil, "", refused("commit to", ident)
}

func (readOnly) DropTable(_ context.Context, ident table.Identifier) error {
	return refused("drop", ident)
}

func (readOnly) RenameTable(_ context.Context, from, _ table.Identifier) (*table.Table, error) {
	return nil, refused("rename", from)
}

func (readOnly) CreateNamespace(_ context.Context, ns table.Identifier, _ iceberg.Properties) error {
	return refused("create namespace", ns)
}

func (readOnly) DropNamespace(_ context.Context, ns table.Identifier) error {
	return refused("drop namespace", ns)
}

func (readOnly) UpdateNamespaceProperties(_ context.Context, ns table.Identifier, _ []string, _ iceberg.Properties) (catalog.PropertiesUpdateSummary, error) {
	return catalog.PropertiesUpdateSummary{}, refused("update namespace", ns)
}
