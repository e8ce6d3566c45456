package manifestread

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/apache/iceberg-go"
	iceio "github.com/apache/iceberg-go/io"
	lru "github.com/hashicorp/golang-lru/v2"
)

// DefaultSchemas is how many distinct manifest schemas a Reader keeps
// compiled: a table has one per partition spec, format version and
// content (data, deletes) it was written with, so a few per table.
const DefaultSchemas = 1024

// Reader reads manifests' entries as iceberg-go's ReadManifest does,
// parsing each distinct Avro schema text once (see the package doc). Safe
// for concurrent use. A nil *Reader reads through iceberg-go.
type Reader struct {
	schemas *schemas
	lists   struct {
		listSchemas
		cache *lru.Cache[uint64, *compiledList]
	}
	files sync.Pool // *bytes.Buffer: a manifest's bytes

	compiles, fallbacks atomic.Int64
}

// New returns a Reader keeping at most maxSchemas compiled schemas
// (DefaultSchemas when maxSchemas <= 0).
func New(maxSchemas int) *Reader {
	if maxSchemas <= 0 {
		maxSchemas = DefaultSchemas
	}
	r := &Reader{schemas: newSchemas(maxSchemas), files: sync.Pool{New: func() any { return new(bytes.Buffer) }}}
	// A manifest list's schema depends on the format version only (and
	// the writer): a handful per process.
	r.lists.cache, _ = lru.New[uint64, *compiledList](max(maxSchemas/8, 16))
	// Built from this package's own types: cannot fail, and if it did
	// every list would be read by iceberg-go (decodeList checks).
	r.lists.listSchemas, _ = newListSchemas()
	return r
}

// Stats are a Reader's counts since New.
type Stats struct {
	// Compiles is how many schema texts were parsed (cache misses), of
	// manifests and of manifest lists.
	Compiles int64
	// Fallbacks is how many manifests iceberg-go's reader read instead
	// (a codec or a shape the fast path does not read, or a file it
	// refused, so that iceberg-go's answer or error is the one returned).
	Fallbacks int64
	// Cached is how many compiled schemas are held now (manifests' and
	// manifest lists').
	Cached int
}

func (r *Reader) Stats() Stats {
	return Stats{Compiles: r.compiles.Load(), Fallbacks: r.fallbacks.Load(), Cached: r.schemas.cache.Len() + r.lists.cache.Len()}
}

// Fetch is m.FetchEntries(fs, discardDeleted): the same entries, in the
// same order, with DataFile values that leave out the column statistics
// (DataFile). A file the fast path cannot read is read by iceberg-go, so
// its entries or its error are iceberg-go's.
func (r *Reader) Fetch(fs iceio.IO, m iceberg.ManifestFile, discardDeleted bool) ([]iceberg.ManifestEntry, error) {
	if r == nil {
		return m.FetchEntries(fs, discardDeleted)
	}
	buf := r.files.Get().(*bytes.Buffer)
	defer r.putFile(buf)
	if err := readFile(fs, m.FilePath(), buf); err != nil {
		return nil, err
	}
	entries, err := r.decode(buf.Bytes(), m, discardDeleted)
	if err != nil {
		r.fallbacks.Add(1)
		return iceberg.ReadManifest(m, bytes.NewReader(buf.Bytes()), discardDeleted)
	}
	return entries, nil
}

func (r *Reader) putFile(buf *bytes.Buffer) {
	if buf.Cap() > 8<<20 {
		return // a rare large manifest is not kept
	}
	buf.Reset()
	r.files.Put(buf)
}

func readFile(fs iceio.IO, path string, buf *bytes.Buffer) (err error) {
	f, err := fs.Open(path)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := f.Close(); err == nil && cerr != nil {
			err = cerr
		}
	}()
	if st, serr := f.Stat(); serr == nil && st.Size() > 0 && st.Size() < 1<<30 {
		buf.Grow(int(st.Size()) + bytes.MinRead)
	}
	_, err = buf.ReadFrom(f)
	return err
}

// Decode reads the entries of m from its bytes b with the fast path
// alone: no fallback. For the differential tests and the fuzz target.
func (r *Reader) Decode(b []byte, m iceberg.ManifestFile, discardDeleted bool) ([]iceberg.ManifestEntry, error) {
	return r.decode(b, m, discardDeleted)
}

// decode mirrors iceberg-go's newManifestReader and ReadEntry (manifest.go,
// v0.7.0): the same checks, the same inheritance.
func (r *Reader) decode(b []byte, m iceberg.ManifestFile, discardDeleted bool) ([]iceberg.ManifestEntry, error) {
	h, err := readHeader(b)
	if err != nil {
		return nil, err
	}
	schemaText, ok := h.meta["avro.schema"]
	if !ok {
		return nil, errors.New("ocf: missing avro.schema in metadata")
	}
	formatVersion := 1
	if raw := h.meta["format-version"]; len(raw) > 0 {
		if formatVersion, err = strconv.Atoi(string(raw)); err != nil {
			return nil, fmt.Errorf("manifest file's 'format-version' metadata is invalid: %w", err)
		}
	}
	if formatVersion < 1 || formatVersion > 3 {
		return nil, fmt.Errorf("unsupported manifest format version %d", formatVersion)
	}
	if formatVersion > m.Version() {
		return nil, fmt.Errorf("manifest format-version %d is newer than its v%d manifest list", formatVersion, m.Version())
	}
	var content iceberg.ManifestContent
	switch c := string(h.meta["content"]); c {
	case "":
		if formatVersion != 1 {
			return nil, errors.New("manifest file's 'content' metadata is missing")
		}
		content = iceberg.ManifestContentData
	case "data":
		content = iceberg.ManifestContentData
	case "deletes":
		content = iceberg.ManifestContentDeletes
	default:
		return nil, fmt.Errorf("manifest file's 'content' metadata is invalid: %q", c)
	}
	if content != m.ManifestContent() {
		return nil, errors.New("manifest file's 'content' metadata differs from its manifest list entry")
	}
	codec, err := codecFor(string(h.meta["avro.codec"]))
	if err != nil {
		return nil, err
	}
	defer codec.release()
	c, miss, err := r.schemas.get(schemaText, h.meta["partition-spec"])
	if miss {
		r.compiles.Add(1)
	}
	if err != nil {
		return nil, err
	}
	if c.plainSnapshotID && formatVersion != 1 {
		return nil, fmt.Errorf("%w: a plain snapshot_id in a v%d manifest", errUnsupported, formatVersion)
	}

	inheritRowIDs := content == iceberg.ManifestContentData && m.FirstRowID() != nil
	var nextRowID int64
	if inheritRowIDs {
		if nextRowID = *m.FirstRowID(); nextRowID < 0 {
			return nil, fmt.Errorf("first row ID must be non-negative: %d", nextRowID)
		}
	}
	manifestSeq := m.SequenceNum()
	var out []iceberg.ManifestEntry
	rest := h.rest
	for {
		count, block, next, done, err := nextBlock(rest, h.sync, codec)
		if err != nil {
			return nil, err
		}
		if done {
			return out, nil
		}
		rest = next
		for range count {
			e := &wireEntry{}
			if block, err = c.schema.Decode(block, e); err != nil {
				return nil, fmt.Errorf("ocf: decoding datum: %w", noEOF(err))
			}
			status := iceberg.ManifestEntryStatus(e.Status)
			switch status {
			case iceberg.EntryStatusEXISTING, iceberg.EntryStatusADDED, iceberg.EntryStatusDELETED:
			default:
				return nil, fmt.Errorf("manifest entry has invalid status: %d", e.Status)
			}
			switch iceberg.ManifestEntryContent(e.Data.Content) {
			case iceberg.EntryContentData:
				if content != iceberg.ManifestContentData {
					return nil, errors.New("data file found in delete manifest")
				}
			case iceberg.EntryContentPosDeletes, iceberg.EntryContentEqDeletes:
				if content != iceberg.ManifestContentDeletes {
					return nil, errors.New("delete file found in data manifest")
				}
			default:
				return nil, fmt.Errorf("manifest entry has invalid content: %d", e.Data.Content)
			}
			// iceberg-go's manifestEntry.inherit.
			if e.Snapshot == nil {
				snap := m.SnapshotID()
				e.Snapshot = &snap
			}
			if manifestSeq != -1 && (manifestSeq == 0 || status == iceberg.EntryStatusADDED) {
				if e.SeqNum == nil {
					e.SeqNum = &manifestSeq
				}
				if e.FileSeqNum == nil {
					seq := manifestSeq
					e.FileSeqNum = &seq
				}
			}
			if inheritRowIDs && status != iceberg.EntryStatusDELETED && e.Data.FirstRowID == nil {
				id := nextRowID
				if e.Data.RecordCount < 0 {
					return nil, fmt.Errorf("cannot inherit first row ID for data file %q: record count must be non-negative: %d",
						e.Data.Path, e.Data.RecordCount)
				}
				if id > (1<<63-1)-e.Data.RecordCount {
					return nil, fmt.Errorf("cannot inherit first row ID for data file %q: row IDs overflow", e.Data.Path)
				}
				e.Data.FirstRowID = &id
				nextRowID = id + e.Data.RecordCount
			}
			if discardDeleted && status == iceberg.EntryStatusDELETED {
				continue
			}
			df := &DataFile{w: e.Data, specID: m.PartitionSpecID(), fields: &c.fields}
			out = append(out, iceberg.NewManifestEntry(status, e.Snapshot, e.SeqNum, e.FileSeqNum, df))
		}
		if len(block) != 0 {
			return nil, fmt.Errorf("ocf: %d trailing bytes in block", len(block))
		}
	}
}

func noEOF(err error) error {
	if errors.Is(err, io.EOF) {
		return io.ErrUnexpectedEOF
	}
	return err
}
