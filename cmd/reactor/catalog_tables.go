package main

import (
	"context"
	"errors"
	"fmt"
	iofs "io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"

	"github.com/icereactor/reactor/embedded"
	"github.com/icereactor/reactor/redact"
	"github.com/icereactor/reactor/tablename"
)

// The catalog a table command reads, said in its messages: which one it
// searched, and what it holds when the table is not there.

// maxListedTables bounds the tables a "not found" message names.
const maxListedTables = 20

// maxListedNamespaces bounds the namespaces walked to find them: a
// catalog of thousands is not listed whole for an error message.
const maxListedNamespaces = 200

// describeCatalog names a catalog for a message: the embedded SQLite
// catalog and its directory, or the configured type and URI (credentials
// removed).
func describeCatalog(dataDir string, props iceberg.Properties) string {
	if props == nil {
		return "the embedded SQLite catalog in " + absPath(embeddedCatalogDir(dataDir))
	}
	return fmt.Sprintf("the %s catalog at %s", props["type"], redact.String(props["uri"]))
}

func embeddedCatalogDir(dataDir string) string { return filepath.Join(dataDir, "catalog") }

func absPath(p string) string {
	if abs, err := filepath.Abs(p); err == nil {
		return abs
	}
	return p
}

// checkEmbeddedCatalog refuses to go on when dataDir holds no embedded
// catalog: opening one creates it, and a command that only reads (plan,
// health, a dry run) must leave a directory as it found it.
func checkEmbeddedCatalog(dataDir string) error {
	_, err := os.Stat(embedded.CatalogFile(embeddedCatalogDir(dataDir)))
	switch {
	case errors.Is(err, iofs.ErrNotExist):
		return inputErrorf("no embedded catalog in %s: give --data-dir the directory of reactor run (or of reactor demo --keep), or --catalog-uri for another catalog",
			absPath(dataDir))
	case err != nil:
		return fmt.Errorf("embedded catalog: %w", err)
	}
	return nil
}

// tableNotFound is the error for a table the catalog does not have: which
// catalog was searched, and the tables it has (the first maxListedTables).
func tableNotFound(ctx context.Context, cat catalog.Catalog, name, where string) error {
	tables, more, err := listTables(ctx, cat, maxListedTables)
	switch {
	case err != nil:
		return inputErrorf("table %s not found in %s (its tables could not be listed: %v)", name, where, err)
	case len(tables) == 0:
		return inputErrorf("table %s not found in %s, which has no tables", name, where)
	}
	list := strings.Join(tables, ", ")
	if more {
		list += ", ..."
	}
	return inputErrorf("table %s not found in %s; its tables: %s", name, where, list)
}

// listTables lists up to limit tables of cat as namespace.table, sorted
// within each namespace; more reports that there were others.
func listTables(ctx context.Context, cat catalog.Catalog, limit int) (tables []string, more bool, err error) {
	seen := map[string]bool{}
	queue := []table.Identifier{nil}
	walked := 0
	for len(queue) > 0 && walked < maxListedNamespaces {
		parent := queue[0]
		queue = queue[1:]
		children, err := cat.ListNamespaces(ctx, parent)
		if err != nil {
			return nil, false, err
		}
		for _, ns := range children {
			// The SQL catalog lists a parent among its own children.
			key := strings.Join(ns, "\x1f")
			if seen[key] || len(ns) <= len(parent) {
				continue
			}
			seen[key] = true
			walked++
			queue = append(queue, ns)
			for ident, err := range cat.ListTables(ctx, ns) {
				if err != nil {
					return nil, false, err
				}
				if len(tables) == limit {
					return tables, true, nil
				}
				tables = append(tables, tablename.Format(ident))
			}
		}
	}
	return tables, len(queue) > 0, nil
}
