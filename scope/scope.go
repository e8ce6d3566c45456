// Package scope decides where reactor may delete a table's files: the
// placement half of the one deletion rule (docs/design.md#rule-own-table).
//
// A file is deletable for a table only if
//
//	(a) it lies under one of the table's own roots — its location, its data
//	    path and its metadata path as the metadata reactor loaded from the
//	    catalog names them, and, when the deletion rests on an earlier
//	    decision recorded by reactor, as they were named then too;
//	(b) no other table reactor knows claims it: among every known table's
//	    roots, the deepest one holding the file is this table's;
//	(c) the table's gc.enabled is not false (Iceberg's: anything but
//	    "true" disables it);
//	(d) the table does not lie in an Amazon S3 Tables table bucket
//	    (s3tables.go: AWS maintains those, and their store neither lists
//	    nor deletes objects);
//
// and the table's metadata is complete (every snapshot the snapshot log
// and the refs name is present: a catalog that left historical snapshots
// out makes their files look unreferenced). The history, the lease and the
// margins — the other half of the rule — are the executor's.
//
// A root does not qualify when it lies inside another known table's data or
// metadata directory, or, for a data or metadata path outside the table's
// own location, inside another table's location: a writer who may change a
// table's properties cannot point that table at another table's files. An
// operator may also bound every root to deletion scope prefixes.
//
//   - scope.go: [Roots] (RootsOf: a table's roots from its metadata), [Rule]
//     and [Refusal], a file refused and why.
//   - known.go: [Known], the registry of every table's roots that rule (b)
//     asks, and [Check], the rule for one table in one pass.
//   - catalog.go: [Build], the roots of every table of the watched
//     namespaces, listed from the catalog.
//
// The package reads table metadata and lists the catalog (Build); it never
// touches a file and must not.
package scope

import (
	"fmt"
	"strings"

	"github.com/apache/iceberg-go/table"

	"github.com/icereactor/reactor/location"
)

// Rule names the part of the deletion rule a refused file broke: the values
// of the rule label of reactor_deletions_refused_total.
type Rule string

const (
	// NotCanonical: the location is not in its canonical spelling.
	NotCanonical Rule = "not_canonical"
	// OutsideTable: (a), under none of the table's qualifying roots.
	OutsideTable Rule = "outside_table"
	// OtherTable: (b), another known table claims the location.
	OtherTable Rule = "other_table"
	// GCDisabled: (c), the table's gc.enabled is false.
	GCDisabled Rule = "gc_disabled"
	// PartialMetadata: the loaded metadata leaves snapshots out.
	PartialMetadata Rule = "partial_metadata"
)

// Rules lists every rule (metrics start them at zero).
var Rules = []Rule{NotCanonical, OutsideTable, OtherTable, GCDisabled, PartialMetadata, S3TablesRule}

// Refusal is a file the rule refused to delete, and why.
type Refusal struct {
	Rule     Rule
	Location string
	Detail   string
}

func (r *Refusal) Error() string {
	if r.Location == "" {
		return fmt.Sprintf("deletion refused (%s): %s", r.Rule, r.Detail)
	}
	return fmt.Sprintf("deletion of %s refused (%s): %s", r.Location, r.Rule, r.Detail)
}

// Property keys of where a table's files go, in Iceberg Java's order of
// precedence (LocationProviders: write.data.path, then the deprecated
// object-storage and folder-storage paths).
var dataPathKeys = []string{"write.data.path", "write.object-storage.path", "write.folder-storage.path"}

const metadataPathKey = "write.metadata.path"

// GCEnabledKey is the table property that allows garbage collection.
const GCEnabledKey = "gc.enabled"

// Roots are where one table's files lie, as its metadata names them, each a
// canonical directory ("" when the metadata names none in canonical form).
type Roots struct {
	Table    string
	Location string
	Data     string
	Metadata string
}

// RootsOf reads the roots of the table named name from its metadata.
func RootsOf(name string, meta table.Metadata) Roots {
	r := Roots{Table: name}
	r.Location = dir(meta.Location())
	props := meta.Properties()
	data := ""
	for _, key := range dataPathKeys {
		if v := props[key]; v != "" {
			data = v
			break
		}
	}
	if data == "" && meta.Location() != "" {
		data = strings.TrimRight(meta.Location(), "/") + "/data"
	}
	r.Data = dir(data)
	if v := props[metadataPathKey]; v != "" {
		r.Metadata = dir(v)
	} else if meta.Location() != "" {
		r.Metadata = dir(strings.TrimRight(meta.Location(), "/") + "/metadata")
	}
	return r
}

func dir(loc string) string {
	if loc == "" {
		return ""
	}
	d, err := location.Dir(loc)
	if err != nil {
		return ""
	}
	return d
}

// rootKind tells a location from a data or metadata path.
type rootKind uint8

const (
	kindLocation rootKind = iota
	kindPath              // a data or metadata path
)

// root is one root of a table: its canonical spelling, its identity (what
// ownership compares) and its kind.
type root struct {
	canonical string
	id        string
	kind      rootKind
}

func (r Roots) all() []root {
	var out []root
	add := func(c string, k rootKind) {
		if c == "" {
			return
		}
		id := location.Identity(c)
		for _, o := range out {
			if o.id == id {
				return
			}
		}
		out = append(out, root{canonical: c, id: id, kind: k})
	}
	add(r.Location, kindLocation)
	add(r.Data, kindPath)
	add(r.Metadata, kindPath)
	return out
}

// GCEnabled reads gc.enabled as Iceberg Java does: absent means enabled,
// and any value but "true" (in any case) disables it, so an odd spelling
// ("no", "0", " true") never lets reactor delete where Java would not.
func GCEnabled(meta table.Metadata) bool {
	v, ok := meta.Properties()[GCEnabledKey]
	return !ok || strings.EqualFold(v, "true")
}

// Partial says why meta is not the table's whole history ("" when it is):
// a snapshot its snapshot log or a ref names is missing, as when a REST
// catalog answers in snapshot-loading-mode "refs". Files only such a
// snapshot references would look unreferenced.
func Partial(meta table.Metadata) string {
	for entry := range meta.SnapshotLogs() {
		if meta.SnapshotByID(entry.SnapshotID) == nil {
			return fmt.Sprintf("the snapshot log names snapshot %d, which the loaded metadata leaves out", entry.SnapshotID)
		}
	}
	for name, ref := range meta.Refs() {
		if meta.SnapshotByID(ref.SnapshotID) == nil {
			return fmt.Sprintf("ref %q names snapshot %d, which the loaded metadata leaves out", name, ref.SnapshotID)
		}
	}
	return ""
}

// under reports whether the identity id equals or lies below the identity
// dir.
func under(id, dir string) bool {
	return id == dir || strings.HasPrefix(id, dir+"/")
}

// ancestors returns the directories above the identity id, deepest first,
// down to (and not including) the scheme and authority.
func ancestors(id string) []string {
	var out []string
	for a, ok := parent(id); ok; a, ok = parent(a) {
		out = append(out, a)
	}
	return out
}

// parent is the directory holding the identity id, if it has one below the
// scheme and authority ("s3://bucket" is the highest).
func parent(id string) (string, bool) {
	floor := 0
	if i := strings.Index(id, "://"); i >= 0 {
		floor = i + 3
		if j := strings.IndexByte(id[floor:], '/'); j >= 0 {
			floor += j
		}
	}
	i := strings.LastIndexByte(id, '/')
	if i < floor || i <= 0 {
		return "", false
	}
	up := id[:i]
	if strings.HasSuffix(up, "/") || up == "" {
		return "", false
	}
	return up, true
}
