// Package jobkind names what a maintenance job does: the one list of job
// kinds, in the order a table's due jobs run, with each kind's name on the
// wire (job events, metrics labels, the thresholds file's spark rules),
// its base priority and whether a Spark procedure can run it.
//
// It is the leaf of reactor's job vocabulary and imports nothing of
// reactor's, so every layer may use it: package thresholds validates the
// spark rules' kinds against it, metrics starts every kind's series at
// zero from it, the planner keeps its per-partition settled kinds in a
// [Set]. The rest of the vocabulary (a job, its reasons, its result) is
// package jobs, which sits above thresholds because a job carries its
// table's resolved settings; the kinds sit below it, so thresholds can
// name them without an import cycle.
//
// It must not decide when a job is due (the planner's) or how it runs
// (the executor's).
package jobkind

import "fmt"

// Kind is what a job does. The zero value is no kind: a job nobody filled
// in is never mistaken for a compaction. Not a uint8: go vet flags
// string(k) for every integer type but byte and rune, and that
// conversion would spell a kind as one control character instead of its
// name.
type Kind uint16

// The job kinds. A table's due jobs run one at a time, in this order
// (docs/design.md#job-order): metadata over its bounds first (expiry, then
// the manifest rewrite); otherwise compaction, the equality-delete
// conversion, the position-delete rewrite, sort, then the table-wide jobs:
// expiry, the deferred deletion of what expiry unlinked, the manifest
// rewrite, orphan cleanup.
const (
	// Compact is bin-pack compaction of whole partitions.
	Compact Kind = iota + 1
	// ConvertEqualityDeletes replaces a partition's equality delete files
	// by position deletes naming the rows they delete, reading only the
	// equality columns of the data files they apply to and rewriting none
	// (Amoro's minor optimizing).
	ConvertEqualityDeletes
	// RewritePositionDeletes merges a partition's position-delete files
	// into files near the delete target size, dropping entries for data
	// files no longer live, without touching data files (Spark's
	// rewrite_position_delete_files).
	RewritePositionDeletes
	// Sort rewrites whole partitions with their rows in the table's sort
	// or z-order (Spark's rewrite_data_files with strategy sort), in groups
	// of at most max_group_size input bytes.
	Sort
	// ExpireSnapshots expires snapshots past retention (never a branch or
	// tag head) and records the files no remaining snapshot references for
	// deletion once min_reader_margin has passed.
	ExpireSnapshots
	// DeleteExpiredFiles is the later pass of an expiry: once
	// min_reader_margin has passed since the expiry, it deletes the files
	// the expiry unlinked, checking each against the history again.
	DeleteExpiredFiles
	// RewriteManifests merges the table's data manifests, clustered by
	// partition.
	RewriteManifests
	// RemoveOrphans deletes (or, in a dry run, reports) files under the
	// table's location that no snapshot references and that are older than
	// the orphan margin.
	RemoveOrphans

	last = RemoveOrphans
)

// Priority is how soon a due job must start: the executor's pool hands its
// slots to urgent jobs before background ones. The planner decides it when
// it schedules the job (package jobs, PriorityOf), from the kind's base
// priority here and the threshold that made the job due.
type Priority uint8

const (
	// PriorityBackground: maintenance on a cadence of hours or days
	// (age-based expiry, deletion of expired files, orphan cleanup, sort
	// and z-order rewrites, the quiet merge of a partition nobody writes),
	// which a few minutes' wait does not hurt. The zero value: a job
	// nobody ranked waits behind the urgent ones.
	PriorityBackground Priority = iota
	// PriorityUrgent: the jobs that answer writes (compaction,
	// position-delete rewrites) and the metadata jobs that gate a table's
	// compaction when its history or manifest list is over its bound.
	PriorityUrgent
)

// String is the priority's metric label (reactor_job_queue's class).
func (p Priority) String() string {
	if p == PriorityUrgent {
		return "urgent"
	}
	return "background"
}

// kindInfo is what reactor knows of a kind, in one row per kind.
type kindInfo struct {
	// name is the kind on the wire: job events, metric labels, logs,
	// `reactor plan`, the thresholds file. It must stay as it is.
	name string
	// priority is the kind's base priority; package jobs raises an
	// expiry at the snapshot-count bound and lowers a quiet merge.
	priority Priority
	// spark: a Spark procedure runs the kind (package sparkcall renders
	// it). delete_expired_files has none (Spark's expire_snapshots deletes
	// at once), nor has the equality-delete conversion.
	spark bool
}

// kinds is the one table of kinds, indexed by Kind.
var kinds = [...]kindInfo{
	Compact:                {"compact", PriorityUrgent, true},
	ConvertEqualityDeletes: {"convert_equality_deletes", PriorityUrgent, false},
	RewritePositionDeletes: {"rewrite_position_deletes", PriorityUrgent, true},
	Sort:                   {"sort", PriorityBackground, true},
	ExpireSnapshots:        {"expire_snapshots", PriorityBackground, true},
	DeleteExpiredFiles:     {"delete_expired_files", PriorityBackground, false},
	RewriteManifests:       {"rewrite_manifests", PriorityUrgent, true},
	RemoveOrphans:          {"remove_orphans", PriorityBackground, true},
}

// A Set holds at most 8 kinds in one byte; the table must fit it.
var _ = [8 - int(last)]struct{}{}

// All lists every kind, in the order a table's jobs run when all are due
// with nothing over its bound (a new slice each call).
func All() []Kind {
	out := make([]Kind, 0, last)
	for k := Compact; k <= last; k++ {
		out = append(out, k)
	}
	return out
}

// Spark lists the kinds a Spark procedure can run, in All's order: the
// values the thresholds file's spark.rules[].kinds accepts.
func Spark() []Kind {
	var out []Kind
	for _, k := range All() {
		if k.Spark() {
			out = append(out, k)
		}
	}
	return out
}

// Valid reports whether k is one of the kinds.
func (k Kind) Valid() bool { return k >= Compact && k <= last }

// String is the kind's name on the wire ("compact"); an invalid kind
// reads as kind(N).
func (k Kind) String() string {
	if !k.Valid() {
		return fmt.Sprintf("kind(%d)", uint16(k))
	}
	return kinds[k].name
}

// Priority is the kind's base priority.
func (k Kind) Priority() Priority {
	if !k.Valid() {
		return PriorityBackground
	}
	return kinds[k].priority
}

// Spark reports whether a Spark procedure can run the kind.
func (k Kind) Spark() bool { return k.Valid() && kinds[k].spark }

// Parse reads a kind by its name.
func Parse(name string) (Kind, error) {
	for k := Compact; k <= last; k++ {
		if kinds[k].name == name {
			return k, nil
		}
	}
	return 0, fmt.Errorf("unknown job kind %q", name)
}

// MarshalText spells k as String does; an invalid kind is an error.
func (k Kind) MarshalText() ([]byte, error) {
	if !k.Valid() {
		return nil, fmt.Errorf("jobkind: no job kind %d", uint16(k))
	}
	return []byte(k.String()), nil
}

// UnmarshalText reads a kind String spelled.
func (k *Kind) UnmarshalText(b []byte) error {
	v, err := Parse(string(b))
	if err != nil {
		return err
	}
	*k = v
	return nil
}

// Set is a set of kinds in one byte (the planner keeps one per partition).
type Set uint8

// With is s with k added; an invalid kind adds nothing.
func (s Set) With(k Kind) Set {
	if !k.Valid() {
		return s
	}
	return s | 1<<(k-1)
}

// Has reports whether s holds k.
func (s Set) Has(k Kind) bool { return k.Valid() && s&(1<<(k-1)) != 0 }

// Kinds lists the kinds in s, in All's order (nil for the empty set).
func (s Set) Kinds() []Kind {
	if s == 0 {
		return nil
	}
	var out []Kind
	for k := Compact; k <= last; k++ {
		if s.Has(k) {
			out = append(out, k)
		}
	}
	return out
}
