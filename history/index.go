// Package history keeps, per table, the set of files its history
// references, so that the jobs that must know it (expiry, the deletion of
// what expiry unlinked, orphan cleanup) pay for what changed since they
// last looked instead of walking every manifest list and manifest of the
// history each time: 7 to 15 seconds at 10,100 snapshots (BENCHMARKS.md,
// section 6), most of it parsing the same immutable Avro files again.
//
// An Index (index.go) holds the facts reactor needs from each manifest list (which
// manifests) and each manifest (which files it holds live, of what kind),
// keyed by path: those files never change once written. A file's reference
// count is the number of listed manifests holding it live, a manifest's
// the number of snapshots listing it, a manifest list's the number of
// snapshots naming it; Sync brings the counts from the snapshots the index
// last saw to a table's current ones by reading only the lists of new
// snapshots and the manifests no snapshot listed before, and reports the
// files whose last reference went. The facts of removed snapshots and
// manifests stay in the index until the counts drop, so removing them never
// reads a file that expiry may already have deleted.
//
// Kind (kind.go) is reactor's one file-kind enum: the index's references,
// the pending deletions, expiry's counts and the delete-file metrics use
// it, with the external spellings (String, MetricLabel) unchanged.
//
// Walk (walk.go) is the same read without an index, whole (several reads
// at once on an object store, visited in the sequential order:
// readahead.go), for the callers that keep none (executor without history
// indexes, the planner's check of tracked orphan candidates); both read a
// manifest's files through one function.
//
// It reads through the table's IO and must not write, delete or decide
// anything: callers compare, the executor deletes. It does not know the
// metadata files or statistics files of a table (they are in the metadata
// already, and cheap to list).
package history

import (
	"context"
	"fmt"
	"sync"

	"github.com/apache/iceberg-go"
	iceio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"

	"github.com/icereactor/reactor/location"
)

// File is a referenced file: its location as the table's metadata spells
// it, and its kind.
type File struct {
	Path string
	Kind Kind
}

// ref is one referenced location: its identity, and its spelling when that
// differs (most canonical s3 and file locations are their own identity).
type ref struct {
	id   string
	path string
	kind Kind
}

func newRef(path string, kind Kind) ref {
	id := location.Identity(path)
	r := ref{id: id, kind: kind}
	if id != path {
		r.path = path
	}
	return r
}

func (r ref) location() string {
	if r.path != "" {
		return r.path
	}
	return r.id
}

// manifestFacts are what a manifest contributes: its own location and the
// files it holds live (ADDED or EXISTING entries). listed counts the
// snapshots that list it.
type manifestFacts struct {
	self   ref
	live   []ref
	listed int
}

// snapshotFacts are a snapshot's manifest list and the manifests it lists.
type snapshotFacts struct {
	list      ref
	manifests []*manifestFacts
}

// Index is the reference set of one table's history; see the package doc.
// It is not safe for concurrent use: the executor lends it to one job at a
// time.
type Index struct {
	tableUUID string
	snapshots map[int64]*snapshotFacts
	manifests map[string]*manifestFacts // by manifest path
	counts    map[string]int32          // references by identity
	bytes     int64
}

// New returns an empty index for the table with uuid tableUUID.
func New(tableUUID string) *Index {
	return &Index{tableUUID: tableUUID, snapshots: map[int64]*snapshotFacts{}, manifests: map[string]*manifestFacts{},
		counts: map[string]int32{}}
}

// TableUUID is the table the index is of.
func (x *Index) TableUUID() string { return x.tableUUID }

// Snapshots is how many snapshots the index counts.
func (x *Index) Snapshots() int { return len(x.snapshots) }

// Bytes estimates the memory the index holds.
func (x *Index) Bytes() int64 { return x.bytes }

// Referenced reports whether some counted snapshot references the file
// with identity id (location.Identity): as its manifest list, a manifest
// it lists, or a file one of those holds live.
func (x *Index) Referenced(id string) bool { return x.counts[id] > 0 }

// Len is how many distinct locations the counted snapshots reference.
func (x *Index) Len() int { return len(x.counts) }

// Each calls f for every referenced location.
func (x *Index) Each(f func(id string)) {
	for id, n := range x.counts {
		if n > 0 {
			f(id)
		}
	}
}

// SyncOptions say how Sync treats snapshots the table no longer has.
type SyncOptions struct {
	// AddOnly keeps counting removed snapshots (their files stay
	// referenced) until a Sync without it: a job that must never lose a
	// reference it once saw (orphan cleanup) syncs this way.
	AddOnly bool
	// Preview computes what the removals would unlink without applying
	// them (nor the additions).
	Preview bool
	// Readers is how many manifest lists or manifests are read at once
	// (0: 4).
	Readers int
}

// Changes are what a Sync did.
type Changes struct {
	// AddedSnapshots and RemovedSnapshots are counted; ReadLists and
	// ReadManifests are the files it read to count them.
	AddedSnapshots, RemovedSnapshots int
	ReadLists, ReadManifests         int
	// Unlinked are the files whose last reference went with the removed
	// snapshots, in the order the removals found them.
	Unlinked []File
}

// Sync brings the index to the snapshots of meta; see SyncOptions. Reading
// fails as a whole (the index is left as it was): a manifest list or
// manifest that cannot be read is an error, never an empty reference set.
func (x *Index) Sync(ctx context.Context, fs iceio.IO, meta table.Metadata, opts SyncOptions) (Changes, error) {
	var ch Changes
	if meta.TableUUID().String() != x.tableUUID {
		return ch, fmt.Errorf("history: index of table %s synced with metadata of table %s", x.tableUUID, meta.TableUUID())
	}
	current := map[int64]bool{}
	var added []table.Snapshot
	for _, s := range meta.Snapshots() {
		current[s.SnapshotID] = true
		if _, ok := x.snapshots[s.SnapshotID]; !ok {
			added = append(added, s)
		}
	}
	var removed []int64
	if !opts.AddOnly {
		for id := range x.snapshots {
			if !current[id] {
				removed = append(removed, id)
			}
		}
	}
	ch.AddedSnapshots, ch.RemovedSnapshots = len(added), len(removed)
	if opts.Preview {
		ch.Unlinked = x.preview(removed)
		return ch, nil
	}
	facts, err := x.read(ctx, fs, added, opts.Readers, &ch)
	if err != nil {
		return Changes{}, err
	}
	for i, s := range added {
		x.addSnapshot(s.SnapshotID, facts[i])
	}
	for _, id := range removed {
		ch.Unlinked = x.removeSnapshot(id, ch.Unlinked)
	}
	return ch, nil
}

// read reads the manifest lists of snaps and every manifest they list that
// the index does not know yet, readers at a time.
func (x *Index) read(ctx context.Context, fs iceio.IO, snaps []table.Snapshot, readers int, ch *Changes) ([]*snapshotFacts, error) {
	if readers <= 0 {
		readers = 4
	}
	facts := make([]*snapshotFacts, len(snaps))
	lists := make([][]iceberg.ManifestFile, len(snaps))
	if err := parallel(ctx, len(snaps), readers, func(i int) error {
		ms, err := snaps[i].Manifests(fs)
		if err != nil {
			return fmt.Errorf("manifest list of snapshot %d: %w", snaps[i].SnapshotID, err)
		}
		lists[i] = ms
		return nil
	}); err != nil {
		return nil, err
	}
	ch.ReadLists = len(snaps)
	// Each manifest not known yet is read once, however many new
	// snapshots list it.
	fresh := map[string]*manifestFacts{}
	var toRead []iceberg.ManifestFile
	for i, s := range snaps {
		f := &snapshotFacts{manifests: make([]*manifestFacts, 0, len(lists[i]))}
		if s.ManifestList != "" {
			f.list = newRef(s.ManifestList, ManifestList)
		}
		for _, m := range lists[i] {
			path := m.FilePath()
			mf := x.manifests[path]
			if mf == nil {
				if mf = fresh[path]; mf == nil {
					mf = &manifestFacts{self: newRef(path, Manifest)}
					fresh[path] = mf
					toRead = append(toRead, m)
				}
			}
			f.manifests = append(f.manifests, mf)
		}
		facts[i] = f
	}
	if err := parallel(ctx, len(toRead), readers, func(i int) error {
		m := toRead[i]
		var live []ref
		if err := manifestFiles(fs, m, false, func(df iceberg.DataFile) {
			live = append(live, newRef(df.FilePath(), KindOf(df)))
		}); err != nil {
			return err
		}
		fresh[m.FilePath()].live = live
		return nil
	}); err != nil {
		return nil, err
	}
	ch.ReadManifests = len(toRead)
	for path, mf := range fresh {
		x.manifests[path] = mf
		x.bytes += refBytes(mf.self) + 48
		for _, r := range mf.live {
			x.bytes += refBytes(r)
		}
	}
	return facts, nil
}

// refBytes estimates a ref's memory: its strings, their headers, and its
// share of the count map.
func refBytes(r ref) int64 { return int64(len(r.id)+len(r.path)) + 64 }

func (x *Index) addSnapshot(id int64, f *snapshotFacts) {
	x.snapshots[id] = f
	x.bytes += refBytes(f.list) + 8*int64(len(f.manifests)) + 64
	if f.list.id != "" {
		x.counts[f.list.id]++
	}
	for _, m := range f.manifests {
		m.listed++
		if m.listed == 1 {
			x.counts[m.self.id]++
			for _, r := range m.live {
				x.counts[r.id]++
			}
		}
	}
}

// removeSnapshot stops counting snapshot id and appends to out the files
// whose last reference went.
func (x *Index) removeSnapshot(id int64, out []File) []File {
	f := x.snapshots[id]
	delete(x.snapshots, id)
	x.bytes -= refBytes(f.list) + 8*int64(len(f.manifests)) + 64
	if f.list.id != "" {
		out = x.release(f.list, out)
	}
	for _, m := range f.manifests {
		m.listed--
		if m.listed > 0 {
			continue
		}
		out = x.release(m.self, out)
		for _, r := range m.live {
			out = x.release(r, out)
		}
		delete(x.manifests, m.self.location())
		x.bytes -= refBytes(m.self) + 48
		for _, r := range m.live {
			x.bytes -= refBytes(r)
		}
	}
	return out
}

func (x *Index) release(r ref, out []File) []File {
	n := x.counts[r.id] - 1
	if n > 0 {
		x.counts[r.id] = n
		return out
	}
	delete(x.counts, r.id)
	return append(out, File{Path: r.location(), Kind: r.kind})
}

// preview is removeSnapshot for every id in removed, on a copy of the
// counts it touches.
func (x *Index) preview(removed []int64) []File {
	listed := map[*manifestFacts]int{}
	counts := map[string]int32{}
	var out []File
	release := func(r ref) {
		n, ok := counts[r.id]
		if !ok {
			n = x.counts[r.id]
		}
		n--
		counts[r.id] = n
		if n == 0 {
			out = append(out, File{Path: r.location(), Kind: r.kind})
		}
	}
	for _, id := range removed {
		f := x.snapshots[id]
		if f.list.id != "" {
			release(f.list)
		}
		for _, m := range f.manifests {
			n, ok := listed[m]
			if !ok {
				n = m.listed
			}
			n--
			listed[m] = n
			if n > 0 {
				continue
			}
			release(m.self)
			for _, r := range m.live {
				release(r)
			}
		}
	}
	return out
}

// parallel runs f(0..n-1), at most workers at once, and returns the first
// error (the others stop at their next item).
func parallel(ctx context.Context, n, workers int, f func(i int) error) error {
	if n == 0 {
		return nil
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	next := make(chan int)
	var wg sync.WaitGroup
	for range min(workers, n) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				if err := f(i); err != nil {
					cancel(err)
					return
				}
			}
		}()
	}
feed:
	for i := range n {
		select {
		case next <- i:
		case <-ctx.Done():
			break feed
		}
	}
	close(next)
	wg.Wait()
	return context.Cause(ctx)
}
