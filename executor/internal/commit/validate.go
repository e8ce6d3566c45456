package commit

import (
	"bytes"
	"errors"
	"fmt"

	"github.com/apache/iceberg-go"
	iceio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"

	"github.com/icereactor/reactor/executor/internal/datapath"
	"github.com/icereactor/reactor/jobs"
)

// Reasons a staged rewrite can no longer be committed as it is. Neither is a
// race that retrying the same commit can win: the outputs themselves are
// stale, so the batch is abandoned and its outputs deleted.
var (
	// ErrInputsGone: a concurrent commit removed one of the rewrite's
	// input files (another rewrite or an overwrite got there first).
	ErrInputsGone = errors.New("rewrite inputs no longer live")
	// ErrNewDeletes: a concurrent commit added deletes that apply to the
	// rewrite's inputs; committing the outputs would resurrect those rows.
	ErrNewDeletes = errors.New("new deletes against rewrite inputs")
	// ErrDiverged: the snapshot the rewrite was planned on is no longer an
	// ancestor of the current one (rollback, or expired under us).
	ErrDiverged = errors.New("table history diverged from the planned snapshot")
)

// NewDeletesError is ErrNewDeletes naming the snapshot that added the
// deletes: a job that plans again on their account logs which commit it
// lost to.
type NewDeletesError struct {
	SnapshotID int64
	// What the snapshot added, e.g. "added equality deletes <path>".
	What string
}

func (e *NewDeletesError) Error() string {
	return fmt.Sprintf("%v: snapshot %d %s", ErrNewDeletes, e.SnapshotID, e.What)
}

func (e *NewDeletesError) Unwrap() error { return ErrNewDeletes }

// NewDeletesBy returns ErrNewDeletes for what snapshot snapID added.
func NewDeletesBy(snapID int64, what string) error {
	return &NewDeletesError{SnapshotID: snapID, What: what}
}

// RewriteInputs describes the data files one commit replaces.
type RewriteInputs struct {
	paths      map[string]struct{}
	partitions map[string]struct{} // partition key of each input
	keys       *jobs.Keyer
	global     bool // an input is unpartitioned: equality deletes anywhere apply
	meta       table.Metadata
}

func NewRewriteInputs(meta table.Metadata, files []iceberg.DataFile) RewriteInputs {
	in := RewriteInputs{paths: map[string]struct{}{}, partitions: map[string]struct{}{}, keys: jobs.NewKeyer(meta), meta: meta}
	for _, df := range files {
		in.paths[df.FilePath()] = struct{}{}
		in.partitions[in.keys.Key(df.SpecID(), df.Partition())] = struct{}{}
		if in.unpartitioned(df) {
			in.global = true
		}
	}
	return in
}

// CheckSince re-validates a rewrite planned on snapshot baseID against the
// table's current snapshot: every snapshot committed since then is read
// (only the manifests it added) and the rewrite is refused if one of them
// removed an input or added a delete that may apply to an input. This is
// the check iceberg-go runs between a transaction's base and the catalog
// head, extended back to the snapshot the outputs were actually read from.
func CheckSince(fs iceio.IO, meta table.Metadata, baseID int64, in RewriteInputs) error {
	return EntriesSince(fs, meta, baseID, false, in.ConflictsWith)
}

// EntriesSince calls visit with every manifest entry the snapshots
// committed after baseID (up to meta's current one) wrote, reading only the
// manifests each of them added (only delete manifests with deletesOnly). A
// baseID that is no longer an ancestor is ErrDiverged.
func EntriesSince(fs iceio.IO, meta table.Metadata, baseID int64, deletesOnly bool,
	visit func(snapID int64, entry iceberg.ManifestEntry) error) error {
	cur := meta.CurrentSnapshot()
	if cur == nil {
		return fmt.Errorf("%w: table has no current snapshot", ErrDiverged)
	}
	var newer []*table.Snapshot
	for s := cur; s.SnapshotID != baseID; {
		newer = append(newer, s)
		if s.ParentSnapshotID == nil {
			return fmt.Errorf("%w: snapshot %d is not an ancestor of %d", ErrDiverged, baseID, cur.SnapshotID)
		}
		if s = meta.SnapshotByID(*s.ParentSnapshotID); s == nil {
			return fmt.Errorf("%w: ancestry of %d is incomplete", ErrDiverged, cur.SnapshotID)
		}
	}
	for _, snap := range newer {
		manifests, err := snap.Manifests(fs)
		if err != nil {
			return fmt.Errorf("read manifest list of snapshot %d: %w", snap.SnapshotID, err)
		}
		for _, m := range manifests {
			if m.SnapshotID() != snap.SnapshotID || (deletesOnly && m.ManifestContent() != iceberg.ManifestContentDeletes) {
				continue
			}
			for entry, err := range m.Entries(fs, false) {
				if err != nil {
					return fmt.Errorf("read manifest %s: %w", m.FilePath(), err)
				}
				if entry.SnapshotID() != snap.SnapshotID {
					continue
				}
				if err := visit(snap.SnapshotID, entry); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

func (in RewriteInputs) ConflictsWith(snapID int64, entry iceberg.ManifestEntry) error {
	df := entry.DataFile()
	switch df.ContentType() {
	case iceberg.EntryContentData:
		if entry.Status() == iceberg.EntryStatusDELETED {
			if _, ok := in.paths[df.FilePath()]; ok {
				return fmt.Errorf("%w: snapshot %d removed %s", ErrInputsGone, snapID, df.FilePath())
			}
		}
		return nil
	case iceberg.EntryContentEqDeletes:
		if entry.Status() != iceberg.EntryStatusADDED {
			return nil
		}
		if in.global || in.unpartitioned(df) || in.hasPartition(df) {
			return NewDeletesBy(snapID, "added equality deletes "+df.FilePath())
		}
		return nil
	case iceberg.EntryContentPosDeletes:
		if entry.Status() != iceberg.EntryStatusADDED {
			return nil
		}
		if ref := ReferencedDataFile(df); ref != "" {
			if _, ok := in.paths[ref]; ok {
				return NewDeletesBy(snapID, fmt.Sprintf("added position deletes %s for %s", df.FilePath(), ref))
			}
			return nil
		}
		if in.hasPartition(df) || in.unpartitioned(df) {
			return NewDeletesBy(snapID, "added partition-scoped position deletes "+df.FilePath())
		}
	}
	return nil
}

// unpartitioned reports whether df was written with an unpartitioned spec,
// including one whose fields were all voided by partition evolution: scan
// planning applies such an equality delete to every data file, though its
// partition tuple is not empty.
func (in RewriteInputs) unpartitioned(df iceberg.DataFile) bool {
	if len(df.Partition()) == 0 {
		return true
	}
	spec := in.meta.PartitionSpecByID(int(df.SpecID()))
	return spec != nil && spec.IsUnpartitioned()
}

func (in RewriteInputs) hasPartition(df iceberg.DataFile) bool {
	_, ok := in.partitions[in.keys.Key(df.SpecID(), df.Partition())]
	return ok
}

// ReferencedDataFile is the single data file a position delete applies to,
// or "" when it is partition-scoped: referenced_data_file when set, else
// equal file_path bounds (how writers that predate the field mark it).
func ReferencedDataFile(df iceberg.DataFile) string {
	if ref := df.ReferencedDataFile(); ref != nil && *ref != "" {
		return *ref
	}
	lower, upper := df.LowerBoundValues()[datapath.FilePathFieldID], df.UpperBoundValues()[datapath.FilePathFieldID]
	if len(lower) == 0 || !bytes.Equal(lower, upper) {
		return ""
	}
	return string(lower)
}
