package scope

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"
	"golang.org/x/sync/errgroup"

	"github.com/icereactor/reactor/tablename"
)

// ListAllNamespaces lists every namespace under parent (nil: the catalog's
// top), depth first.
func ListAllNamespaces(ctx context.Context, cat catalog.Catalog, parent table.Identifier) ([]table.Identifier, error) {
	seen := map[string]bool{}
	var out []table.Identifier
	var walk func(parent table.Identifier) error
	walk = func(parent table.Identifier) error {
		children, err := cat.ListNamespaces(ctx, parent)
		if err != nil {
			return err
		}
		for _, c := range children {
			// The SQL catalog lists the parent among its own children, and
			// some catalogs list only top levels: neither is a new level.
			key := strings.Join(c, "\x1f")
			if seen[key] || (len(parent) > 0 && len(c) <= len(parent)) {
				continue
			}
			seen[key] = true
			out = append(out, c)
			if err := walk(c); err != nil {
				return err
			}
		}
		return nil
	}
	if err := walk(parent); err != nil {
		return nil, err
	}
	return out, nil
}

// buildLoads bounds the tables Build loads at once.
const buildLoads = 8

// Build lists the tables of namespaces (none: every namespace of the
// catalog) and reads each one's roots, for a registry: what a one-shot
// command does once, and what reactor run's location index refresh does on
// its schedule. A table dropped while listing is left out; any other
// failure fails the build, since a registry missing a table could let
// another table delete its files.
func Build(ctx context.Context, cat catalog.Catalog, namespaces []table.Identifier) ([]Roots, error) {
	if len(namespaces) == 0 {
		var err error
		if namespaces, err = ListAllNamespaces(ctx, cat, nil); err != nil {
			return nil, fmt.Errorf("list namespaces: %w", err)
		}
	}
	var (
		mu  sync.Mutex
		out []Roots
	)
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(buildLoads)
	for _, ns := range namespaces {
		for ident, err := range cat.ListTables(ctx, ns) {
			if err != nil {
				if errors.Is(err, catalog.ErrNoSuchNamespace) {
					break
				}
				_ = g.Wait()
				return nil, fmt.Errorf("list tables of %s: %w", strings.Join(ns, "."), err)
			}
			g.Go(func() error {
				tbl, err := cat.LoadTable(gctx, ident)
				if errors.Is(err, catalog.ErrNoSuchTable) {
					return nil
				}
				if err != nil {
					return fmt.Errorf("load %s: %w", tablename.Format(ident), err)
				}
				mu.Lock()
				out = append(out, RootsOf(tablename.Format(ident), tbl.Metadata()))
				mu.Unlock()
				return nil
			})
		}
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	return out, nil
}
