package history

import (
	"context"
	"fmt"

	"github.com/apache/iceberg-go"
	iceio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"
)

// WalkOptions tune Walk.
type WalkOptions struct {
	// SkipManifest, when set, leaves out the manifests it reports true
	// for (read by an earlier walk); each other manifest is read once
	// however many snapshots list it.
	SkipManifest func(path string) bool
	// Deleted visits the files of DELETED entries too (a file a snapshot
	// removed, referenced by an older snapshot if any is left).
	Deleted bool
}

// Walk visits every file snaps reference, in snapshot order: each
// snapshot's manifest list, then each manifest it lists not visited yet,
// then the files that manifest holds live. It is the sequential form of
// the read an Index does incrementally and in parallel (both read a
// manifest's files through manifestFiles), for the callers that keep no
// index: it reads every manifest list and manifest of snaps.
func Walk(ctx context.Context, fs iceio.IO, snaps []table.Snapshot, opts WalkOptions, visit func(File)) error {
	seen := map[string]bool{}
	for _, snap := range snaps {
		if err := ctx.Err(); err != nil {
			return err
		}
		visit(File{Path: snap.ManifestList, Kind: ManifestList})
		manifests, err := snap.Manifests(fs)
		if err != nil {
			return fmt.Errorf("manifest list of snapshot %d: %w", snap.SnapshotID, err)
		}
		for _, m := range manifests {
			path := m.FilePath()
			if seen[path] || (opts.SkipManifest != nil && opts.SkipManifest(path)) {
				continue
			}
			seen[path] = true
			if err := manifestFiles(fs, m, opts.Deleted, func(df iceberg.DataFile) {
				visit(File{Path: df.FilePath(), Kind: KindOf(df)})
			}); err != nil {
				return err
			}
			visit(File{Path: path, Kind: Manifest})
		}
	}
	return nil
}

// manifestFiles calls visit for every file m holds live (and, with
// deleted, the files of its DELETED entries too).
func manifestFiles(fs iceio.IO, m iceberg.ManifestFile, deleted bool, visit func(iceberg.DataFile)) error {
	for entry, err := range m.Entries(fs, !deleted) {
		if err != nil {
			return fmt.Errorf("manifest %s: %w", m.FilePath(), err)
		}
		visit(entry.DataFile())
	}
	return nil
}
