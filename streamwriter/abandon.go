package streamwriter

import (
	"context"
	"fmt"

	"github.com/apache/iceberg-go"
)

// Abandoned is what an abandoned write left in the table's location:
// files no snapshot will ever reference.
type Abandoned struct {
	// DataFiles are the Parquet files under data/.
	DataFiles []string
	// Metadata are the manifests and the manifest list under metadata/.
	Metadata []string
}

// Abandon writes rows new rows to partition category exactly as Commit
// would — data files, then the manifest and manifest list of the snapshot
// — and drops the transaction instead of committing it: a writer that
// crashed between writing its files and committing them. The table does
// not change and the tally does not count the rows (their ids are never
// used again). It returns the files left behind.
func (w *Writer) Abandon(ctx context.Context, category string, rows int) (Abandoned, error) {
	var out Abandoned
	w.mu.Lock()
	first := w.nextID
	w.nextID += int64(rows)
	w.mu.Unlock()

	tbl, err := w.cat.LoadTable(ctx, w.ident)
	if err != nil {
		return out, fmt.Errorf("streamwriter: load %v: %w", w.ident, err)
	}
	rdr, err := records(tbl, category, first, rows)
	if err != nil {
		return out, fmt.Errorf("streamwriter: %w", err)
	}
	defer rdr.Release()
	txn := tbl.NewTransaction()
	if err := txn.Append(ctx, rdr, nil); err != nil {
		return out, fmt.Errorf("streamwriter: write %v: %w", w.ident, err)
	}
	staged, err := txn.StagedTable()
	if err != nil {
		return out, fmt.Errorf("streamwriter: staged %v: %w", w.ident, err)
	}
	snap := staged.CurrentSnapshot()
	fs, err := staged.FS(ctx)
	if err != nil {
		return out, fmt.Errorf("streamwriter: %w", err)
	}
	out.Metadata = append(out.Metadata, snap.ManifestList)
	manifests, err := snap.Manifests(fs)
	if err != nil {
		return out, fmt.Errorf("streamwriter: manifests of the abandoned snapshot: %w", err)
	}
	for _, m := range manifests {
		if m.SnapshotID() != snap.SnapshotID {
			continue // carried over from the table's current snapshot
		}
		out.Metadata = append(out.Metadata, m.FilePath())
		entries, err := m.FetchEntries(fs, true)
		if err != nil {
			return out, fmt.Errorf("streamwriter: manifest %s: %w", m.FilePath(), err)
		}
		for _, e := range entries {
			if e.Status() == iceberg.EntryStatusADDED {
				out.DataFiles = append(out.DataFiles, e.DataFile().FilePath())
			}
		}
	}
	return out, nil
}
