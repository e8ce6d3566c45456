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
	// Readers is how many manifest lists or manifests are read at once
	// (0 or 1: one after another, as on a local warehouse; an object
	// store's read concurrency, where each read is a round trip).
	Readers int
}

// Walk visits every file snaps reference, in snapshot order: each
// snapshot's manifest list, then each manifest it lists not visited yet,
// after the files that manifest holds live. It is the whole form of the
// read an Index does incrementally (both read a manifest's files through
// manifestFiles), for the callers that keep no index: it reads every
// manifest list and manifest of snaps.
//
// With opts.Readers above 1 the reads overlap (readAhead), but visit and
// SkipManifest are still called from the caller's goroutine, one at a
// time, and visit sees the same files in the same order as with one
// reader. SkipManifest may then be asked about a manifest before the
// files of earlier manifests are visited, so it must answer from what
// earlier walks read, not from this walk's visits (a manifest listed
// twice in one walk is read once either way). On an error, which files
// were visited before it is unspecified.
func Walk(ctx context.Context, fs iceio.IO, snaps []table.Snapshot, opts WalkOptions, visit func(File)) error {
	if opts.Readers > 1 {
		return walkAhead(ctx, fs, snaps, opts, visit)
	}
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

// walkAhead is Walk with opts.Readers reads at once: the manifest lists
// are read ahead in snapshot order, each manifest not seen yet is queued
// behind the lists before it, and the manifests are read ahead in that
// queue's order while visit goes through it.
func walkAhead(ctx context.Context, fs iceio.IO, snaps []table.Snapshot, opts WalkOptions, visit func(File)) error {
	seen := map[string]bool{}
	var (
		queue []iceberg.ManifestFile
		// lists[j] are the manifest lists visited before queue[j]; the
		// entry at len(queue) holds those after the last manifest.
		lists = [][]string{nil}
	)
	err := readAhead(ctx, len(snaps), opts.Readers, func(i int) ([]iceberg.ManifestFile, error) {
		ms, err := snaps[i].Manifests(fs)
		if err != nil {
			return nil, fmt.Errorf("manifest list of snapshot %d: %w", snaps[i].SnapshotID, err)
		}
		return ms, nil
	}, func(i int, ms []iceberg.ManifestFile) error {
		lists[len(queue)] = append(lists[len(queue)], snaps[i].ManifestList)
		for _, m := range ms {
			path := m.FilePath()
			if seen[path] || (opts.SkipManifest != nil && opts.SkipManifest(path)) {
				continue
			}
			seen[path] = true
			queue = append(queue, m)
			lists = append(lists, nil)
		}
		return nil
	})
	if err != nil {
		return err
	}
	visitLists := func(j int) {
		for _, l := range lists[j] {
			visit(File{Path: l, Kind: ManifestList})
		}
	}
	err = readAhead(ctx, len(queue), opts.Readers, func(j int) ([]File, error) {
		var files []File
		err := manifestFiles(fs, queue[j], opts.Deleted, func(df iceberg.DataFile) {
			files = append(files, File{Path: df.FilePath(), Kind: KindOf(df)})
		})
		return files, err
	}, func(j int, files []File) error {
		visitLists(j)
		for _, f := range files {
			visit(f)
		}
		visit(File{Path: queue[j].FilePath(), Kind: Manifest})
		return nil
	})
	if err != nil {
		return err
	}
	visitLists(len(queue))
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
