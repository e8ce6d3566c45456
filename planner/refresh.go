package planner

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"

	"github.com/icereactor/reactor/events"
	"github.com/icereactor/reactor/location"
	"github.com/icereactor/reactor/tablename"
)

// The event path, split so a consumer can coalesce: CheckCommit and
// CommitCovered answer without any IO (a duplicate, a redelivery, an event
// an earlier refresh already covered is acknowledged at once), Refresh
// loads the table once for every event of it that arrived before the
// load started. Apply is the three in a row.

// CheckCommit rejects, without IO, an event this planner must not apply:
// another catalog's (ErrOtherCatalog) or outside the watched namespaces
// (ErrNotWatched).
func (p *Planner) CheckCommit(ev events.CommitEvent) error {
	if ev.Catalog != "" && p.catName != "" && ev.Catalog != p.catName {
		return fmt.Errorf("%w: %q (this reactor serves %q)", ErrOtherCatalog, ev.Catalog, p.catName)
	}
	if !p.cfg.Load().Watches(ev.Namespace) {
		return fmt.Errorf("%w: %s (table %s)", ErrNotWatched, ev.Namespace, ev.QualifiedName())
	}
	return nil
}

// CommitCovered reports whether the table's state already reflects the
// event's commit: its snapshot is in the metadata the state was built
// from, or the event names that metadata file or an older one
// (metadata_location). No catalog round trip.
func (p *Planner) CommitCovered(ev events.CommitEvent) bool {
	p.mu.Lock()
	st, ok := p.tables[ev.QualifiedName()]
	p.mu.Unlock()
	if !ok {
		return false
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.coversSnapshot(ev.SnapshotID) {
		return true
	}
	return ev.MetadataLocation != "" && st.counters.snapshotID != 0 &&
		metadataCovered(st.counters.metadataLocation, ev.MetadataLocation)
}

// Refresh loads the table from the catalog and brings its state up to the
// current snapshot, evaluating its partitions: one refresh covers every
// event of the table that arrived before it started. It returns the table
// it loaded. A table the catalog does not know is ErrUnknownTable; any
// other failure is transient (ErrCatalogUnavailable).
func (p *Planner) Refresh(ctx context.Context, t tablename.Name) (*table.Table, error) {
	name := t.String()
	if !p.ownsTable(name) {
		return nil, fmt.Errorf("%w: %s", ErrNotOwned, name)
	}
	tbl, err := p.cat.LoadTable(ctx, t.Ident())
	if err != nil {
		if errors.Is(err, catalog.ErrNoSuchTable) || errors.Is(err, catalog.ErrNoSuchNamespace) {
			return nil, fmt.Errorf("%w: %s: %w", ErrUnknownTable, name, err)
		}
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, fmt.Errorf("%w: load %s: %w", ErrCatalogUnavailable, name, err)
	}
	if err := p.Observe(ctx, tbl); err != nil {
		return nil, err
	}
	return tbl, nil
}

// ObjectRoute says where an object event goes: its table, and whether it
// is a new metadata file (a commit: it needs the table refreshed) or a
// data file (tracked, no refresh).
type ObjectRoute struct {
	// Table is the object's table.
	Table tablename.Name
	// Metadata: a new metadata file under the table's metadata/.
	Metadata bool
	tl       tableLocation
}

// RouteObject finds the table of an object event. A final outcome (a key
// not in canonical form, an object under no table, other paths) comes back
// with an empty route; ErrOutsideTables and ErrUnclaimed as ApplyObject
// returns them. It may refresh the location index (catalog IO) when no
// known table claims the object; RouteObjectFast never does.
func (p *Planner) RouteObject(ctx context.Context, ev events.ObjectEvent) (ObjectRoute, ObjectOutcome, error) {
	if _, err := location.Canonical(ev.Location()); err != nil {
		out, err := p.refuseObject(ev, err)
		return ObjectRoute{}, out, err
	}
	tl, err := p.locate(ctx, ev.Bucket, ev.Key)
	if err != nil {
		switch {
		case errors.Is(err, ErrOutsideTables):
			return ObjectRoute{}, ObjectOutside, err
		case errors.Is(err, ErrUnclaimed):
			return ObjectRoute{}, ObjectHeld, err
		}
		return ObjectRoute{}, "", err
	}
	return routeIn(tl, ev)
}

// RouteObjectFast is RouteObject for objects a known table claims, without
// any IO; ok is false when the object needs RouteObject.
func (p *Planner) RouteObjectFast(ev events.ObjectEvent) (r ObjectRoute, out ObjectOutcome, err error, ok bool) {
	if _, cerr := location.Canonical(ev.Location()); cerr != nil {
		return ObjectRoute{}, "", nil, false
	}
	tl, found := p.locations.lookup(ev.Bucket, ev.Key)
	if !found {
		return ObjectRoute{}, "", nil, false
	}
	r, out, err = routeIn(tl, ev)
	return r, out, err, true
}

func routeIn(tl tableLocation, ev events.ObjectEvent) (ObjectRoute, ObjectOutcome, error) {
	rel := strings.TrimPrefix(ev.Key, tl.prefix)
	switch {
	case ev.Action == events.ObjectCreated && strings.HasPrefix(rel, "metadata/") && strings.HasSuffix(rel, ".metadata.json"):
		return ObjectRoute{Table: tl.table, Metadata: true, tl: tl}, "", nil
	case strings.HasPrefix(rel, "data/"):
		return ObjectRoute{Table: tl.table, tl: tl}, "", nil
	default:
		return ObjectRoute{}, ObjectIgnored, nil
	}
}

// ObjectCovered reports whether a metadata-file event needs no refresh:
// the table's state already includes that commit.
func (p *Planner) ObjectCovered(r ObjectRoute, ev events.ObjectEvent) bool {
	return r.Metadata && p.metadataApplied(r.Table.String(), ev.Location())
}

// TrackObject applies a data-file event: tracked until a snapshot
// references it, or dropped from tracking on removal.
func (p *Planner) TrackObject(r ObjectRoute, ev events.ObjectEvent) ObjectOutcome {
	return p.trackData(r.tl, ev)
}

// MetadataOutcome is the outcome of a metadata-file event once its table
// was refreshed (tbl, or the refresh's error): a commit the catalog shows,
// a file it does not show yet (ErrNotYetVisible: hold it), a table dropped
// meanwhile (ErrOutsideTables), or the refresh's transient error.
func (p *Planner) MetadataOutcome(r ObjectRoute, ev events.ObjectEvent, tbl *table.Table, refreshErr error) (ObjectOutcome, error) {
	switch {
	case errors.Is(refreshErr, ErrUnknownTable):
		// Dropped (or renamed) since the index was built.
		p.locations.invalidate()
		return ObjectOutside, fmt.Errorf("%w: %s: table %s no longer exists", ErrOutsideTables, boundedLocation(ev.Location()), r.Table)
	case refreshErr != nil:
		return "", refreshErr
	}
	// A catalog writes the metadata file before it commits it (the SQL
	// catalog's row, the REST server's swap), so the notification can come
	// first: until the catalog shows this metadata file (or a later one),
	// the commit is not applied yet: hold it.
	if !metadataVisible(tbl, ev.Location()) {
		return ObjectHeld, fmt.Errorf("%w: %s: the catalog's current metadata of %s is %s", ErrNotYetVisible,
			boundedLocation(ev.Location()), r.Table, tbl.MetadataLocation())
	}
	return ObjectCommit, nil
}
