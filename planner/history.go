package planner

import (
	"context"

	"github.com/apache/iceberg-go/table"

	"github.com/icereactor/reactor/history"
	"github.com/icereactor/reactor/location"
	"github.com/icereactor/reactor/objectio"
)

// referencedLocations returns the normalised locations of every data and
// delete file referenced by any snapshot in tbl's history, DELETED entries
// included (a file a snapshot removed still counts as referenced here: the
// check only ever keeps a file from being a candidate). Manifests are
// shared between snapshots; each distinct one is read once.
func referencedLocations(ctx context.Context, tbl *table.Table) (map[string]bool, error) {
	fs, err := tbl.FS(ctx)
	if err != nil {
		return nil, err
	}
	out := map[string]bool{}
	err = history.Walk(ctx, fs, tbl.Metadata().Snapshots(), history.WalkOptions{Deleted: true, Readers: objectio.ReadConcurrency(fs)}, func(f history.File) {
		if f.Kind != history.ManifestList && f.Kind != history.Manifest {
			out[location.Identity(f.Path)] = true
		}
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}
