package commit

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"runtime"
	"slices"
	"sync"

	"github.com/apache/iceberg-go"
	iceio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"
	"github.com/apache/iceberg-go/table/compaction"
	"github.com/icereactor/reactor/jobs"
	"golang.org/x/sync/errgroup"
)

// ErrRescan: the table's manifests changed in a way the incremental state
// cannot follow (a manifest it never saw, a removed file it cannot place).
// The commit re-reads the whole current snapshot once and goes on.
var ErrRescan = errors.New("manifests changed beyond what the commits since the last attempt show")

// Staged is one snapshot that replaces files, built so that a
// commit attempt costs about what a writer's own commit costs however long
// the table's history is (docs/design.md#pitfall-redo-never-wins,
// docs/design.md#pitfall-writer-wins-races).
//
// Its manifests are written once: the added files' manifests, the DELETED
// tombstones of the removed files, and copies of the base manifests that
// held a removed file, without it. A retry after a conflict reads only the
// snapshots committed since the previous attempt (their manifest lists and
// the manifests they added) to re-validate and to follow the removed files,
// then writes a new manifest list (our manifests plus the head's other
// manifests, unchanged) and commits it requiring main still at that head.
//
// Delete files the rewrite leaves applying to nothing ("optional"
// removals) are decided once against the base snapshot; a later commit can
// only make one of them apply again by adding a data file with a sequence
// number at or below the delete's, or remove it itself: either drops it
// from the removals (keeping a dead delete is safe, removing a live one
// resurrects rows).
//
// The manifests and lists are what iceberg-go's rewrite producer writes for
// the same change on the same head: same entries, sequence numbers,
// summaries and manifest order (parity_test.go checks it). Format v2, and
// format v3 for rewrites that add no data files (the deletion-vector
// maintenance: the manifest list assigns row ids only to data manifests
// that lack them); v1 tables and v3 data rewrites commit through
// iceberg-go's producer.
type Staged struct {
	// Writer writes the snapshot's manifests and lists; the caller sets
	// it before Prepare.
	Writer *SnapshotWriter
	FS     iceio.IO
	Op     table.Operation
	Props  iceberg.Properties

	AddData    []iceberg.DataFile
	AddDeletes []DeleteAddition
	// Always are removed files that must all still be live (rewrite inputs,
	// merged delete sources); Optional are delete files removed while dead.
	Always   map[string]iceberg.DataFile
	Optional map[string]iceberg.DataFile
	// DataTracked: data manifests may hold removed files or resurrect an
	// optional removal. Otherwise only delete manifests are read.
	DataTracked bool
	// Validate checks one entry a newer snapshot wrote (nil: none).
	Validate func(snapID int64, e iceberg.ManifestEntry) error

	// What the state describes: the snapshot seen last and its manifests.
	seen     int64
	seenList []iceberg.ManifestFile
	// dead are the optional removals planned now, with their sequence.
	dead map[string]int64
	// live is the live entry of every removal candidate found, for its
	// tombstone (sequence numbers) and the summary.
	live map[string]iceberg.ManifestEntry
	// holds maps a manifest to the removal candidates it holds live; known
	// is every manifest the state has read (tracked content only).
	holds map[string][]string
	known map[string]bool
	// held caches the live entries of the manifests in holds, so a copy
	// is written without reading its manifest again.
	held map[string][]iceberg.ManifestEntry

	added      []iceberg.ManifestFile
	tombs      []iceberg.ManifestFile
	tombsKey   string
	copies     map[string]*manifestCopy
	superseded []string
	// opened counts manifests and manifest lists read (the log says what
	// an attempt cost).
	opened int
}

// DeleteAddition is a delete file a rewrite adds at a given data sequence
// number (the merged position deletes).
type DeleteAddition struct {
	File iceberg.DataFile
	Seq  int64
}

// manifestCopy is a base manifest rewritten without the removed files it
// held (files is empty when nothing else was in it).
type manifestCopy struct {
	removed string // sorted removed paths, joined: what the copy is for
	files   []iceberg.ManifestFile
}

// reads reports whether manifests of content c that newer snapshots add
// must be read: delete manifests always (new deletes may apply to what the
// rewrite reads), data manifests when dataTracked.
func (st *Staged) reads(c iceberg.ManifestContent) bool {
	return c == iceberg.ManifestContentDeletes || st.DataTracked
}

// locates reports whether manifests of content c can hold a removed file:
// only those are read from the base snapshot and may be replaced by copies;
// the others pass through every attempt untouched.
func (st *Staged) locates(c iceberg.ManifestContent) bool {
	for _, df := range st.Always {
		if (df.ContentType() == iceberg.EntryContentData) == (c == iceberg.ManifestContentData) {
			return true
		}
	}
	return c == iceberg.ManifestContentDeletes && len(st.Optional) > 0
}

func (st *Staged) candidate(path string) bool {
	if _, ok := st.Always[path]; ok {
		return true
	}
	_, ok := st.Optional[path]
	return ok
}

// removals are the files the next attempt removes, by path.
func (st *Staged) removals() []string {
	out := slices.Collect(maps.Keys(st.Always))
	for p := range st.dead {
		out = append(out, p)
	}
	slices.Sort(out)
	return out
}

// RemovedDeleteFiles is how many delete files the next attempt removes.
func (st *Staged) RemovedDeleteFiles() int {
	n := len(st.dead)
	for _, df := range st.Always {
		if df.ContentType() != iceberg.EntryContentData {
			n++
		}
	}
	return n
}

// Prepare reads the manifests of base's current snapshot that may hold a
// removal candidate (by their partition summaries) once: where each
// removed file lives, that every file that must go is live, and which
// optional delete files are dead once the rewrite's data files are gone.
// It writes the added files' manifests the first time. Earlier copies and
// tombstones are superseded.
func (st *Staged) Prepare(ctx context.Context, base *table.Table) error {
	meta := base.Metadata()
	snap := meta.CurrentSnapshot()
	if snap == nil {
		return fmt.Errorf("%w: table has no current snapshot", ErrDiverged)
	}
	list, err := snap.Manifests(st.FS)
	if err != nil {
		return fmt.Errorf("read manifest list of snapshot %d: %w", snap.SnapshotID, err)
	}
	st.opened++
	st.supersedeAll()
	st.seen, st.seenList = snap.SnapshotID, list
	st.live = map[string]iceberg.ManifestEntry{}
	st.holds = map[string][]string{}
	st.known = map[string]bool{}
	st.held = map[string][]iceberg.ManifestEntry{}
	st.dead = map[string]int64{}

	keys := jobs.NewKeyer(meta)
	survivorKey := func(df iceberg.DataFile) string {
		return fmt.Sprintf("%d|%s", df.SpecID(), keys.Key(df.SpecID(), df.Partition()))
	}
	needSurvivors := len(st.Optional) > 0
	// Only manifests whose partition summaries admit a removal candidate's
	// partition are read (and, for the survivors a partition-scoped delete
	// needs, the same partitions; equality deletes may need every one).
	dataParts, deleteParts := newPartitionFilter(meta), newPartitionFilter(meta)
	for _, df := range st.Always {
		if df.ContentType() == iceberg.EntryContentData {
			dataParts.add(df)
		} else {
			deleteParts.add(df)
		}
	}
	for _, df := range st.Optional {
		deleteParts.add(df)
		dataParts.add(df)
		if df.ContentType() == iceberg.EntryContentEqDeletes {
			dataParts.all = true
		}
	}
	var (
		mu        sync.Mutex
		minSeq    = map[string]int64{} // least sequence number of a surviving data file, per (spec, partition)
		survey    = compaction.NewSurvivorSurvey()
		manifests int
		pruned    []string
	)
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(runtime.GOMAXPROCS(0))
	for _, m := range list {
		c := m.ManifestContent()
		var read bool
		switch c {
		case iceberg.ManifestContentData:
			read = (st.locates(c) || needSurvivors) && dataParts.mayHold(m)
		case iceberg.ManifestContentDeletes:
			read = st.locates(c) && deleteParts.mayHold(m)
		}
		if !read {
			if st.locates(c) {
				pruned = append(pruned, m.FilePath()) // holds no candidate
			}
			continue
		}
		g.Go(func() error {
			if err := gctx.Err(); err != nil {
				return err
			}
			entries, err := m.FetchEntries(st.FS, true)
			if err != nil {
				return fmt.Errorf("read manifest %s: %w", m.FilePath(), err)
			}
			var (
				held      []string
				heldLive  []iceberg.ManifestEntry
				localMin  = map[string]int64{}
				survivors []iceberg.ManifestEntry
			)
			for _, e := range entries {
				df := e.DataFile()
				path := FileKey(df)
				if st.candidate(path) {
					held = append(held, path)
					heldLive = append(heldLive, e)
					continue
				}
				if df.ContentType() == iceberg.EntryContentData && needSurvivors {
					k := survivorKey(df)
					seq := max(e.SequenceNum(), 0)
					if cur, ok := localMin[k]; !ok || seq < cur {
						localMin[k] = seq
					}
					survivors = append(survivors, e)
				}
			}
			mu.Lock()
			defer mu.Unlock()
			manifests++
			st.known[m.FilePath()] = true
			if len(held) > 0 {
				st.holds[m.FilePath()] = held
				st.held[m.FilePath()] = entries
				for _, e := range heldLive {
					st.live[FileKey(e.DataFile())] = e
				}
			}
			for k, seq := range localMin {
				if cur, ok := minSeq[k]; !ok || seq < cur {
					minSeq[k] = seq
				}
			}
			for _, e := range survivors {
				survey.AddSurvivorWithSpec(e.DataFile().SpecID(), e.DataFile().Partition(), e.SequenceNum())
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return err
	}
	for _, p := range pruned {
		st.known[p] = true
	}
	st.opened += manifests
	for path := range st.Always {
		if _, ok := st.live[path]; !ok {
			return fmt.Errorf("%w: %s is not live in snapshot %d", ErrInputsGone, path, snap.SnapshotID)
		}
	}
	if err := st.decideDead(meta, minSeq, survey); err != nil {
		return err
	}
	if st.added == nil {
		if err := st.writeAdded(meta); err != nil {
			return err
		}
	}
	return nil
}

// decideDead picks the optional delete files that apply to nothing once the
// rewrite's data files are gone, with iceberg-go's rules: a file-scoped
// position delete dies with its data file; a partition-scoped one when no
// surviving data file of its (spec, partition) has a sequence number at or
// below its own; an equality delete per compaction.DecideDeadEqualityDeletesWithSpecs.
func (st *Staged) decideDead(meta table.Metadata, minSeq map[string]int64, survey *compaction.SurvivorSurvey) error {
	keys := jobs.NewKeyer(meta)
	var eqCandidates []iceberg.ManifestEntry
	for path := range st.Optional {
		e, ok := st.live[path]
		if !ok {
			continue // gone already: nothing to remove
		}
		df := e.DataFile()
		switch df.ContentType() {
		case iceberg.EntryContentPosDeletes:
			if table.IsDeletionVector(df) {
				continue
			}
			if target := ReferencedDataFile(df); target != "" {
				if _, rewritten := st.Always[target]; rewritten {
					st.dead[path] = e.SequenceNum()
				}
				continue
			}
			seq := e.SequenceNum()
			if seq < 0 {
				continue
			}
			k := fmt.Sprintf("%d|%s", df.SpecID(), keys.Key(df.SpecID(), df.Partition()))
			if cur, ok := minSeq[k]; !ok || cur > seq {
				st.dead[path] = seq
			}
		case iceberg.EntryContentEqDeletes:
			eqCandidates = append(eqCandidates, e)
		}
	}
	if len(eqCandidates) == 0 {
		return nil
	}
	dead, err := compaction.DecideDeadEqualityDeletesWithSpecs(survey, eqCandidates, meta)
	if err != nil {
		return fmt.Errorf("decide dead equality deletes: %w", err)
	}
	for _, df := range dead {
		st.dead[df.FilePath()] = st.live[df.FilePath()].SequenceNum()
	}
	return nil
}

// writeAdded writes the manifests of the files the rewrite adds: data files
// inherit the snapshot's sequence number, delete files carry their own;
// one manifest per spec, data first, as iceberg-go orders them.
func (st *Staged) writeAdded(meta table.Metadata) error {
	var out []iceberg.ManifestFile
	bySpec := map[int32][]iceberg.DataFile{}
	for _, df := range st.AddData {
		bySpec[df.SpecID()] = append(bySpec[df.SpecID()], df)
	}
	for _, spec := range slices.Sorted(maps.Keys(bySpec)) {
		mf, err := st.Writer.writeManifest(meta, spec, iceberg.ManifestContentData, func(w *iceberg.ManifestWriter) error {
			for _, df := range bySpec[spec] {
				if err := w.Add(iceberg.NewManifestEntry(iceberg.EntryStatusADDED, &st.Writer.SnapshotID, nil, nil, df)); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			st.added = out
			return err
		}
		out = append(out, mf)
	}
	delBySpec := map[int32][]DeleteAddition{}
	for _, d := range st.AddDeletes {
		delBySpec[d.File.SpecID()] = append(delBySpec[d.File.SpecID()], d)
	}
	for _, spec := range slices.Sorted(maps.Keys(delBySpec)) {
		mf, err := st.Writer.writeManifest(meta, spec, iceberg.ManifestContentDeletes, func(w *iceberg.ManifestWriter) error {
			for _, d := range delBySpec[spec] {
				seq := d.Seq
				if err := w.Add(iceberg.NewManifestEntry(iceberg.EntryStatusADDED, &st.Writer.SnapshotID, &seq, nil, d.File)); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			st.added = out
			return err
		}
		out = append(out, mf)
	}
	st.added = out
	if st.added == nil {
		st.added = []iceberg.ManifestFile{}
	}
	return nil
}
