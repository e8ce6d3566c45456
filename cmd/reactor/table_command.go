package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"

	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"

	"github.com/icereactor/reactor/catalogs"
	"github.com/icereactor/reactor/thresholds"
)

// tableCommand is the shared shape of the commands that act on one table
// through the catalog without a worker: health, plan and the one-shot jobs.
// They take the catalog flags of reactor run, a thresholds file and TABLE.
type tableCommand struct {
	fs             *flag.FlagSet
	catalog        *catalogFlags
	thresholdsFile *string
	json           *bool
	records        *recordFlags
	table          string
	ident          table.Identifier
	// readOnly opens the catalog refusing every change: plan, health
	// and dry runs set it before load.
	readOnly bool
}

func newTableCommand(name, description string) *tableCommand {
	c := &tableCommand{fs: newFlagSet(name, name+" [flags] TABLE", description+
		"\n\nTABLE is namespace.table. The catalog flags are those of reactor run; flags may\nalso follow TABLE.")}
	c.catalog = addCatalogFlags(c.fs, "`directory` of the embedded catalog")
	c.records = addRecordFlags(c.fs)
	c.thresholdsFile = c.fs.String("thresholds", "", "thresholds YAML `file`; empty uses the built-in defaults")
	c.json = c.fs.Bool("json", false, "print the result as JSON")
	return c
}

// parse reads args (flags before or after TABLE) and the environment.
// Call it after adding the command's own flags.
func (c *tableCommand) parse(args []string, stdout io.Writer) error {
	annotateEnv(c.fs)
	positional, err := parseFlagsAndArgs(c.fs, args, stdout)
	if err != nil {
		return err
	}
	if c.table, err = oneArg(positional, "TABLE (namespace.table)"); err != nil {
		return err
	}
	if err := applyEnv(c.fs, os.Getenv); err != nil {
		return &usageError{err: err}
	}
	ident, err := parseTableName(c.table)
	if err != nil {
		return err
	}
	c.ident = ident
	return nil
}

// thresholds loads the thresholds file (or the built-in defaults).
func (c *tableCommand) thresholds() (*thresholds.Config, error) {
	if *c.thresholdsFile == "" {
		return thresholds.Default(), nil
	}
	cfg, err := thresholds.Load(*c.thresholdsFile)
	if err != nil {
		return nil, &inputError{err: err}
	}
	return cfg, nil
}

// open opens the catalog and loads the table. close releases the catalog.
func (c *tableCommand) open(ctx context.Context, log *slog.Logger) (cat catalog.Catalog, tbl *table.Table, close func(), err error) {
	cfg, err := c.catalog.config(c.readOnly)
	if err != nil {
		return nil, nil, nil, err
	}
	if cfg.Props == nil {
		if err := checkEmbeddedCatalog(*c.catalog.dataDir); err != nil {
			return nil, nil, nil, err
		}
	}
	cfg.Logger = log
	opened, err := catalogs.Open(ctx, cfg)
	if err != nil {
		return nil, nil, nil, catalogUsage(fmt.Errorf("open catalog: %w", err))
	}
	cat = opened
	close = func() { _ = opened.Close() }
	tbl, err = cat.LoadTable(ctx, c.ident)
	if err != nil {
		defer close()
		if errors.Is(err, catalog.ErrNoSuchTable) || errors.Is(err, catalog.ErrNoSuchNamespace) {
			return nil, nil, nil, tableNotFound(ctx, cat, c.table, describeCatalog(*c.catalog.dataDir, cfg.Props))
		}
		return nil, nil, nil, fmt.Errorf("load %s: %w", c.table, err)
	}
	return cat, tbl, close, nil
}

// writeJSON prints v as indented JSON: the --json output of every command.
func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// load reads the thresholds and opens the table: what every table command
// does first. close releases the catalog.
func (c *tableCommand) load(ctx context.Context, log *slog.Logger) (*thresholds.Config, catalog.Catalog, *table.Table, func(), error) {
	cfg, err := c.thresholds()
	if err != nil {
		return nil, nil, nil, nil, err
	}
	cat, tbl, closeCatalog, err := c.open(ctx, log)
	if err != nil {
		return nil, nil, nil, nil, err
	}
	return cfg, cat, tbl, closeCatalog, nil
}
