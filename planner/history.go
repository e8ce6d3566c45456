package planner

import (
	"context"
	"fmt"

	"github.com/apache/iceberg-go/table"
)

// referencedLocations returns the normalised locations of every data and
// delete file referenced by any snapshot in tbl's history. Manifests are
// shared between snapshots; each distinct one is read once.
func referencedLocations(ctx context.Context, tbl *table.Table) (map[string]bool, error) {
	fs, err := tbl.FS(ctx)
	if err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	out := map[string]bool{}
	for _, snap := range tbl.Metadata().Snapshots() {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		manifests, err := snap.Manifests(fs)
		if err != nil {
			return nil, fmt.Errorf("manifest list of snapshot %d: %w", snap.SnapshotID, err)
		}
		for _, m := range manifests {
			if seen[m.FilePath()] {
				continue
			}
			seen[m.FilePath()] = true
			for entry, err := range m.Entries(fs, false) {
				if err != nil {
					return nil, fmt.Errorf("manifest %s: %w", m.FilePath(), err)
				}
				out[normalizeLocation(entry.DataFile().FilePath())] = true
			}
		}
	}
	return out, nil
}
