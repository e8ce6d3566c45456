package executor

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"runtime"
	"slices"
	"strings"
	"sync"

	"github.com/apache/iceberg-go"
	iceio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"
	"github.com/apache/iceberg-go/table/compaction"
	"golang.org/x/sync/errgroup"

	"github.com/icereactor/reactor/planner"
)

// errRescan: the table's manifests changed in a way the incremental state
// cannot follow (a manifest it never saw, a removed file it cannot place).
// The commit re-reads the whole current snapshot once and goes on.
var errRescan = errors.New("manifests changed beyond what the commits since the last attempt show")

// stagedRewrite is one snapshot that replaces files, built so that a
// commit attempt costs about what a writer's own commit costs however long
// the table's history is (DESIGN.md pitfalls 4 and 12).
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
// summaries and manifest order (parity_test.go checks it). Format v2 only;
// v1 and v3 tables commit through iceberg-go's producer.
type stagedRewrite struct {
	sw    *snapshotWriter
	fs    iceio.IO
	op    table.Operation
	props iceberg.Properties

	addData    []iceberg.DataFile
	addDeletes []deleteAddition
	// always are removed files that must all still be live (rewrite inputs,
	// merged delete sources); optional are delete files removed while dead.
	always   map[string]iceberg.DataFile
	optional map[string]iceberg.DataFile
	// dataTracked: data manifests may hold removed files or resurrect an
	// optional removal. Otherwise only delete manifests are read.
	dataTracked bool
	// validate checks one entry a newer snapshot wrote (nil: none).
	validate func(snapID int64, e iceberg.ManifestEntry) error

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

// deleteAddition is a delete file a rewrite adds at a given data sequence
// number (the merged position deletes).
type deleteAddition struct {
	file iceberg.DataFile
	seq  int64
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
func (st *stagedRewrite) reads(c iceberg.ManifestContent) bool {
	return c == iceberg.ManifestContentDeletes || st.dataTracked
}

// locates reports whether manifests of content c can hold a removed file:
// only those are read from the base snapshot and may be replaced by copies;
// the others pass through every attempt untouched.
func (st *stagedRewrite) locates(c iceberg.ManifestContent) bool {
	for _, df := range st.always {
		if (df.ContentType() == iceberg.EntryContentData) == (c == iceberg.ManifestContentData) {
			return true
		}
	}
	return c == iceberg.ManifestContentDeletes && len(st.optional) > 0
}

func (st *stagedRewrite) candidate(path string) bool {
	if _, ok := st.always[path]; ok {
		return true
	}
	_, ok := st.optional[path]
	return ok
}

// removals are the files the next attempt removes, by path.
func (st *stagedRewrite) removals() []string {
	out := slices.Collect(maps.Keys(st.always))
	for p := range st.dead {
		out = append(out, p)
	}
	slices.Sort(out)
	return out
}

// RemovedDeleteFiles is how many delete files the next attempt removes.
func (st *stagedRewrite) removedDeleteFiles() int {
	n := len(st.dead)
	for _, df := range st.always {
		if df.ContentType() != iceberg.EntryContentData {
			n++
		}
	}
	return n
}

// prepare reads the manifests of base's current snapshot that may hold a
// removal candidate (by their partition summaries) once: where each
// removed file lives, that every file that must go is live, and which
// optional delete files are dead once the rewrite's data files are gone.
// It writes the added files' manifests the first time. Earlier copies and
// tombstones are superseded.
func (st *stagedRewrite) prepare(ctx context.Context, base *table.Table) error {
	meta := base.Metadata()
	snap := meta.CurrentSnapshot()
	if snap == nil {
		return fmt.Errorf("%w: table has no current snapshot", ErrDiverged)
	}
	list, err := snap.Manifests(st.fs)
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

	keys := planner.NewKeyer(meta)
	survivorKey := func(df iceberg.DataFile) string {
		return fmt.Sprintf("%d|%s", df.SpecID(), keys.Key(df.SpecID(), df.Partition()))
	}
	needSurvivors := len(st.optional) > 0
	// Only manifests whose partition summaries admit a removal candidate's
	// partition are read (and, for the survivors a partition-scoped delete
	// needs, the same partitions; equality deletes may need every one).
	dataParts, deleteParts := newPartitionFilter(meta), newPartitionFilter(meta)
	for _, df := range st.always {
		if df.ContentType() == iceberg.EntryContentData {
			dataParts.add(df)
		} else {
			deleteParts.add(df)
		}
	}
	for _, df := range st.optional {
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
			entries, err := m.FetchEntries(st.fs, true)
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
				path := df.FilePath()
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
					st.live[e.DataFile().FilePath()] = e
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
	for path := range st.always {
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
func (st *stagedRewrite) decideDead(meta table.Metadata, minSeq map[string]int64, survey *compaction.SurvivorSurvey) error {
	keys := planner.NewKeyer(meta)
	var eqCandidates []iceberg.ManifestEntry
	for path := range st.optional {
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
			if target := referencedDataFile(df); target != "" {
				if _, rewritten := st.always[target]; rewritten {
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
func (st *stagedRewrite) writeAdded(meta table.Metadata) error {
	var out []iceberg.ManifestFile
	bySpec := map[int32][]iceberg.DataFile{}
	for _, df := range st.addData {
		bySpec[df.SpecID()] = append(bySpec[df.SpecID()], df)
	}
	for _, spec := range slices.Sorted(maps.Keys(bySpec)) {
		mf, err := st.sw.writeManifest(meta, spec, iceberg.ManifestContentData, func(w *iceberg.ManifestWriter) error {
			for _, df := range bySpec[spec] {
				if err := w.Add(iceberg.NewManifestEntry(iceberg.EntryStatusADDED, &st.sw.snapshotID, nil, nil, df)); err != nil {
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
	delBySpec := map[int32][]deleteAddition{}
	for _, d := range st.addDeletes {
		delBySpec[d.file.SpecID()] = append(delBySpec[d.file.SpecID()], d)
	}
	for _, spec := range slices.Sorted(maps.Keys(delBySpec)) {
		mf, err := st.sw.writeManifest(meta, spec, iceberg.ManifestContentDeletes, func(w *iceberg.ManifestWriter) error {
			for _, d := range delBySpec[spec] {
				seq := d.seq
				if err := w.Add(iceberg.NewManifestEntry(iceberg.EntryStatusADDED, &st.sw.snapshotID, &seq, nil, d.file)); err != nil {
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

// advance brings the state from the snapshot seen last to meta's current
// one, reading only what the snapshots in between wrote: each one's
// manifest list and the manifests it added. Every entry they wrote is
// validated; a removed file they deleted ends the rewrite (ErrInputsGone)
// or, for an optional removal, drops it; a data file they added at or
// below an optional removal's sequence number drops that removal too;
// removed files they moved to new manifests are followed there.
func (st *stagedRewrite) advance(meta table.Metadata) error {
	cur := meta.CurrentSnapshot()
	if cur == nil {
		return fmt.Errorf("%w: table has no current snapshot", ErrDiverged)
	}
	if cur.SnapshotID == st.seen {
		return nil
	}
	var newer []*table.Snapshot
	for s := cur; s.SnapshotID != st.seen; {
		newer = append(newer, s)
		if s.ParentSnapshotID == nil {
			return fmt.Errorf("%w: snapshot %d is not an ancestor of %d", ErrDiverged, st.seen, cur.SnapshotID)
		}
		if s = meta.SnapshotByID(*s.ParentSnapshotID); s == nil {
			return fmt.Errorf("%w: ancestry of %d is incomplete", ErrDiverged, cur.SnapshotID)
		}
	}
	var curList []iceberg.ManifestFile
	for i := len(newer) - 1; i >= 0; i-- {
		snap := newer[i]
		list, err := snap.Manifests(st.fs)
		if err != nil {
			return fmt.Errorf("read manifest list of snapshot %d: %w", snap.SnapshotID, err)
		}
		st.opened++
		if snap == cur {
			curList = list
		}
		for _, m := range list {
			if m.SnapshotID() != snap.SnapshotID || !st.reads(m.ManifestContent()) || st.known[m.FilePath()] {
				continue
			}
			if err := st.readNewManifest(snap.SnapshotID, m); err != nil {
				return err
			}
		}
	}
	st.seen, st.seenList = cur.SnapshotID, curList
	return nil
}

func (st *stagedRewrite) readNewManifest(snapID int64, m iceberg.ManifestFile) error {
	entries, err := m.FetchEntries(st.fs, false)
	if err != nil {
		return fmt.Errorf("read manifest %s: %w", m.FilePath(), err)
	}
	st.opened++
	st.known[m.FilePath()] = true
	for _, e := range entries {
		df := e.DataFile()
		path := df.FilePath()
		if e.SnapshotID() == snapID {
			if st.validate != nil {
				if err := st.validate(snapID, e); err != nil {
					return err
				}
			}
			switch e.Status() {
			case iceberg.EntryStatusDELETED:
				if _, ok := st.always[path]; ok {
					return fmt.Errorf("%w: snapshot %d removed %s", ErrInputsGone, snapID, path)
				}
				delete(st.dead, path) // someone else removed it: not ours to remove
			case iceberg.EntryStatusADDED:
				if df.ContentType() == iceberg.EntryContentData {
					st.resurrect(e.SequenceNum())
				}
			}
		}
		if e.Status() != iceberg.EntryStatusDELETED && st.candidate(path) {
			st.holds[m.FilePath()] = append(st.holds[m.FilePath()], path)
			st.live[path] = e
		}
	}
	if len(st.holds[m.FilePath()]) > 0 {
		st.held[m.FilePath()] = slices.DeleteFunc(entries, func(e iceberg.ManifestEntry) bool {
			return e.Status() == iceberg.EntryStatusDELETED
		})
	}
	return nil
}

// resurrect keeps every optional removal a data file added at sequence
// number seq may be subject to. Partitions are not compared: a new data
// file at or below an existing delete's sequence number is rare (a rewrite
// that keeps sequence numbers), and keeping a dead delete is safe.
func (st *stagedRewrite) resurrect(seq int64) {
	for path, dseq := range st.dead {
		if seq < 0 || seq <= dseq {
			delete(st.dead, path)
		}
	}
}

// manifestsFor is the manifest list of the next attempt on the snapshot the
// state has advanced to: the added files' manifests, the tombstones, then
// that snapshot's manifests in order with each one that holds a removed
// file replaced by its copy, and those holding no live file left out. errRescan when a manifest is unknown or a
// removed file is not found exactly once.
func (st *stagedRewrite) manifestsFor(meta table.Metadata) ([]iceberg.ManifestFile, error) {
	remove := st.removals()
	removing := make(map[string]bool, len(remove))
	for _, p := range remove {
		removing[p] = true
	}
	tombs, err := st.tombstones(meta, remove)
	if err != nil {
		return nil, err
	}
	out := slices.Concat(st.added, tombs)
	found := 0
	for _, m := range st.seenList {
		if !m.HasAddedFiles() && !m.HasExistingFiles() {
			// Only DELETED entries (another commit's tombstones): nothing
			// to read through it, and iceberg-go drops it too.
			continue
		}
		if !st.locates(m.ManifestContent()) {
			out = append(out, m)
			continue
		}
		if !st.known[m.FilePath()] {
			return nil, fmt.Errorf("%w: manifest %s", errRescan, m.FilePath())
		}
		var held []string
		for _, p := range st.holds[m.FilePath()] {
			if removing[p] {
				held = append(held, p)
			}
		}
		if len(held) == 0 {
			out = append(out, m)
			continue
		}
		slices.Sort(held)
		c, err := st.copyOf(meta, m, held)
		if err != nil {
			return nil, err
		}
		out = append(out, c.files...)
		found += len(held)
	}
	if found != len(remove) {
		return nil, fmt.Errorf("%w: %d of %d removed files found", errRescan, found, len(remove))
	}
	return out, nil
}

// copyOf returns m without the files held, writing it the first time (and
// again if what it must leave out changed).
func (st *stagedRewrite) copyOf(meta table.Metadata, m iceberg.ManifestFile, held []string) (*manifestCopy, error) {
	key := strings.Join(held, "\x00")
	if c, ok := st.copies[m.FilePath()]; ok {
		if c.removed == key {
			return c, nil
		}
		st.supersede(c.files)
		delete(st.copies, m.FilePath())
	}
	entries, ok := st.held[m.FilePath()]
	if !ok {
		var err error
		if entries, err = m.FetchEntries(st.fs, true); err != nil {
			return nil, fmt.Errorf("read manifest %s: %w", m.FilePath(), err)
		}
		st.opened++
	}
	drop := make(map[string]bool, len(held))
	for _, p := range held {
		drop[p] = true
	}
	var keep []iceberg.ManifestEntry
	for _, e := range entries {
		if drop[e.DataFile().FilePath()] {
			delete(drop, e.DataFile().FilePath())
			continue
		}
		keep = append(keep, e)
	}
	if len(drop) > 0 {
		return nil, fmt.Errorf("%w: manifest %s does not hold %d of its removed files", errRescan, m.FilePath(), len(drop))
	}
	c := &manifestCopy{removed: key}
	if len(keep) > 0 {
		mf, err := st.sw.writeManifest(meta, m.PartitionSpecID(), m.ManifestContent(), func(w *iceberg.ManifestWriter) error {
			for _, e := range keep {
				if err := w.Existing(e); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
		c.files = []iceberg.ManifestFile{mf}
	}
	if st.copies == nil {
		st.copies = map[string]*manifestCopy{}
	}
	st.copies[m.FilePath()] = c
	return c, nil
}

// tombstones returns the DELETED entries of the removed files, one
// manifest per (spec, content), written again only when the removals
// changed.
func (st *stagedRewrite) tombstones(meta table.Metadata, remove []string) ([]iceberg.ManifestFile, error) {
	key := strings.Join(remove, "\x00")
	if st.tombs != nil && st.tombsKey == key {
		return st.tombs, nil
	}
	st.supersede(st.tombs)
	st.tombs, st.tombsKey = nil, ""
	type group struct {
		spec    int32
		content iceberg.ManifestContent
	}
	groups := map[group][]iceberg.ManifestEntry{}
	for _, p := range remove {
		e := st.live[p]
		g := group{spec: e.DataFile().SpecID(), content: iceberg.ManifestContentData}
		if e.DataFile().ContentType() != iceberg.EntryContentData {
			g.content = iceberg.ManifestContentDeletes
		}
		groups[g] = append(groups[g], e)
	}
	order := slices.SortedFunc(maps.Keys(groups), func(a, b group) int {
		if a.spec != b.spec {
			return int(a.spec - b.spec)
		}
		return int(a.content) - int(b.content)
	})
	out := []iceberg.ManifestFile{}
	for _, g := range order {
		mf, err := st.sw.writeManifest(meta, g.spec, g.content, func(w *iceberg.ManifestWriter) error {
			for _, e := range groups[g] {
				seq := e.SequenceNum()
				tomb := iceberg.NewManifestEntry(iceberg.EntryStatusDELETED, &st.sw.snapshotID, &seq, e.FileSequenceNum(), e.DataFile())
				if err := w.Delete(tomb); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			st.supersede(out)
			return nil, err
		}
		out = append(out, mf)
	}
	st.tombs, st.tombsKey = out, key
	return out, nil
}

// summary is the next attempt's snapshot summary on meta's current
// snapshot.
func (st *stagedRewrite) summary(meta table.Metadata) (table.Summary, error) {
	added := make([]iceberg.DataFile, 0, len(st.addData)+len(st.addDeletes))
	added = append(added, st.addData...)
	for _, d := range st.addDeletes {
		added = append(added, d.file)
	}
	var removed []iceberg.DataFile
	for _, p := range st.removals() {
		removed = append(removed, st.live[p].DataFile())
	}
	limit := meta.Properties().GetInt(table.WritePartitionSummaryLimitKey, table.WritePartitionSummaryLimitDefault)
	change, err := fileChangeSummary(meta, added, removed, limit)
	if err != nil {
		return table.Summary{}, err
	}
	var previous iceberg.Properties
	if cur := meta.CurrentSnapshot(); cur != nil && cur.Summary != nil {
		previous = cur.Summary.Properties
	}
	return rebaseSummary(st.op, change, st.props, previous), nil
}

func (st *stagedRewrite) supersede(files []iceberg.ManifestFile) {
	for _, m := range files {
		st.superseded = append(st.superseded, m.FilePath())
	}
}

// supersedeAll gives up the copies and tombstones (a rescan rebuilds them);
// the added files' manifests stay.
func (st *stagedRewrite) supersedeAll() {
	for _, c := range st.copies {
		st.supersede(c.files)
	}
	st.copies = nil
	st.supersede(st.tombs)
	st.tombs, st.tombsKey = nil, ""
}

// ownManifests lists every manifest of ours in use (not superseded).
func (st *stagedRewrite) ownManifests() []string {
	var out []string
	for _, m := range st.added {
		out = append(out, m.FilePath())
	}
	for _, m := range st.tombs {
		out = append(out, m.FilePath())
	}
	for _, c := range st.copies {
		for _, m := range c.files {
			out = append(out, m.FilePath())
		}
	}
	return out
}
