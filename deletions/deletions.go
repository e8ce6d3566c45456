// Package deletions keeps the durable list of files that left a table and
// wait out the reader margin before they are deleted.
//
// Expiry unlinks files from a table (the snapshots that referenced them are
// gone) but a reader that planned before the expiry may still be reading
// them (docs/design.md#seed-reader-incident). So expiry deletes nothing
// itself; it writes a batch here, due min_reader_margin after its commit,
// and a later pass deletes what is due, after checking every file against
// the table's history again. A batch is an immutable JSON file under the table's own
// metadata directory (metadata/_reactor/pending-deletes/), so the list
// survives restarts and crashes of reactor, needs nothing but the table's
// storage, and is never an orphan candidate: a path component starting with
// "_" is hidden from Spark's remove_orphan_files and from reactor's own.
//
// Beside the batches it keeps two other small records of the same kind:
// the output intents of rewriting jobs (outputs.go: what a killed job may
// have written, for the table's next owner) and the snapshots reactor
// committed through Spark (own_snapshots.go: reactor's own, though their
// summaries cannot say so).
//
// The package reads and writes these records; it never deletes a table
// file and never decides what is unreachable: that is the executor's.
package deletions

import (
	"cmp"
	"encoding/json"
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

	"github.com/icereactor/reactor/history"
)

// DirName is where, under a table's location, batches are written.
const DirName = "metadata/_reactor/pending-deletes"

// File is one file waiting for deletion.
type File struct {
	Path string `json:"path"`
	// Kind is spelled as Spark's expire_snapshots counts files
	// (history.Kind's String: "data", "position_delete", ...).
	Kind history.Kind `json:"kind"`
}

// Batch is the files one job unlinked from a table.
type Batch struct {
	Table string `json:"table"`
	JobID string `json:"job_id"`
	// LeftAt is when the files left the table (the job's commit): no
	// reader can start on them after it.
	LeftAt time.Time `json:"left_at"`
	// Due is when they may be deleted: LeftAt plus the reader margin.
	Due   time.Time `json:"due_at"`
	Files []File    `json:"files"`
}

// Ref names a stored batch; its due time is in the name, so a listing
// says what is due without reading the batches. An Intent ref names an
// expiry that was about to commit when it was written: if its batch is not
// there, the process died between the commit and the batch, and the next
// deletion pass rebuilds the batch from the metadata the expiry started on.
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
}

var (
	nameRE   = regexp.MustCompile(`^(\d{13})-([A-Za-z0-9_-]{1,64})\.json$`)
	intentRE = regexp.MustCompile(`^intent-([A-Za-z0-9_-]{1,64})\.json$`)
)

// Dir is the batch directory of the table at tableLocation.
func Dir(tableLocation string) string {
	return strings.TrimRight(tableLocation, "/") + "/" + DirName
}

// ErrNotWritable: the table's storage offers no way to write a file.
var ErrNotWritable = errors.New("table storage cannot write files")

// Write stores b under the table's location and returns its reference.
// The name carries the due time and the job id, so writing the same job's
// batch twice (a retried write) replaces it with identical content.
func Write(fs iceio.IO, tableLocation string, b Batch) (Ref, error) {
	w, ok := fs.(iceio.WriteFileIO)
	if !ok {
		return Ref{}, ErrNotWritable
	}
	id := sanitize(b.JobID)
	if id == "" {
		return Ref{}, errors.New("deletions: a batch needs a job id")
	}
	data, err := json.Marshal(b)
	if err != nil {
		return Ref{}, fmt.Errorf("deletions: encode batch: %w", err)
	}
	due := b.Due.UTC().Truncate(time.Millisecond)
	loc := Dir(tableLocation) + "/" + fmt.Sprintf("%013d-%s.json", due.UnixMilli(), id)
	if err := w.WriteFile(loc, data); err != nil {
		return Ref{}, fmt.Errorf("deletions: write %s: %w", loc, err)
	}
	return Ref{Location: loc, Due: due}, nil
}

// walkFiles calls visit with every file under the table's deletions
// directory; a table without one visits nothing.
func walkFiles(fs iceio.IO, tableLocation string, visit func(p string)) error {
	lister, ok := fs.(iceio.ListableIO)
	if !ok {
		return fmt.Errorf("deletions: table storage cannot list %s", Dir(tableLocation))
	}
	err := lister.WalkDir(Dir(tableLocation), func(p string, d iofs.DirEntry, err error) error {
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
		return fmt.Errorf("deletions: list %s: %w", Dir(tableLocation), err)
	}
	return nil
}

// List returns the table's batches, earliest due first (intents, due at
// once, before them). A table with none
// (no directory at all) returns an empty list; files in the directory that
// are not batches are ignored.
func List(fs iceio.IO, tableLocation string) ([]Ref, error) {
	var refs []Ref
	err := walkFiles(fs, tableLocation, func(p string) {
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
func WriteIntent(fs iceio.IO, tableLocation string, in Intent) (Ref, error) {
	w, ok := fs.(iceio.WriteFileIO)
	if !ok {
		return Ref{}, ErrNotWritable
	}
	id := sanitize(in.JobID)
	if id == "" {
		return Ref{}, errors.New("deletions: an intent needs a job id")
	}
	data, err := json.Marshal(in)
	if err != nil {
		return Ref{}, fmt.Errorf("deletions: encode intent: %w", err)
	}
	loc := Dir(tableLocation) + "/intent-" + id + ".json"
	if err := w.WriteFile(loc, data); err != nil {
		return Ref{}, fmt.Errorf("deletions: write %s: %w", loc, err)
	}
	return Ref{Location: loc, Intent: true}, nil
}

// Read loads a stored batch.
func Read(fs iceio.IO, ref Ref) (Batch, error) {
	var b Batch
	return b, readJSON(fs, ref, &b)
}

// ReadIntent loads a stored intent.
func ReadIntent(fs iceio.IO, ref Ref) (Intent, error) {
	var in Intent
	return in, readJSON(fs, ref, &in)
}

func readJSON(fs iceio.IO, ref Ref, v any) error {
	data, err := ReadFile(fs, ref.Location)
	if err != nil {
		return fmt.Errorf("deletions: read %s: %w", ref.Location, err)
	}
	if err := json.Unmarshal(data, v); err != nil {
		return fmt.Errorf("deletions: decode %s: %w", ref.Location, err)
	}
	return nil
}

// ReadFile reads a whole file through the table's IO.
func ReadFile(fs iceio.IO, loc string) ([]byte, error) {
	if r, ok := fs.(iceio.ReadFileIO); ok {
		return r.ReadFile(loc)
	}
	return readAll(fs, loc)
}

// Remove deletes a stored batch once its files are dealt with. A batch
// already gone is not an error.
func Remove(fs iceio.IO, ref Ref) error {
	if err := fs.Remove(ref.Location); err != nil && !errors.Is(err, iofs.ErrNotExist) {
		return fmt.Errorf("deletions: remove %s: %w", ref.Location, err)
	}
	return nil
}

func readAll(fs iceio.IO, loc string) ([]byte, error) {
	f, err := fs.Open(loc)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	buf := make([]byte, st.Size())
	if _, err := f.ReadAt(buf, 0); err != nil && st.Size() > 0 {
		return nil, err
	}
	return buf, nil
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
