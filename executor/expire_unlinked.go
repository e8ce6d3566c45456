package executor

import (
	"context"
	"fmt"
	"math"
	"sort"

	"github.com/apache/iceberg-go"
	iceio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"

	"github.com/icereactor/reactor/deletions"
	"github.com/icereactor/reactor/history"
)

// unlinkedFiles lists the files an expiry from pre to post unlinks: the
// manifest lists of the removed snapshots, their manifests no remaining
// snapshot lists, the live files of those manifests that no remaining
// manifest holds live, and the statistics files of removed snapshots.
// Each manifest is read once. A remaining manifest whose smallest data
// sequence number is above every candidate's cannot hold a candidate (it
// was written after them and holds only newer files) and is not read, so
// the walk costs what the expired part of the history holds, not the whole
// table; a file re-added since is caught by the deletion pass, which
// checks the whole history again before deleting anything.
func unlinkedFiles(ctx context.Context, fs iceio.IO, pre, post table.Metadata) ([]deletions.File, error) {
	retainedIDs := map[int64]bool{}
	retained := map[string]iceberg.ManifestFile{}
	for _, snap := range post.Snapshots() {
		retainedIDs[snap.SnapshotID] = true
		manifests, err := snap.Manifests(fs)
		if err != nil {
			return nil, fmt.Errorf("manifest list of snapshot %d: %w", snap.SnapshotID, err)
		}
		for _, m := range manifests {
			retained[m.FilePath()] = m
		}
	}
	var out []deletions.File
	seen := map[string]bool{}
	add := func(path string, kind history.Kind) {
		if path != "" && !seen[path] {
			seen[path] = true
			out = append(out, deletions.File{Path: path, Kind: kind})
		}
	}
	candidates := map[string]history.Kind{} // live file -> kind
	maxSeq := int64(-1)
	for _, snap := range pre.Snapshots() {
		if retainedIDs[snap.SnapshotID] {
			continue
		}
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		add(snap.ManifestList, history.ManifestList)
		manifests, err := snap.Manifests(fs)
		if err != nil {
			return nil, fmt.Errorf("manifest list of snapshot %d: %w", snap.SnapshotID, err)
		}
		for _, m := range manifests {
			if _, ok := retained[m.FilePath()]; ok || seen[m.FilePath()] {
				continue
			}
			add(m.FilePath(), history.Manifest)
			for entry, err := range m.Entries(fs, true) {
				if err != nil {
					return nil, fmt.Errorf("manifest %s: %w", m.FilePath(), err)
				}
				df := entry.DataFile()
				candidates[df.FilePath()] = history.KindOf(df)
				if seq := entry.SequenceNum(); seq >= 0 {
					maxSeq = max(maxSeq, seq)
				} else {
					maxSeq = math.MaxInt64 // unknown: prune nothing
				}
			}
		}
	}
	if len(candidates) > 0 {
		for _, m := range retained {
			if m.MinSequenceNum() > maxSeq {
				continue
			}
			for entry, err := range m.Entries(fs, true) {
				if err != nil {
					return nil, fmt.Errorf("manifest %s: %w", m.FilePath(), err)
				}
				delete(candidates, entry.DataFile().FilePath())
			}
		}
	}
	paths := make([]string, 0, len(candidates))
	for p := range candidates {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	for _, p := range paths {
		add(p, candidates[p])
	}
	for _, f := range unlinkedStatistics(pre, post) {
		add(f.Path, f.Kind)
	}
	return out, nil
}

// reachableFiles are the files a table's snapshots reference, by kind
// (history.Walk: the whole history, for the jobs that keep no index).
type reachableFiles struct {
	manifestLists, manifests, data, posDeletes, eqDeletes, stats map[string]bool
}

func reachable(ctx context.Context, fs iceio.IO, meta table.Metadata) (reachableFiles, error) {
	r := reachableFiles{manifestLists: map[string]bool{}, manifests: map[string]bool{}, data: map[string]bool{},
		posDeletes: map[string]bool{}, eqDeletes: map[string]bool{}, stats: map[string]bool{}}
	for sf := range meta.Statistics() {
		r.stats[sf.StatisticsPath] = true
	}
	err := history.Walk(ctx, fs, meta.Snapshots(), history.WalkOptions{Readers: storeConcurrency(fs)}, func(f history.File) {
		switch f.Kind {
		case history.ManifestList:
			r.manifestLists[f.Path] = true
		case history.Manifest:
			r.manifests[f.Path] = true
		case history.PositionDelete:
			r.posDeletes[f.Path] = true
		case history.EqualityDelete:
			r.eqDeletes[f.Path] = true
		default:
			r.data[f.Path] = true
		}
	})
	return r, err
}

// unreachableIn lists the files r references that o does not.
func (r reachableFiles) unreachableIn(o reachableFiles) []string {
	var out []string
	for _, pair := range [][2]map[string]bool{{r.manifestLists, o.manifestLists}, {r.manifests, o.manifests},
		{r.data, o.data}, {r.posDeletes, o.posDeletes}, {r.eqDeletes, o.eqDeletes}, {r.stats, o.stats}} {
		for loc := range pair[0] {
			if !pair[1][loc] {
				out = append(out, loc)
			}
		}
	}
	sort.Strings(out)
	return out
}

func (r reachableFiles) minus(o reachableFiles) ExpiryCounts {
	diff := func(a, b map[string]bool) int {
		n := 0
		for k := range a {
			if !b[k] {
				n++
			}
		}
		return n
	}
	return ExpiryCounts{
		DeletedDataFiles:           diff(r.data, o.data),
		DeletedPositionDeleteFiles: diff(r.posDeletes, o.posDeletes),
		DeletedEqualityDeleteFiles: diff(r.eqDeletes, o.eqDeletes),
		DeletedManifests:           diff(r.manifests, o.manifests),
		DeletedManifestLists:       diff(r.manifestLists, o.manifestLists),
		DeletedStatisticsFiles:     diff(r.stats, o.stats),
	}
}
