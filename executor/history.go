package executor

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/apache/iceberg-go"
	iceio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"

	"github.com/icereactor/reactor/deletions"
	"github.com/icereactor/reactor/history"
	"github.com/icereactor/reactor/location"
	"github.com/icereactor/reactor/tablename"
)

// Which files a table's history references, asked by expiry (what did
// this expiry unlink?), by the deletion of what expiry unlinked (is any of
// it referenced again?) and by orphan cleanup (is this candidate
// referenced?). With history indexes (the default) each question costs
// what changed in the table since the index last saw it; without
// (Options.HistoryBytes < 0) every one walks every manifest list and
// manifest of the history, as reactor did before.

// metadataRefs adds to ids the identities of the files tbl's metadata
// itself references: the metadata file, those in its log, the version
// hint, statistics and partition statistics files.
func metadataRefs(ids map[string]bool, tbl *table.Table) {
	meta := tbl.Metadata()
	ids[location.Identity(tbl.MetadataLocation())] = true
	ids[location.Identity(meta.Location()+"/metadata/version-hint.text")] = true
	for entry := range meta.PreviousFiles() {
		ids[location.Identity(entry.MetadataFile)] = true
	}
	for sf := range meta.Statistics() {
		ids[location.Identity(sf.StatisticsPath)] = true
	}
	for psf := range meta.PartitionStatistics() {
		ids[location.Identity(psf.StatisticsPath)] = true
	}
}

func tableName(tbl *table.Table) string { return tablename.Format(tbl.Identifier()) }

// referencedBy reports, for identities, whether tbl's history references
// them; done gives back what it borrowed.
func (e *Executor) referencedBy(ctx context.Context, tbl *table.Table, fs iceio.IO) (referenced func(id string) bool, done func(), err error) {
	ids := map[string]bool{}
	metadataRefs(ids, tbl)
	if e.hist == nil {
		refs, err := reachable(ctx, fs, tbl.Metadata())
		if err != nil {
			return nil, nil, err
		}
		for id := range refs.locations(tbl) {
			ids[id] = true
		}
		return func(id string) bool { return ids[id] }, func() {}, nil
	}
	name := tableName(tbl)
	x, _, err := e.hist.borrow(ctx, name, fs, tbl.Metadata(), history.SyncOptions{Readers: storeConcurrency(fs)})
	if err != nil {
		return nil, nil, err
	}
	return func(id string) bool { return ids[id] || x.Referenced(id) }, func() { e.hist.giveBack(name, x) }, nil
}

// expiryUnlinked lists the files an expiry from pre to post unlinked (or,
// with preview, would unlink): what no snapshot of post references any
// more, and the statistics files of the removed snapshots.
func (e *Executor) expiryUnlinked(ctx context.Context, fs iceio.IO, pre, post *table.Table, preview bool) ([]deletions.File, error) {
	if e.hist == nil {
		return unlinkedFiles(ctx, fs, pre.Metadata(), post.Metadata())
	}
	name := tableName(pre)
	x, _, err := e.hist.borrow(ctx, name, fs, pre.Metadata(), history.SyncOptions{Readers: storeConcurrency(fs)})
	if err != nil {
		return nil, err
	}
	defer e.hist.giveBack(name, x)
	ch, err := x.Sync(ctx, fs, post.Metadata(), history.SyncOptions{Preview: preview, Readers: storeConcurrency(fs)})
	if err != nil {
		return nil, err
	}
	out := make([]deletions.File, 0, len(ch.Unlinked))
	for _, f := range ch.Unlinked {
		out = append(out, deletions.File{Path: f.Path, Kind: f.Kind})
	}
	order := map[history.Kind]int{history.ManifestList: 0, history.Manifest: 1}
	slices.SortStableFunc(out, func(a, b deletions.File) int {
		ka, oka := order[a.Kind]
		kb, okb := order[b.Kind]
		if !oka {
			ka = 2
		}
		if !okb {
			kb = 2
		}
		if c := cmp.Compare(ka, kb); c != 0 {
			return c
		}
		return cmp.Compare(a.Path, b.Path)
	})
	return append(out, unlinkedStatistics(pre.Metadata(), post.Metadata())...), nil
}

// unlinkedStatistics are the statistics files of the snapshots pre has and
// post has not, unless post still lists them.
func unlinkedStatistics(pre, post table.Metadata) []deletions.File {
	retained := map[int64]bool{}
	for _, s := range post.Snapshots() {
		retained[s.SnapshotID] = true
	}
	kept := map[string]bool{}
	for sf := range post.Statistics() {
		kept[sf.StatisticsPath] = true
	}
	for psf := range post.PartitionStatistics() {
		kept[psf.StatisticsPath] = true
	}
	var out []deletions.File
	seen := map[string]bool{}
	add := func(snapshot int64, path string) {
		if path != "" && !retained[snapshot] && !kept[path] && !seen[path] {
			seen[path] = true
			out = append(out, deletions.File{Path: path, Kind: history.Statistics})
		}
	}
	for sf := range pre.Statistics() {
		add(sf.SnapshotID, sf.StatisticsPath)
	}
	for psf := range pre.PartitionStatistics() {
		add(psf.SnapshotID, psf.StatisticsPath)
	}
	return out
}

// defaultHistoryBytes bounds the memory of the tables' history indexes
// (Options.HistoryBytes): about 70 MiB hold a table of 10,100 snapshots,
// 20,000 manifests and 100,000 live files.
const defaultHistoryBytes = 512 << 20

// histories are the executor's history indexes, one per table, lent to
// one job at a time: a job on a table whose index is lent out builds its
// own and the fuller of the two is kept. Indexes of tables not used for
// the longest are dropped first once they hold more than the budget.
type histories struct {
	mu     sync.Mutex
	budget int64
	tables map[string]*lentIndex
}

type lentIndex struct {
	x        *history.Index
	lent     bool
	lastUsed time.Time
}

func newHistories(budget int64) *histories {
	return &histories{budget: budget, tables: map[string]*lentIndex{}}
}

// borrow returns the index of the table named name, synced to meta with
// opts, for the caller's exclusive use until it gives it back. The first
// borrow of a table reads its whole history.
func (h *histories) borrow(ctx context.Context, name string, fs iceio.IO, meta table.Metadata,
	opts history.SyncOptions) (*history.Index, history.Changes, error) {
	uuid := meta.TableUUID().String()
	h.mu.Lock()
	var x *history.Index
	if l := h.tables[name]; l != nil && !l.lent && l.x.TableUUID() == uuid {
		x, l.lent = l.x, true
	}
	h.mu.Unlock()
	if x == nil {
		x = history.New(uuid)
	}
	ch, err := x.Sync(ctx, fs, meta, opts)
	if err != nil {
		h.giveBack(name, x)
		return nil, ch, fmt.Errorf("read table history: %w", err)
	}
	return x, ch, nil
}

// giveBack returns x, borrowed for the table named name.
func (h *histories) giveBack(name string, x *history.Index) {
	h.mu.Lock()
	defer h.mu.Unlock()
	l := h.tables[name]
	switch {
	case l == nil || l.x.TableUUID() != x.TableUUID():
		h.tables[name] = &lentIndex{x: x, lastUsed: time.Now()}
	case l.x == x:
		l.lent, l.lastUsed = false, time.Now()
	case l.lent || x.Snapshots() >= l.x.Snapshots():
		// Another job's index of the same table, built while this one
		// was lent: keep one of them.
		l.x, l.lent, l.lastUsed = x, false, time.Now()
	}
	h.evict()
}

// evict drops the least recently used indexes not lent out until the rest
// fit the budget.
func (h *histories) evict() {
	for {
		var total int64
		var oldest string
		for name, l := range h.tables {
			total += l.x.Bytes()
			if !l.lent && (oldest == "" || l.lastUsed.Before(h.tables[oldest].lastUsed)) {
				oldest = name
			}
		}
		if total <= h.budget || oldest == "" {
			return
		}
		delete(h.tables, oldest)
	}
}

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
