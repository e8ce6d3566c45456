package commit

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
)

// What one commit attempt of a Staged does: follow the commits
// since the last attempt, and assemble the manifest list and summary for
// the head it commits on.

// Advance brings the state from the snapshot seen last to meta's current
// one, reading only what the snapshots in between wrote: each one's
// manifest list and the manifests it added. Every entry they wrote is
// validated; a removed file they deleted ends the rewrite (ErrInputsGone)
// or, for an optional removal, drops it; a data file they added at or
// below an optional removal's sequence number drops that removal too;
// removed files they moved to new manifests are followed there.
func (st *Staged) Advance(meta table.Metadata) error {
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
		list, err := snap.Manifests(st.FS)
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

func (st *Staged) readNewManifest(snapID int64, m iceberg.ManifestFile) error {
	entries, err := m.FetchEntries(st.FS, false)
	if err != nil {
		return fmt.Errorf("read manifest %s: %w", m.FilePath(), err)
	}
	st.opened++
	st.known[m.FilePath()] = true
	for _, e := range entries {
		df := e.DataFile()
		path := FileKey(df)
		if e.SnapshotID() == snapID {
			if st.Validate != nil {
				if err := st.Validate(snapID, e); err != nil {
					return err
				}
			}
			switch e.Status() {
			case iceberg.EntryStatusDELETED:
				if _, ok := st.Always[path]; ok {
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
func (st *Staged) resurrect(seq int64) {
	for path, dseq := range st.dead {
		if seq < 0 || seq <= dseq {
			delete(st.dead, path)
		}
	}
}

// ManifestsFor is the manifest list of the next attempt on the snapshot the
// state has advanced to: the added files' manifests, the tombstones, then
// that snapshot's manifests in order with each one that holds a removed
// file replaced by its copy, and those holding no live file left out. ErrRescan when a manifest is unknown or a
// removed file is not found exactly once.
func (st *Staged) ManifestsFor(meta table.Metadata) ([]iceberg.ManifestFile, error) {
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
			return nil, fmt.Errorf("%w: manifest %s", ErrRescan, m.FilePath())
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
		return nil, fmt.Errorf("%w: %d of %d removed files found", ErrRescan, found, len(remove))
	}
	return out, nil
}

// copyOf returns m without the files held, writing it the first time (and
// again if what it must leave out changed).
func (st *Staged) copyOf(meta table.Metadata, m iceberg.ManifestFile, held []string) (*manifestCopy, error) {
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
		if entries, err = m.FetchEntries(st.FS, true); err != nil {
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
		if k := FileKey(e.DataFile()); drop[k] {
			delete(drop, k)
			continue
		}
		keep = append(keep, e)
	}
	if len(drop) > 0 {
		return nil, fmt.Errorf("%w: manifest %s does not hold %d of its removed files", ErrRescan, m.FilePath(), len(drop))
	}
	c := &manifestCopy{removed: key}
	if len(keep) > 0 {
		mf, err := st.Writer.writeManifest(meta, m.PartitionSpecID(), m.ManifestContent(), func(w *iceberg.ManifestWriter) error {
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
func (st *Staged) tombstones(meta table.Metadata, remove []string) ([]iceberg.ManifestFile, error) {
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
		mf, err := st.Writer.writeManifest(meta, g.spec, g.content, func(w *iceberg.ManifestWriter) error {
			for _, e := range groups[g] {
				seq := e.SequenceNum()
				tomb := iceberg.NewManifestEntry(iceberg.EntryStatusDELETED, &st.Writer.SnapshotID, &seq, e.FileSequenceNum(), e.DataFile())
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

// Summary is the next attempt's snapshot summary on meta's current
// snapshot.
func (st *Staged) Summary(meta table.Metadata) (table.Summary, error) {
	added := make([]iceberg.DataFile, 0, len(st.AddData)+len(st.AddDeletes))
	added = append(added, st.AddData...)
	for _, d := range st.AddDeletes {
		added = append(added, d.File)
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
	return RebaseSummary(st.Op, change, st.Props, previous), nil
}

func (st *Staged) supersede(files []iceberg.ManifestFile) {
	for _, m := range files {
		st.superseded = append(st.superseded, m.FilePath())
	}
}

// supersedeAll gives up the copies and tombstones (a rescan rebuilds them);
// the added files' manifests stay.
func (st *Staged) supersedeAll() {
	for _, c := range st.copies {
		st.supersede(c.files)
	}
	st.copies = nil
	st.supersede(st.tombs)
	st.tombs, st.tombsKey = nil, ""
}

// OwnManifests lists every manifest of ours in use (not superseded).
func (st *Staged) OwnManifests() []string {
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

// Opened counts the manifests and manifest lists st has read (the log
// says what an attempt cost).
func (st *Staged) Opened() int { return st.opened }

// Superseded are the manifests st wrote that no attempt uses any more.
func (st *Staged) Superseded() []string { return st.superseded }
