package objectio

import (
	"context"
	"log/slog"
	"strings"

	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"
)

// RenewingCatalog is cat with the tables it loads reading and writing
// through FileIOs whose credentials are renewed (Credentials): reloaded
// through cat's LoadTable shortly before they expire and when the store
// refuses them. Everything else is cat's; a table's commits go through
// the returned catalog, so a committed table and a refreshed one keep
// renewing. log receives a line per renewal, renewed (when set) is called
// with each renewal's reason.
func RenewingCatalog(cat catalog.Catalog, log *slog.Logger, renewed func(reason string)) catalog.Catalog {
	return &renewingCatalog{Catalog: cat, log: log, renewed: renewed}
}

type renewingCatalog struct {
	catalog.Catalog
	log     *slog.Logger
	renewed func(reason string)
}

func (c *renewingCatalog) LoadTable(ctx context.Context, ident table.Identifier) (*table.Table, error) {
	tbl, err := c.Catalog.LoadTable(ctx, ident)
	if err != nil {
		return nil, err
	}
	reload := func(ctx context.Context) (FSys, error) {
		fresh, err := c.Catalog.LoadTable(ctx, ident)
		if err != nil {
			return nil, err
		}
		return fresh.FS, nil
	}
	creds := NewCredentials(tbl.FS, reload, RenewOptions{Table: strings.Join(ident, "."), Log: c.log, Renewed: c.renewed})
	return table.New(tbl.Identifier(), tbl.Metadata(), tbl.MetadataLocation(), creds.FS, c), nil
}
