// Package deletions keeps reactor's records in a table's own storage: the
// durable list of files that left the table and wait out the reader margin
// before they are deleted, and three smaller records of the same kind.
//
// Expiry unlinks files from a table (the snapshots that referenced them are
// gone) but a reader that planned before the expiry may still be reading
// them (docs/design.md#seed-reader-incident). So expiry deletes nothing
// itself; it writes a batch here, due min_reader_margin after its commit,
// and a later pass deletes what is due, after checking every file against
// the table's history again. A batch is an immutable file under the
// table's own metadata directory (metadata/_reactor/pending-deletes/), so
// the list survives restarts and crashes of reactor, needs nothing but the
// table's storage, and is never an orphan candidate: a path component
// starting with "_" is hidden from Spark's remove_orphan_files and from
// reactor's own.
//
// Beside the batches it keeps the expiry intents (an expiry about to
// commit; both in deletions.go, with Records, one table's records in its
// storage), the output intents of rewriting jobs (outputs.go: what a killed
// job may have written, for the table's next owner) and the snapshots
// reactor committed through Spark (own_snapshots.go: reactor's own, though
// their summaries cannot say so).
//
// Whoever may write the table's storage may drop a file into that
// directory, so every record is signed with a key only reactor holds
// (keys.go, seal.go) and bound to its kind and its table: a record that is
// unsigned, signed with another key, altered, written for another table or
// larger than the limit is refused whole (a *Refusal) and never acted on
// (docs/design.md#rule-own-records).
//
// The package reads and writes these records; it never deletes a table
// file and never decides what is unreachable or what a table may delete:
// that is the executor's, under package scope's rule.
package deletions

import (
	"cmp"
	"errors"
	"fmt"
	iofs "io/fs"
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	iceio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"
	"github.com/google/uuid"

	"github.com/icereactor/reactor/history"
	"github.com/icereactor/reactor/location"
)

// DirName is where, under a table's location, records are written.
const DirName = "metadata/_reactor/pending-deletes"

// maxFilesPerRecord splits a large expiry's batch over several records, so
// that each stays well below DefaultMaxRecordBytes (a file entry is about
// 200 bytes).
const maxFilesPerRecord = 50_000

// File is one file waiting for deletion.
type File struct {
	Path string `json:"path"`
	// Kind is spelled as Spark's expire_snapshots counts files
	// (history.Kind's String: "data", "position_delete", ...).
	Kind history.Kind `json:"kind"`
}

// Batch is the files one job unlinked from a table (or a part of them:
// a large expiry's batch is split over several records).
type Batch struct {
	Table string `json:"table"`
	JobID string `json:"job_id"`
	// LeftAt is when the files left the table (the job's commit): no
	// reader can start on them after it.
	LeftAt time.Time `json:"left_at"`
	// Due is when they may be deleted: LeftAt plus the reader margin.
	Due   time.Time `json:"due_at"`
	Files []File    `json:"files"`
	// Roots are where the table's files lay when the expiry committed, as
	// the metadata reactor loaded named them: a file is deleted only if
	// it lies under them then and under the table's roots at deletion
	// time (a later property change alone widens nothing).
	Roots []string `json:"roots,omitempty"`
	// Part and Parts number the records of one expiry's batch.
	Part  int `json:"part,omitempty"`
	Parts int `json:"parts,omitempty"`
}

// Ref names a stored record; a batch's due time is in its name, so a
// listing says what is due without reading the batches. An Intent ref
// names an expiry that was about to commit when it was written: if its
// batch is not there, the process died between the commit and the batch,
// and the next deletion pass rebuilds the batch from the metadata the
// expiry started on.
type Ref struct {
	Location string
	Due      time.Time
	Intent   bool
}

// Intent records an expiry about to commit, before its batch exists.
type Intent struct {
	Table string `json:"table"`
	JobID string `json:"job_id"`
	// BaseMetadata is the metadata file the expiry started from: the
	// snapshots it may remove are in it.
	BaseMetadata string    `json:"base_metadata"`
	Written      time.Time `json:"written_at"`
	// Roots: as Batch.Roots, when the expiry started.
	Roots []string `json:"roots,omitempty"`
}

var (
	nameRE   = regexp.MustCompile(`^(\d{13})-([A-Za-z0-9_-]{1,64})\.json$`)
	intentRE = regexp.MustCompile(`^intent-([A-Za-z0-9_-]{1,64})\.json$`)
)

// Dir is the record directory of the table at tableLocation.
func Dir(tableLocation string) string {
	return strings.TrimRight(tableLocation, "/") + "/" + DirName
}

// ErrNotWritable: the table's storage offers no way to write a file.
var ErrNotWritable = errors.New("table storage cannot write files")

// TableRef is what a table's records are bound to: a record signed for one
// table is refused when read for another, wherever it is copied.
type TableRef struct {
	Location string
	// UUID is the table's table-uuid; empty when its metadata has none
	// (format v1 may omit it): the location binds the records then.
	UUID string
}

// RefOf is the reference of the table tbl is.
func RefOf(tbl *table.Table) TableRef {
	ref := TableRef{Location: tbl.Location()}
	if id := tbl.Metadata().TableUUID(); id != uuid.Nil {
		ref.UUID = id.String()
	}
	return ref
}

func (t TableRef) binding() string {
	if t.UUID != "" {
		return "uuid:" + t.UUID
	}
	return "location:" + location.Identity(t.Location)
}

// Records are one table's records, signed and verified with one keyring.
type Records struct {
	fs    iceio.IO
	table TableRef
	keys  *Keyring
}

// Records are the records of the table t in the storage fs.
func (k *Keyring) Records(fs iceio.IO, t TableRef) Records {
	return Records{fs: fs, table: t, keys: k}
}

// dir is where r's records lie.
func (r Records) dir() string { return Dir(r.table.Location) }

// write stores v as a record of kind at loc.
func (r Records) write(loc, kind string, v any) error {
	w, ok := r.fs.(iceio.WriteFileIO)
	if !ok {
		return ErrNotWritable
	}
	data, err := r.keys.seal(kind, r.table.binding(), v)
	if err != nil {
		return fmt.Errorf("deletions: encode %s: %w", path.Base(loc), err)
	}
	if err := w.WriteFile(loc, data); err != nil {
		return fmt.Errorf("deletions: write %s: %w", loc, err)
	}
	return nil
}

// read loads the record of kind at loc into v: a *Refusal when it is not
// one of reactor's for this table, an error wrapping fs.ErrNotExist when
// it is gone.
func (r Records) read(loc, kind string, v any) error {
	data, err := readBounded(r.fs, loc, r.keys.maxBytes())
	if err != nil {
		if errors.Is(err, ErrRefused) {
			return err
		}
		return fmt.Errorf("deletions: read %s: %w", loc, err)
	}
	return r.keys.open(loc, data, kind, r.table.binding(), v)
}

// WriteBatch stores b under the table's location, split into parts of at
// most maxFilesPerRecord files, and returns their references. A name
// carries the due time and the job id, so writing the same job's batch
// twice (a retried write) replaces it with identical content.
func (r Records) WriteBatch(b Batch) ([]Ref, error) {
	id := sanitize(b.JobID)
	if id == "" {
		return nil, errors.New("deletions: a batch needs a job id")
	}
	due := b.Due.UTC().Truncate(time.Millisecond)
	parts := max(1, (len(b.Files)+maxFilesPerRecord-1)/maxFilesPerRecord)
	var refs []Ref
	for i := range parts {
		part := b
		part.Files = b.Files[i*maxFilesPerRecord : min(len(b.Files), (i+1)*maxFilesPerRecord)]
		name := fmt.Sprintf("%013d-%s.json", due.UnixMilli(), id)
		if parts > 1 {
			part.Part, part.Parts = i+1, parts
			name = fmt.Sprintf("%013d-%s-p%d.json", due.UnixMilli(), truncate(id, 56), i+1)
		}
		loc := r.dir() + "/" + name
		if err := r.write(loc, KindPendingDeletes, part); err != nil {
			return refs, err
		}
		refs = append(refs, Ref{Location: loc, Due: due})
	}
	return refs, nil
}

// walkFiles calls visit with every file under the table's record
// directory; a table without one visits nothing.
func (r Records) walkFiles(visit func(p string)) error {
	lister, ok := r.fs.(iceio.ListableIO)
	if !ok {
		return fmt.Errorf("deletions: table storage cannot list %s", r.dir())
	}
	err := lister.WalkDir(r.dir(), func(p string, d iofs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, iofs.ErrNotExist) {
				return iofs.SkipAll
			}
			return err
		}
		if !d.IsDir() {
			visit(p)
		}
		return nil
	})
	if err != nil && !errors.Is(err, iofs.ErrNotExist) {
		return fmt.Errorf("deletions: list %s: %w", r.dir(), err)
	}
	return nil
}

// List returns the table's batches and expiry intents by their names,
// earliest due first (intents, due at once, before them); nothing is read
// or verified yet. A table with none (no directory at all) returns an
// empty list; files that are not named as batches are ignored.
func (r Records) List() ([]Ref, error) {
	var refs []Ref
	err := r.walkFiles(func(p string) {
		if intentRE.MatchString(path.Base(p)) {
			refs = append(refs, Ref{Location: p, Intent: true})
			return
		}
		m := nameRE.FindStringSubmatch(path.Base(p))
		if m == nil {
			return
		}
		ms, _ := strconv.ParseInt(m[1], 10, 64)
		refs = append(refs, Ref{Location: p, Due: time.UnixMilli(ms).UTC()})
	})
	if err != nil {
		return nil, err
	}
	slices.SortFunc(refs, func(a, b Ref) int {
		return cmp.Or(a.Due.Compare(b.Due), strings.Compare(a.Location, b.Location))
	})
	// Intents have a zero due time: they sort first, due at once.
	return refs, nil
}

// WriteIntent records an expiry about to commit.
func (r Records) WriteIntent(in Intent) (Ref, error) {
	id := sanitize(in.JobID)
	if id == "" {
		return Ref{}, errors.New("deletions: an intent needs a job id")
	}
	loc := r.dir() + "/intent-" + id + ".json"
	if err := r.write(loc, KindExpiryIntent, in); err != nil {
		return Ref{}, err
	}
	return Ref{Location: loc, Intent: true}, nil
}

// ReadBatch loads and verifies a stored batch.
func (r Records) ReadBatch(ref Ref) (Batch, error) {
	var b Batch
	return b, r.read(ref.Location, KindPendingDeletes, &b)
}

// ReadIntent loads and verifies a stored expiry intent.
func (r Records) ReadIntent(ref Ref) (Intent, error) {
	var in Intent
	return in, r.read(ref.Location, KindExpiryIntent, &in)
}

// Remove deletes a stored record once it is dealt with. One already gone
// is not an error. Only a record that verified may be removed: a refused
// one is left for an operator.
func (r Records) Remove(ref Ref) error {
	if err := r.fs.Remove(ref.Location); err != nil && !errors.Is(err, iofs.ErrNotExist) {
		return fmt.Errorf("deletions: remove %s: %w", ref.Location, err)
	}
	return nil
}

// sanitize keeps a job id usable in a file name.
func sanitize(id string) string {
	var b strings.Builder
	for _, r := range id {
		if r < 128 && (r == '-' || r == '_' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z') {
			b.WriteRune(r)
		}
		if b.Len() == 64 {
			break
		}
	}
	return b.String()
}

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	return s
}

// Shielded lists, by identity, every file any of the table's batches
// names, whether the batch verifies or not: orphan cleanup never deletes
// them, and a forged batch can only make it delete less. An unreadable or
// oversized batch shields nothing.
func (r Records) Shielded() (map[string]bool, error) {
	refs, err := r.List()
	if err != nil {
		return nil, err
	}
	out := map[string]bool{}
	for _, ref := range refs {
		if ref.Intent {
			continue
		}
		data, err := readBounded(r.fs, ref.Location, r.keys.maxBytes())
		if errors.Is(err, iofs.ErrNotExist) || errors.Is(err, ErrRefused) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("deletions: read %s: %w", ref.Location, err)
		}
		var b Batch
		if !decodeUnverified(data, &b) {
			continue
		}
		for _, f := range b.Files {
			out[location.Identity(f.Path)] = true
		}
	}
	return out, nil
}

// List lists the batches and intents of the table at tableLocation by
// their names (Records.List without a keyring: a listing verifies
// nothing; each record is verified when it is read).
func List(fs iceio.IO, tableLocation string) ([]Ref, error) {
	return Records{fs: fs, table: TableRef{Location: tableLocation}}.List()
}
