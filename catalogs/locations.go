package catalogs

import (
	"context"
	"database/sql"
	"fmt"
	"strings"

	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"
)

// maxNamesPerQuery bounds a batch location query's IN list (SQLite allows
// 32,766 parameters, MySQL and PostgreSQL more).
const maxNamesPerQuery = 500

// MetadataLocations is MetadataLocation for many tables at once: the
// current metadata file of each table it can read cheaply, keyed by the
// table's identifier as tablename spells it (formatIdent), in one catalog
// call per namespace (per 500 tables). A table missing from the answer is
// one to ask MetadataLocation about (not learnt yet, or gone): the polling
// safety net checks the tables due in one tick this way, so that a fleet
// of idle tables costs a fraction of a call per table per interval.
func (c *Catalog) MetadataLocations(ctx context.Context, idents []table.Identifier) (map[string]string, error) {
	if c.locate == nil {
		return nil, ErrNoCheapLocation
	}
	if _, err := c.current(); err != nil {
		return nil, err
	}
	l, ok := c.locate.(*sqlLocator)
	if !ok {
		return nil, ErrNoCheapLocation
	}
	out := make(map[string]string, len(idents))
	for key, group := range l.byNamespaceKey(idents) {
		for start := 0; start < len(group); start += maxNamesPerQuery {
			chunk := group[start:min(start+maxNamesPerQuery, len(group))]
			c.calls.count(CallLocate)
			found, err := bounded(ctx, c.cfg.Timeout, fmt.Sprintf("locate %d tables", len(chunk)),
				func(ctx context.Context) (map[string]string, error) { return l.locateMany(ctx, key, chunk) })
			if err != nil {
				return out, err
			}
			for name, loc := range found {
				out[name] = loc
			}
		}
	}
	return out, nil
}

// byNamespaceKey groups the tables whose namespace's stored key is known
// (learnt from a load) by that key.
func (l *sqlLocator) byNamespaceKey(idents []table.Identifier) map[string][]table.Identifier {
	l.mu.Lock()
	defer l.mu.Unlock()
	groups := map[string][]table.Identifier{}
	for _, ident := range idents {
		if key, ok := l.nsKeys[nsString(ident)]; ok {
			groups[key] = append(groups[key], ident)
		}
	}
	return groups
}

// locateMany reads the rows of the named tables of one namespace.
func (l *sqlLocator) locateMany(ctx context.Context, key string, idents []table.Identifier) (map[string]string, error) {
	args := []any{l.catalog, key}
	byName := make(map[string]table.Identifier, len(idents))
	for _, ident := range idents {
		name := catalog.TableNameFromIdent(ident)
		byName[name] = ident
		args = append(args, name)
	}
	q := `SELECT table_name, metadata_location FROM iceberg_tables
		WHERE catalog_name = ? AND table_namespace = ? AND table_name IN (?` + strings.Repeat(", ?", len(idents)-1) + `)`
	rows, err := l.db.QueryContext(ctx, l.query(q), args...)
	if err != nil {
		return nil, fmt.Errorf("read the metadata locations of %d tables: %w", len(idents), err)
	}
	defer rows.Close()
	out := make(map[string]string, len(idents))
	for rows.Next() {
		var name string
		var loc sql.NullString
		if err := rows.Scan(&name, &loc); err != nil {
			return nil, fmt.Errorf("read the metadata locations of %d tables: %w", len(idents), err)
		}
		if ident, ok := byName[name]; ok && loc.Valid {
			out[formatIdent(ident)] = loc.String
		}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read the metadata locations of %d tables: %w", len(idents), err)
	}
	return out, nil
}
