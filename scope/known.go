package scope

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/apache/iceberg-go/table"

	"github.com/icereactor/reactor/location"
)

// Known is every table reactor knows, by its roots: what rule (b) asks
// whether another table claims a file. It is filled from the catalog (the
// planner's location index refresh in reactor run, Build in a one-shot
// command) and is safe for concurrent use.
type Known struct {
	// limits are the operator's deletion scope, as identities: a root
	// outside all of them never qualifies (none: no limit).
	limits []string

	mu     sync.RWMutex
	tables map[string]Roots
	// dirty: tables changed since the indexes below were built; they are
	// rebuilt at the next question (a discovery adds tables one by one).
	dirty bool
	// paths and locations index every known table's data and metadata
	// paths and locations by identity; claims holds the qualifying roots.
	paths, locations, claims map[string][]string
	ready                    chan struct{}
	filled                   bool
}

// NewKnown makes an empty registry. limits, when given, bound every root
// (the operator's deletion scope); each must be a location.
func NewKnown(limits ...string) (*Known, error) {
	k := &Known{tables: map[string]Roots{}, ready: make(chan struct{})}
	for _, l := range limits {
		d, err := location.Dir(l)
		if err != nil {
			return nil, fmt.Errorf("deletion scope %q: %w", l, err)
		}
		k.limits = append(k.limits, location.Identity(d))
	}
	return k, nil
}

// Replace makes all the tables reactor knows (a full listing of the
// catalog) and marks the registry ready.
func (k *Known) Replace(all []Roots) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.tables = make(map[string]Roots, len(all))
	for _, r := range all {
		k.tables[r.Table] = r
	}
	k.dirty = true
	if !k.filled {
		k.filled = true
		close(k.ready)
	}
}

// Set adds or updates one table (seen since the last full listing).
func (k *Known) Set(r Roots) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if old, ok := k.tables[r.Table]; ok && old == r {
		return
	}
	k.tables[r.Table] = r
	k.dirty = true
}

// Get returns what is known of the table named name.
func (k *Known) Get(name string) (Roots, bool) {
	k.mu.RLock()
	defer k.mu.RUnlock()
	r, ok := k.tables[name]
	return r, ok
}

// Ready is closed once the registry holds a full listing.
func (k *Known) Ready() <-chan struct{} { return k.ready }

// IsReady reports whether a full listing was made.
func (k *Known) IsReady() bool {
	select {
	case <-k.ready:
		return true
	default:
		return false
	}
}

// Wait blocks until the registry holds a full listing or ctx ends.
func (k *Known) Wait(ctx context.Context) error {
	select {
	case <-k.ready:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("the registry of known tables is not built yet: %w", context.Cause(ctx))
	}
}

// Len is how many tables are known.
func (k *Known) Len() int {
	k.mu.RLock()
	defer k.mu.RUnlock()
	return len(k.tables)
}

// fresh rebuilds the indexes if the tables changed since.
func (k *Known) fresh() {
	k.mu.RLock()
	dirty := k.dirty || k.claims == nil
	k.mu.RUnlock()
	if !dirty {
		return
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	if !k.dirty && k.claims != nil {
		return
	}
	k.paths, k.locations, k.claims = map[string][]string{}, map[string][]string{}, map[string][]string{}
	for name, r := range k.tables {
		for _, rt := range r.all() {
			if rt.kind == kindPath {
				k.paths[rt.id] = append(k.paths[rt.id], name)
			} else {
				k.locations[rt.id] = append(k.locations[rt.id], name)
			}
		}
	}
	for name, r := range k.tables {
		for _, rt := range k.qualifyingLocked(r, name) {
			k.claims[rt.id] = append(k.claims[rt.id], name)
		}
	}
	for _, m := range []map[string][]string{k.paths, k.locations, k.claims} {
		for id := range m {
			sort.Strings(m[id])
		}
	}
	k.dirty = false
}

// qualifyingLocked returns the roots of r that qualify, against every known
// table but the one named self.
func (k *Known) qualifyingLocked(r Roots, self string) []root {
	var out []root
	locID := ""
	if r.Location != "" {
		locID = location.Identity(r.Location)
	}
	for _, rt := range r.all() {
		if k.withinLimits(rt.id) && k.intrudesLocked(rt, locID, self) == "" {
			out = append(out, rt)
		}
	}
	return out
}

// intrudesLocked says why the root rt of the table self (whose location
// has identity locID) lies where another table's files are, or "".
func (k *Known) intrudesLocked(rt root, locID, self string) string {
	for _, a := range append([]string{rt.id}, ancestors(rt.id)...) {
		// Nobody claims inside another table's data or metadata directory.
		if other := firstOther(k.paths[a], self); other != "" {
			return fmt.Sprintf("%s lies in %s's data or metadata directory %s", rt.canonical, other, a)
		}
		// A data or metadata path outside the table's own location may not
		// lie inside another table's location.
		if rt.kind == kindPath && (locID == "" || !under(rt.id, locID)) {
			if other := firstOther(k.locations[a], self); other != "" {
				return fmt.Sprintf("%s lies in %s's location %s", rt.canonical, other, a)
			}
		}
	}
	return ""
}

func firstOther(names []string, self string) string {
	for _, n := range names {
		if n != self {
			return n
		}
	}
	return ""
}

func (k *Known) withinLimits(id string) bool {
	if len(k.limits) == 0 {
		return true
	}
	for _, l := range k.limits {
		if under(id, l) {
			return true
		}
	}
	return false
}

// Check is the placement rule for one table, for one pass: built from the
// metadata reactor just loaded from the catalog.
type Check struct {
	known *Known
	self  string
	// roots are the table's qualifying roots.
	roots []root
	// dropped says, for the log, which of its roots did not qualify.
	dropped []string
	// refusal, when set, refuses every file (an S3 table bucket,
	// partial metadata, gc.enabled).
	refusal *Refusal
	// narrowed: a file must also lie under one of recorded (Within).
	narrowed bool
	recorded []string
}

// Check builds the rule for the table named name from the metadata just
// loaded from the catalog.
func (k *Known) Check(name string, meta table.Metadata) Check {
	c := Check{known: k, self: name}
	r := RootsOf(name, meta)
	k.fresh()
	k.mu.RLock()
	var locID string
	if r.Location != "" {
		locID = location.Identity(r.Location)
	}
	for _, rt := range r.all() {
		switch why := k.intrudesLocked(rt, locID, name); {
		case !k.withinLimits(rt.id):
			c.dropped = append(c.dropped, rt.canonical+" is outside the deletion scope")
		case why != "":
			c.dropped = append(c.dropped, why)
		default:
			c.roots = append(c.roots, rt)
		}
	}
	k.mu.RUnlock()
	if p := S3Tables(meta); p != "" {
		c.refusal = &Refusal{Rule: S3TablesRule, Detail: p}
	} else if p := Partial(meta); p != "" {
		c.refusal = &Refusal{Rule: PartialMetadata, Detail: p}
	} else if !GCEnabled(meta) {
		c.refusal = &Refusal{Rule: GCDisabled, Detail: fmt.Sprintf("the table's %s is %q", GCEnabledKey, meta.Properties()[GCEnabledKey])}
	}
	return c
}

// Table is the name the check is for.
func (c Check) Table() string { return c.self }

// Roots are the canonical qualifying roots, for a record of a decision
// (Within narrows a later check to them).
func (c Check) Roots() []string {
	out := make([]string, len(c.roots))
	for i, r := range c.roots {
		out[i] = r.canonical
	}
	return out
}

// Dropped says which of the table's roots did not qualify, and why.
func (c Check) Dropped() []string { return slices.Clone(c.dropped) }

// Refused is the refusal that applies to every file of the table (an S3
// table bucket, partial metadata, gc.enabled false), or nil.
func (c Check) Refused() *Refusal { return c.refusal }

// Within narrows the check to files that also lie under one of recorded
// (a record's roots, written when reactor made the decision it acts on):
// a path only a later property change brought in does not qualify. A
// record with no roots (an earlier version's) narrows to the table's
// location.
func (c Check) Within(recorded []string) Check {
	var ids []string
	for _, r := range recorded {
		if d, err := location.Dir(r); err == nil {
			ids = append(ids, location.Identity(d))
		}
	}
	if len(recorded) == 0 {
		for _, rt := range c.roots {
			if rt.kind == kindLocation {
				ids = append(ids, rt.id)
			}
		}
	}
	c.recorded = append([]string{}, ids...)
	c.narrowed = true
	return c
}

// Holds reports whether the directory loc lies under (or is) one of the
// table's qualifying roots.
func (c Check) Holds(loc string) bool {
	d, err := location.Dir(loc)
	if err != nil {
		return false
	}
	id := location.Identity(d)
	for _, r := range c.roots {
		if under(id, r.id) {
			return true
		}
	}
	return false
}

// Allow decides whether the file at loc may be deleted: its canonical
// spelling, or why not.
func (c Check) Allow(loc string) (string, *Refusal) {
	if c.refusal != nil {
		r := *c.refusal
		r.Location = loc
		return "", &r
	}
	return c.AllowOwnOutput(loc)
}

// AllowOwnOutput is Allow without the table-wide refusals: for a file this
// process wrote in the job that deletes it and that no snapshot ever
// referenced (a losing attempt's output). The table never saw it, so
// gc.enabled, which protects files other tables may share, does not apply,
// as Iceberg's own cleanup of an uncommitted attempt ignores it.
func (c Check) AllowOwnOutput(loc string) (string, *Refusal) {
	canonical, err := location.Canonical(loc)
	if err != nil {
		return "", &Refusal{Rule: NotCanonical, Location: loc, Detail: err.Error()}
	}
	id := location.Identity(canonical)
	var mine *root
	for i := range c.roots {
		if under(id, c.roots[i].id) && (mine == nil || len(c.roots[i].id) > len(mine.id)) {
			mine = &c.roots[i]
		}
	}
	if mine == nil {
		detail := "under none of the table's roots (" + strings.Join(c.Roots(), ", ") + ")"
		if len(c.dropped) > 0 {
			detail += "; not roots: " + strings.Join(c.dropped, "; ")
		}
		return "", &Refusal{Rule: OutsideTable, Location: loc, Detail: detail}
	}
	if c.narrowed && !slices.ContainsFunc(c.recorded, func(r string) bool { return under(id, r) }) {
		return "", &Refusal{Rule: OutsideTable, Location: loc,
			Detail: "not under the roots the table had when reactor recorded the decision (" + strings.Join(c.recorded, ", ") + ")"}
	}
	if owner := c.known.deeperClaim(id, mine.id, c.self); owner != "" {
		return "", &Refusal{Rule: OtherTable, Location: loc, Detail: "it lies under " + owner}
	}
	return canonical, nil
}

// deeperClaim names another table whose qualifying root holds id and is as
// deep as mine or deeper ("" when none).
func (k *Known) deeperClaim(id, mine, self string) string {
	k.fresh()
	k.mu.RLock()
	defer k.mu.RUnlock()
	if len(k.claims) == 0 {
		return ""
	}
	for a := id; len(a) >= len(mine); {
		for _, name := range k.claims[a] {
			if name != self {
				return fmt.Sprintf("table %s's root %s", name, a)
			}
		}
		up, ok := parent(a)
		if !ok {
			break
		}
		a = up
	}
	return ""
}
