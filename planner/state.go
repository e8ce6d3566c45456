package planner

import (
	"context"
	"fmt"
	"time"

	"github.com/apache/iceberg-go"
	iceio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"

	"github.com/icereactor/reactor/history"
	"github.com/icereactor/reactor/jobkind"
	"github.com/icereactor/reactor/jobs"
	"github.com/icereactor/reactor/manifestread"
	"github.com/icereactor/reactor/objectio"
)

// maxBridge bounds how many snapshots an incremental update walks back to
// find the last one it applied; beyond that a rebuild is cheaper.
const maxBridge = 1000

// tableCounters is the planner's picture of one table's current snapshot.
// What it keeps between events grows with what the table holds (its
// partitions, its sorted files) and nothing is preallocated: an idle table
// costs its partitions (BENCHMARKS.md, BenchmarkIdleTableHeap).
type tableCounters struct {
	// metadataLocation is the metadata file the state was last brought up
	// to (normalised): a bucket notification of it, or of an older one,
	// is a commit already applied.
	metadataLocation string
	// confirmed remembers data files added by recently applied snapshots
	// (by location hash), so a notification that arrives after the commit
	// that references its file is not tracked as unconfirmed.
	confirmed recentHashes

	snapshotID    int64
	formatVersion int
	dataManifests int // in the current snapshot's manifest list
	sequenceNum   int64
	timestampMs   int64
	sizes         fileSizes
	partitions    map[string]*partitionState
	// sortedFiles holds the live data files written by sort rewrites (by
	// location hash), so their removal (a DELETED entry does not say which
	// snapshot added the file) updates SortedFiles exactly.
	sortedFiles map[uint64]struct{}
	// dvs follows the live deletion vectors by the data file they name.
	dvs dvRefs
	// offloaded are the last snapshots reactor's jobs committed through
	// Spark (see jobs.Result.OwnSnapshots), offloadedSort those a sort wrote.
	offloaded, offloadedSort recentHashes // snapshot ids, grown on demand
	// manifests reads the manifests (nil: iceberg-go's reader).
	manifests *manifestread.Reader
	// walkEverySnapshot turns off the one-list read of a run of appends
	// (advanceAppends), for the test that holds it to the walk.
	walkEverySnapshot bool
}

// own reports whether s is reactor's: its summary says so, or a job run
// on Spark committed it.
func (tc *tableCounters) own(s *table.Snapshot) bool {
	return tc.offloaded.has(uint64(s.SnapshotID)) || isOwnSnapshot(s)
}

// sorted reports whether s was committed by a sort or z-order rewrite.
func (tc *tableCounters) sorted(s *table.Snapshot) bool {
	return tc.offloadedSort.has(uint64(s.SnapshotID)) || isSortSnapshot(s)
}

// markOffloaded records snapshots a job committed through Spark.
func (tc *tableCounters) markOffloaded(ids []int64, sort bool) {
	for _, id := range ids {
		tc.offloaded.add(uint64(id))
		if sort {
			tc.offloadedSort.add(uint64(id))
		}
	}
}

// sortedFile records whether a data file comes from a sort rewrite:
// when added (sorted known from the adding snapshot) or removed.
func (tc *tableCounters) sortedFile(ps *partitionState, df iceberg.DataFile, added, sorted bool) {
	if df.ContentType() != iceberg.EntryContentData {
		return
	}
	path := locationHash(df.FilePath())
	_, was := tc.sortedFiles[path]
	switch {
	case added && sorted:
		if tc.sortedFiles == nil {
			tc.sortedFiles = map[uint64]struct{}{}
		}
		tc.sortedFiles[path] = struct{}{}
		ps.SortedFiles++
	case !added && was:
		delete(tc.sortedFiles, path)
		ps.SortedFiles--
	}
}

type partitionState struct {
	Key    string
	SpecID int32
	inJob  bool
	// settledKinds: see settledWrite (here, where it packs with SpecID).
	settledKinds jobkind.Set
	// values are the partition tuple, compact (a map per partition costs
	// ten times as much); partition() renders the job's form.
	values partitionValues
	Counters

	cooldownUntil instant
	// settledWrite is LastWrite as it was when jobs of settledKinds found
	// nothing to do in this partition; until the partition is written
	// again, those kinds are not scheduled for it.
	settledWrite instant
	// waitingSince is when the partition was first found over its
	// threshold but still being written; max_quiet_wait counts from it.
	waitingSince instant
	// quietMerged is LastWrite as it was when a quiet merge was scheduled
	// for the partition: one per quiet spell (quiet.go).
	quietMerged instant
}

// partition is the partition as a job names it.
func (ps *partitionState) partition() jobs.Partition {
	return jobs.Partition{Key: ps.Key, SpecID: ps.SpecID, Values: ps.values.asMap()}
}

// updateStats reports what an update did.
type updateStats struct {
	rebuilt          bool
	snapshots        int
	manifestsRead    int
	listsRead        int
	changed          map[string]bool
	ownSnapshotsOnly bool
	// added lists the locations of data files the update found added (a
	// rebuild: every live file), to confirm tracked files.
	added []string
	// stale: the table was older than the state; nothing was applied.
	stale bool
}

// advance brings the counters to tbl's current snapshot. It reads only the
// manifests added by snapshots after the last one applied; the first call,
// a changed small-file size, or a gap it cannot bridge (the last applied
// snapshot expired, or is no longer an ancestor after a rollback) rebuilds
// from the current snapshot once.
func (tc *tableCounters) advance(ctx context.Context, tbl *table.Table, sz fileSizes) (updateStats, error) {
	st := updateStats{changed: map[string]bool{}, ownSnapshotsOnly: true}
	meta := tbl.Metadata()
	tc.formatVersion = meta.Version()
	if tc.dvs == nil {
		tc.dvs = dvRefs{}
	}
	cur := tbl.CurrentSnapshot()
	if cur == nil {
		if tc.snapshotID != 0 {
			// Table emptied back to no snapshot: start over.
			tc.reset(sz)
		}
		return st, nil
	}
	if tc.snapshotID == cur.SnapshotID && tc.sizes == sz && tc.partitions != nil {
		return st, nil
	}
	if tc.partitions != nil && tc.isNewerThan(cur) {
		// A table loaded before the state last advanced (the executor's
		// committed table racing a newer event): nothing to learn from it.
		st.stale = true
		return st, nil
	}
	fs, err := tbl.FS(ctx)
	if err != nil {
		return st, fmt.Errorf("open table io: %w", err)
	}

	var chain []*table.Snapshot
	bridged := false
	if tc.partitions != nil && tc.snapshotID != 0 && tc.sizes == sz {
		for s := cur; s != nil && len(chain) <= maxBridge; {
			if s.SnapshotID == tc.snapshotID {
				bridged = true
				break
			}
			chain = append(chain, s)
			if s.ParentSnapshotID == nil {
				break
			}
			s = meta.SnapshotByID(*s.ParentSnapshotID)
		}
	}
	if !bridged {
		return tc.rebuild(ctx, tbl, fs, sz)
	}

	keys := jobs.NewKeyer(meta)
	if len(chain) > 1 && !tc.walkEverySnapshot && appendsOnly(chain) {
		applied, err := tc.advanceAppends(fs, keys, chain, &st, sz)
		if err != nil {
			return st, err
		}
		if applied {
			tc.setSnapshot(cur)
			return st, nil
		}
	}
	for i := len(chain) - 1; i >= 0; i-- {
		snap := chain[i]
		own := tc.own(snap)
		if !own {
			st.ownSnapshotsOnly = false
		}
		written := time.UnixMilli(snap.TimestampMs)
		manifests, err := tc.manifests.ManifestList(fs, snap)
		if err != nil {
			return st, fmt.Errorf("read manifest list of snapshot %d: %w", snap.SnapshotID, err)
		}
		st.listsRead++
		if i == 0 {
			tc.dataManifests = countDataManifests(manifests)
		}
		st.snapshots++
		var goneData []uint64
		for _, m := range manifests {
			// Only manifests this snapshot wrote can hold its changes; the
			// rest are carried over unchanged from its parent.
			if m.SnapshotID() != snap.SnapshotID {
				continue
			}
			// A manifest that only carries existing entries (a manifest
			// rewrite, a merge) changes no counter; reading it would cost a
			// whole-table scan. Unknown counts read as -1 and are read.
			if m.AddedDataFiles() == 0 && m.DeletedDataFiles() == 0 {
				continue
			}
			st.manifestsRead++
			entries, err := tc.manifests.Fetch(fs, m, false)
			if err != nil {
				return st, fmt.Errorf("read manifest %s: %w", m.FilePath(), err)
			}
			for _, entry := range entries {
				if entry.SnapshotID() != snap.SnapshotID {
					continue
				}
				df := entry.DataFile()
				switch entry.Status() {
				case iceberg.EntryStatusADDED:
					tc.addFile(&st, keys, snap, own, written, df, sz)
				case iceberg.EntryStatusDELETED:
					ps := tc.partition(keys, df)
					ps.remove(df, sz)
					tc.dvs.removed(df)
					if df.ContentType() == iceberg.EntryContentData && len(tc.dvs) > 0 {
						goneData = append(goneData, locationHash(df.FilePath()))
					}
					tc.sortedFile(ps, df, false, false)
					st.changed[ps.Key] = true
				}
			}
		}
		tc.dvs.dataGone(goneData)
	}
	tc.setSnapshot(cur)
	return st, nil
}

// addFile counts df, which snapshot snap added (written at written; own:
// one of reactor's), into its partition.
func (tc *tableCounters) addFile(st *updateStats, keys *jobs.Keyer, snap *table.Snapshot, own bool, written time.Time, df iceberg.DataFile, sz fileSizes) {
	st.added = append(st.added, df.FilePath())
	tc.confirmed.add(locationHash(df.FilePath()))
	ps := tc.partition(keys, df)
	ps.add(df, sz)
	tc.dvs.added(ps, df)
	tc.sortedFile(ps, df, true, tc.sorted(snap))
	if !own && written.After(ps.LastWrite) {
		ps.LastWrite = written
	}
	st.changed[ps.Key] = true
}

func (tc *tableCounters) setSnapshot(s *table.Snapshot) {
	tc.snapshotID = s.SnapshotID
	tc.sequenceNum = s.SequenceNumber
	tc.timestampMs = s.TimestampMs
}

// isNewerThan reports whether the applied snapshot is newer than s. Format
// v2+ orders snapshots by sequence number; v1 has none, so time decides.
func (tc *tableCounters) isNewerThan(s *table.Snapshot) bool {
	if tc.snapshotID == 0 || tc.snapshotID == s.SnapshotID {
		return false
	}
	if tc.sequenceNum != 0 || s.SequenceNumber != 0 {
		return tc.sequenceNum > s.SequenceNumber
	}
	return tc.timestampMs > s.TimestampMs
}

func (tc *tableCounters) reset(sz fileSizes) {
	old := tc.partitions
	tc.partitions = map[string]*partitionState{}
	tc.snapshotID, tc.sequenceNum, tc.timestampMs = 0, 0, 0
	tc.sizes = sz
	tc.sortedFiles = nil
	tc.dvs = dvRefs{}
	// Scheduling state (cool-downs, running jobs) survives a rebuild.
	for k, ps := range old {
		tc.partitions[k] = &partitionState{Key: ps.Key, SpecID: ps.SpecID, values: ps.values, cooldownUntil: ps.cooldownUntil,
			settledWrite: ps.settledWrite, settledKinds: ps.settledKinds, inJob: ps.inJob, waitingSince: ps.waitingSince}
	}
}

func (tc *tableCounters) rebuild(ctx context.Context, tbl *table.Table, fs iceio.IO, sz fileSizes) (updateStats, error) {
	st := updateStats{rebuilt: true, changed: map[string]bool{}}
	tc.reset(sz)
	meta := tbl.Metadata()
	cur := tbl.CurrentSnapshot()
	manifests, err := tc.manifests.ManifestList(fs, cur)
	if err != nil {
		return st, fmt.Errorf("read manifest list of snapshot %d: %w", cur.SnapshotID, err)
	}
	tc.dataManifests = countDataManifests(manifests)
	st.snapshots = 1
	keys := jobs.NewKeyer(meta)
	// Whether a snapshot was reactor's own, and when it was written, per
	// snapshot id: looked up once, not once per file.
	writtenAt := map[int64]time.Time{}
	written := func(id int64) time.Time {
		if w, ok := writtenAt[id]; ok {
			return w
		}
		var w time.Time
		if snap := meta.SnapshotByID(id); snap != nil && !tc.own(snap) {
			w = time.UnixMilli(snap.TimestampMs)
		}
		writtenAt[id] = w
		return w
	}
	sortSnaps := map[int64]bool{}
	for _, snap := range meta.Snapshots() {
		if tc.sorted(&snap) {
			sortSnaps[snap.SnapshotID] = true
		}
	}
	sortedBy := func(id int64) bool { return sortSnaps[id] }
	// On v3, the live data files, to find the deletion vectors naming none.
	var liveData map[uint64]struct{}
	if meta.Version() >= 3 {
		liveData = map[uint64]struct{}{}
	}
	// On an object store each manifest is a round trip: they are read
	// the store's read concurrency at once and counted in list order.
	err = history.ReadManifests(ctx, fs, manifests, objectio.ReadConcurrency(fs), true, tc.manifests.Fetch, func(_ iceberg.ManifestFile, entries []iceberg.ManifestEntry) error {
		st.manifestsRead++
		for _, entry := range entries {
			df := entry.DataFile()
			st.added = append(st.added, df.FilePath())
			if entry.SnapshotID() == cur.SnapshotID {
				// Its notification may still be on its way.
				tc.confirmed.add(locationHash(df.FilePath()))
			}
			ps := tc.partition(keys, df)
			ps.add(df, sz)
			tc.dvs.added(ps, df)
			if liveData != nil && df.ContentType() == iceberg.EntryContentData {
				liveData[locationHash(df.FilePath())] = struct{}{}
			}
			tc.sortedFile(ps, df, true, sortedBy(entry.SnapshotID()))
			if w := written(entry.SnapshotID()); w.After(ps.LastWrite) {
				ps.LastWrite = w
			}
			st.changed[ps.Key] = true
		}
		return nil
	})
	if err != nil {
		return st, err
	}
	if liveData != nil {
		tc.dvs.danglingUnless(liveData)
	}
	// Partitions that no longer hold files keep their scheduling state but
	// report zero counters; they are not "changed".
	tc.setSnapshot(cur)
	return st, nil
}

func (tc *tableCounters) partition(keys *jobs.Keyer, df iceberg.DataFile) *partitionState {
	values := df.Partition()
	key := keys.Key(df.SpecID(), values)
	ps, ok := tc.partitions[key]
	if !ok {
		ps = &partitionState{Key: key, SpecID: df.SpecID(), values: compactValues(values)}
		tc.partitions[key] = ps
	} else if ps.values == nil {
		ps.values = compactValues(values)
		ps.SpecID = df.SpecID()
	}
	return ps
}

// isSortSnapshot reports whether s was committed by a sort or z-order
// rewrite: the data files it added are sorted.
func isSortSnapshot(s *table.Snapshot) bool {
	return s.Summary != nil && s.Summary.Properties[jobs.SortSnapshotProperty] != ""
}

func isOwnSnapshot(s *table.Snapshot) bool {
	if s.Summary == nil {
		return false
	}
	_, ok := s.Summary.Properties[jobs.SnapshotJobProperty]
	return ok
}

// input counts the data and delete files of parts and their bytes; with
// no parts, of the whole table (a table-wide job's input).
func (tc *tableCounters) input(parts []jobs.Partition) (files int, bytes int64) {
	add := func(c Counters) {
		files += c.DataFiles + c.DeleteFiles()
		bytes += c.Bytes + c.DeleteBytes
	}
	if len(parts) == 0 {
		for _, ps := range tc.partitions {
			add(ps.Counters)
		}
		return files, bytes
	}
	for _, p := range parts {
		if ps, ok := tc.partitions[p.Key]; ok {
			add(ps.Counters)
		}
	}
	return files, bytes
}

// totals sums the counters of every partition.
func (tc *tableCounters) totals() Counters {
	var t Counters
	for _, ps := range tc.partitions {
		t.DataFiles += ps.DataFiles
		t.Bytes += ps.Bytes
		t.Rows += ps.Rows
		t.SmallFiles += ps.SmallFiles
		t.TinyFiles += ps.TinyFiles
		for k := range t.Tiers {
			t.Tiers[k] += ps.Tiers[k]
		}
		t.PositionDeleteFiles += ps.PositionDeleteFiles
		t.EqualityDeleteFiles += ps.EqualityDeleteFiles
		t.DeletionVectors += ps.DeletionVectors
		t.PositionDeleteRows += ps.PositionDeleteRows
		t.EqualityDeleteRows += ps.EqualityDeleteRows
		t.DeletionVectorRows += ps.DeletionVectorRows
		t.DeleteBytes += ps.DeleteBytes
		t.DuplicateDeletionVectors += ps.DuplicateDeletionVectors
		t.DanglingDeletionVectors += ps.DanglingDeletionVectors
		t.SortedFiles += ps.SortedFiles
		if ps.LastWrite.After(t.LastWrite) {
			t.LastWrite = ps.LastWrite
		}
	}
	return t
}

func countDataManifests(ms []iceberg.ManifestFile) int {
	n := 0
	for _, m := range ms {
		if m.ManifestContent() == iceberg.ManifestContentData {
			n++
		}
	}
	return n
}

// coversSnapshot reports whether the state already reflects the commit of
// snapshot id: the state was built and the metadata it was built from
// holds the snapshot (a load that saw a snapshot saw its commit; the
// planner tracks main, so a branch's snapshot changes nothing it counts).
func (st *tableState) coversSnapshot(id int64) bool {
	return st.counters.snapshotID != 0 && (st.counters.snapshotID == id || st.snapshots.has(id))
}

// evaluated is ps's counters as the evaluation reads them: with the
// table's format version.
func (tc *tableCounters) evaluated(ps *partitionState) Counters {
	c := ps.Counters
	c.v3 = tc.formatVersion >= 3
	return c
}
