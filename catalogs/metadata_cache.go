package catalogs

import (
	"container/list"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/apache/iceberg-go/catalog"
	sqlcat "github.com/apache/iceberg-go/catalog/sql"
	"github.com/apache/iceberg-go/table"
)

// Parsing a table's metadata file is a large CPU cost of keeping tables
// (a quarter of reactor's CPU in the 5 commits/s soak, BENCHMARKS.md): the
// planner's refresh, every job attempt's load and the table a commit
// returns each parsed the same immutable file again. So a catalog whose
// current metadata location can be read cheaply (the SQL catalog: one
// indexed row) is asked for that first, and the file parsed last for the
// table is answered from memory; only a new metadata file is parsed. A
// table written every few hundred milliseconds has a new file at nearly
// every load, so what this saves is the loads of tables that did not move
// (a job's attempts between two writer commits, polling an idle fleet).
// Metadata files are immutable and named uniquely (a version and a UUID),
// so an entry can never be stale: the location comes from the catalog on
// every load, and a table dropped and created again writes new files under
// new names.
//
// It is off unless Config.MetadataCacheBytes asks for it: measured in the
// soak (one table at 5 commits/s) it cut metadata parsing by a fifth but
// not reactor's CPU per commit (18.6 ms with it, 17.6 before it), and on a
// fleet (200 tables at one commit per 10 s) it cost more than it saved:
// 4.3 against 3.7 ms per commit, 235 against 158 MiB, two catalog calls
// per commit against one (the location read before each load).
// BENCHMARKS.md section 27.

// metadataCache holds, per table, the parsed metadata of the last file
// this process read or committed (an older file of a table is never asked
// for again: a load asks for the catalog's current one), least recently
// used tables first out when the bound is reached.
type metadataCache struct {
	max int64

	mu      sync.Mutex
	size    int64
	order   *list.List // of *cached, most recent at the front
	byTable map[string]*list.Element

	hits, misses atomic.Int64
}

type cached struct {
	table string
	loc   string
	meta  table.Metadata
	bytes int64
}

func newMetadataCache(maxBytes int64) *metadataCache {
	return &metadataCache{max: maxBytes, order: list.New(), byTable: map[string]*list.Element{}}
}

// get returns the table's metadata parsed from the file at loc, if that is
// the file kept for it.
func (m *metadataCache) get(tbl, loc string) table.Metadata {
	m.mu.Lock()
	defer m.mu.Unlock()
	el, ok := m.byTable[tbl]
	if !ok || el.Value.(*cached).loc != loc {
		m.misses.Add(1)
		return nil
	}
	m.hits.Add(1)
	m.order.MoveToFront(el)
	return el.Value.(*cached).meta
}

// put keeps meta, parsed from the file at loc, as the table's.
func (m *metadataCache) put(tbl, loc string, meta table.Metadata) {
	if loc == "" || meta == nil {
		return
	}
	n := estimateBytes(meta)
	m.mu.Lock()
	defer m.mu.Unlock()
	if el, ok := m.byTable[tbl]; ok {
		old := el.Value.(*cached)
		m.size -= old.bytes
		m.order.Remove(el)
		delete(m.byTable, tbl)
	}
	if n > m.max {
		return
	}
	m.byTable[tbl] = m.order.PushFront(&cached{table: tbl, loc: loc, meta: meta, bytes: n})
	m.size += n
	for m.size > m.max {
		last := m.order.Back()
		c := last.Value.(*cached)
		m.order.Remove(last)
		delete(m.byTable, c.table)
		m.size -= c.bytes
	}
}

// estimateBytes is about what a parsed metadata file holds in memory: its
// snapshots dominate (a summary map and a manifest list path each).
func estimateBytes(meta table.Metadata) int64 {
	n := int64(16 << 10)
	n += int64(len(meta.Snapshots())) * 1200
	n += int64(len(meta.Schemas())) * 4096
	for range meta.SnapshotLogs() {
		n += 48
	}
	for range meta.PreviousFiles() {
		n += 160
	}
	return n
}

// CacheStats are the metadata cache's counts: loads answered from memory
// and loads that parsed.
type CacheStats struct{ Hits, Misses int64 }

// locator reads a table's current metadata location without reading the
// metadata file; errUnlocated when it cannot (yet) for this table.
type locator interface {
	locate(ctx context.Context, ident table.Identifier) (string, error)
	// learn is told the location a full load found, so that it can answer
	// for the table next time.
	learn(ctx context.Context, ident table.Identifier, loc string)
	close() error
}

var errUnlocated = errors.New("metadata location not known without a load")

// sqlLocator reads the SQL catalog's iceberg_tables row (the JDBC catalog's
// schema, shared by Iceberg Java and iceberg-go) on a connection of its own.
type sqlLocator struct {
	db      *sql.DB
	catalog string
	dollar  bool // PostgreSQL's $n placeholders

	mu sync.Mutex
	// nsKeys maps a namespace to the table_namespace value the catalog
	// stores it under (iceberg-go encodes nested namespaces), learnt from
	// a full load.
	nsKeys map[string]string
}

// newSQLLocator opens a locator beside a SQL catalog with props, or nil when
// the catalog is not one it can read.
func newSQLLocator(name string, props map[string]string) (*sqlLocator, error) {
	driver, uri := props[sqlcat.DriverKey], props["uri"]
	if driver == "" || uri == "" {
		return nil, nil
	}
	switch sqlcat.SupportedDialect(props[sqlcat.DialectKey]) {
	case sqlcat.SQLite, sqlcat.MySQL, sqlcat.Postgres:
	default:
		return nil, nil
	}
	db, err := sql.Open(driver, uri)
	if err != nil {
		return nil, fmt.Errorf("metadata locator: %w", err)
	}
	db.SetMaxOpenConns(4)
	return &sqlLocator{db: db, catalog: name, dollar: sqlcat.SupportedDialect(props[sqlcat.DialectKey]) == sqlcat.Postgres,
		nsKeys: map[string]string{}}, nil
}

func (l *sqlLocator) query(q string) string {
	if !l.dollar {
		return q
	}
	var b strings.Builder
	n := 0
	for _, r := range q {
		if r == '?' {
			n++
			fmt.Fprintf(&b, "$%d", n)
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

func nsString(ident table.Identifier) string {
	return strings.Join(catalog.NamespaceFromIdent(ident), "\x1f")
}

func (l *sqlLocator) locate(ctx context.Context, ident table.Identifier) (string, error) {
	l.mu.Lock()
	key, ok := l.nsKeys[nsString(ident)]
	l.mu.Unlock()
	if !ok {
		return "", errUnlocated
	}
	var loc sql.NullString
	err := l.db.QueryRowContext(ctx, l.query(`SELECT metadata_location FROM iceberg_tables
		WHERE catalog_name = ? AND table_namespace = ? AND table_name = ?`),
		l.catalog, key, catalog.TableNameFromIdent(ident)).Scan(&loc)
	if errors.Is(err, sql.ErrNoRows) || err == nil && !loc.Valid {
		return "", fmt.Errorf("%w: %s", catalog.ErrNoSuchTable, formatIdent(ident))
	}
	if err != nil {
		return "", fmt.Errorf("read the metadata location of %s: %w", formatIdent(ident), err)
	}
	return loc.String, nil
}

func (l *sqlLocator) learn(ctx context.Context, ident table.Identifier, loc string) {
	ns := nsString(ident)
	l.mu.Lock()
	_, known := l.nsKeys[ns]
	l.mu.Unlock()
	if known {
		return
	}
	var key string
	err := l.db.QueryRowContext(ctx, l.query(`SELECT table_namespace FROM iceberg_tables
		WHERE catalog_name = ? AND table_name = ? AND metadata_location = ?`),
		l.catalog, catalog.TableNameFromIdent(ident), loc).Scan(&key)
	if err != nil {
		return // the next load tries again
	}
	l.mu.Lock()
	l.nsKeys[ns] = key
	l.mu.Unlock()
}

func (l *sqlLocator) close() error { return l.db.Close() }

// tableIO remembers, per table, the IO its last full load handed out, and
// the scheme of its metadata location: a cached metadata file is handed out
// with it only while the scheme is the same (a relocated table is loaded in
// full again).
type tableIO struct {
	mu  sync.Mutex
	fns map[string]ioOf
}

type ioOf struct {
	scheme string
	fs     table.FSysF
}

func schemeOf(loc string) string {
	if u, err := url.Parse(loc); err == nil {
		return u.Scheme + "://" + u.Host
	}
	return ""
}

func (t *tableIO) get(ident table.Identifier, loc string) (table.FSysF, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	f, ok := t.fns[formatIdent(ident)]
	if !ok || f.scheme != schemeOf(loc) {
		return nil, false
	}
	return f.fs, true
}

func (t *tableIO) put(tbl *table.Table) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.fns == nil {
		t.fns = map[string]ioOf{}
	}
	t.fns[formatIdent(tbl.Identifier())] = ioOf{scheme: schemeOf(tbl.MetadataLocation()), fs: tbl.FS}
}
