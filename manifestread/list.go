package manifestread

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"

	"github.com/apache/iceberg-go"
	iceio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"
	"github.com/twmb/avro"
	"github.com/twmb/avro/atype"
)

// listEntryV1 and listEntry are iceberg-go's manifestFileV1 and
// manifestFile (manifest.go, v0.7.0) with the same avro tags, so that the
// writer schema resolves against them as it does against iceberg-go's.
type listEntryV1 struct {
	Path               string                  `avro:"manifest_path"`
	Len                int64                   `avro:"manifest_length"`
	SpecID             int32                   `avro:"partition_spec_id"`
	AddedSnapshotID    *int64                  `avro:"added_snapshot_id"`
	AddedFilesCount    *int32                  `avro:"added_files_count,alias=added_data_files_count"`
	ExistingFilesCount *int32                  `avro:"existing_files_count,alias=existing_data_files_count"`
	DeletedFilesCount  *int32                  `avro:"deleted_files_count,alias=deleted_data_files_count"`
	AddedRowsCount     *int64                  `avro:"added_rows_count"`
	ExistingRowsCount  *int64                  `avro:"existing_rows_count"`
	DeletedRowsCount   *int64                  `avro:"deleted_rows_count"`
	PartitionList      *[]iceberg.FieldSummary `avro:"partitions,type-alias=r508"`
	Key                *[]byte                 `avro:"key_metadata"`
}

type listEntry struct {
	Path               string                  `avro:"manifest_path"`
	Len                int64                   `avro:"manifest_length"`
	SpecID             int32                   `avro:"partition_spec_id"`
	Content            int32                   `avro:"content"`
	SeqNumber          int64                   `avro:"sequence_number"`
	MinSeqNumber       int64                   `avro:"min_sequence_number"`
	AddedSnapshotID    int64                   `avro:"added_snapshot_id"`
	AddedFilesCount    int32                   `avro:"added_files_count,alias=added_data_files_count"`
	ExistingFilesCount int32                   `avro:"existing_files_count,alias=existing_data_files_count"`
	DeletedFilesCount  int32                   `avro:"deleted_files_count,alias=deleted_data_files_count"`
	AddedRowsCount     int64                   `avro:"added_rows_count"`
	ExistingRowsCount  int64                   `avro:"existing_rows_count"`
	DeletedRowsCount   int64                   `avro:"deleted_rows_count"`
	PartitionList      *[]iceberg.FieldSummary `avro:"partitions,type-alias=r508"`
	Key                *[]byte                 `avro:"key_metadata"`
	FirstRowID         *int64                  `avro:"first_row_id"`
}

// The reader schemas, as iceberg-go builds its own.
type listSchemas struct {
	v1, v2 *avro.Schema
}

func newListSchemas() (listSchemas, error) {
	v1, err := avro.SchemaFor[listEntryV1](avro.WithName("manifest_file"))
	if err != nil {
		return listSchemas{}, err
	}
	v2, err := avro.SchemaFor[listEntry](avro.WithName("manifest_file"))
	if err != nil {
		return listSchemas{}, err
	}
	return listSchemas{v1: v1, v2: v2}, nil
}

// compiledList is a manifest list's writer schema text compiled: the
// version its fields imply and the schema resolved against the reader
// schema of each version it may be read as.
type compiledList struct {
	text     []byte
	inferred int
	resolved map[int]*avro.Schema // by the version read as (1, or 2 for v2+)
}

// ManifestList is snap.Manifests(fs): the manifests of snap's manifest
// list, as iceberg-go's ReadManifestList reads them. A list whose entries
// carry first row ids (v3 data manifests: iceberg-go's builder cannot set
// them), or any list the fast path does not read or refuses, is read by
// iceberg-go.
func (r *Reader) ManifestList(fs iceio.IO, snap *table.Snapshot) ([]iceberg.ManifestFile, error) {
	if r == nil || snap.ManifestList == "" {
		return snap.Manifests(fs)
	}
	buf := r.files.Get().(*bytes.Buffer)
	defer r.putFile(buf)
	if err := readFile(fs, snap.ManifestList, buf); err != nil {
		return nil, fmt.Errorf("could not open manifest file: %w", err)
	}
	ms, err := r.decodeList(buf.Bytes())
	if err != nil {
		r.fallbacks.Add(1)
		return iceberg.ReadManifestList(bytes.NewReader(buf.Bytes()))
	}
	return ms, nil
}

// DecodeList reads a manifest list from its bytes with the fast path
// alone: no fallback. For the differential tests and the fuzz target.
func (r *Reader) DecodeList(b []byte) ([]iceberg.ManifestFile, error) {
	return r.decodeList(b)
}

// decodeList mirrors iceberg-go's ReadManifestList (manifest.go, v0.7.0).
func (r *Reader) decodeList(b []byte) ([]iceberg.ManifestFile, error) {
	if r.lists.v1 == nil {
		return nil, fmt.Errorf("%w: no reader schemas", errUnsupported)
	}
	h, err := readHeader(b)
	if err != nil {
		return nil, err
	}
	text, ok := h.meta["avro.schema"]
	if !ok {
		return nil, errors.New("ocf: missing avro.schema in metadata")
	}
	c, err := r.compiledList(text)
	if err != nil {
		return nil, err
	}
	version := c.inferred
	if raw := h.meta["format-version"]; len(raw) > 0 {
		if version, err = strconv.Atoi(string(raw)); err != nil {
			return nil, fmt.Errorf("invalid format-version: %w", err)
		}
	}
	if version < 1 || version > 3 {
		return nil, fmt.Errorf("unsupported manifest list format version %d", version)
	}
	if version < c.inferred {
		return nil, fmt.Errorf("manifest list's 'format-version' metadata says %d, but its schema carries v%d fields", version, c.inferred)
	}
	dec := c.resolved[min(version, 2)]
	if dec == nil {
		return nil, fmt.Errorf("%w: the schema does not resolve as v%d", errUnsupported, version)
	}
	codec, err := codecFor(string(h.meta["avro.codec"]))
	if err != nil {
		return nil, err
	}
	defer codec.release()
	out := make([]iceberg.ManifestFile, 0)
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
			var m iceberg.ManifestFile
			if version == 1 {
				var e listEntryV1
				if block, err = dec.Decode(block, &e); err != nil {
					return nil, fmt.Errorf("ocf: decoding datum: %w", noEOF(err))
				}
				m = e.file()
			} else {
				var e listEntry
				if block, err = dec.Decode(block, &e); err != nil {
					return nil, fmt.Errorf("ocf: decoding datum: %w", noEOF(err))
				}
				if e.FirstRowID != nil {
					return nil, fmt.Errorf("%w: a manifest's first row id", errUnsupported)
				}
				m = e.file(version)
			}
			out = append(out, m)
		}
		if len(block) != 0 {
			return nil, fmt.Errorf("ocf: %d trailing bytes in block", len(block))
		}
	}
}

func orMinusOne[T int32 | int64](p *T) T {
	if p == nil {
		return -1
	}
	return *p
}

func partitionsOf(p *[]iceberg.FieldSummary) []iceberg.FieldSummary {
	if p == nil {
		return nil
	}
	return *p
}

func keyOf(p *[]byte) []byte {
	if p == nil {
		return nil
	}
	return *p
}

// file is iceberg-go's manifestFileV1.toFile.
func (e *listEntryV1) file() iceberg.ManifestFile {
	return iceberg.NewManifestFile(1, e.Path, e.Len, e.SpecID, orMinusOne(e.AddedSnapshotID)).
		SequenceNum(0, 0).Content(iceberg.ManifestContentData).
		AddedFiles(orMinusOne(e.AddedFilesCount)).ExistingFiles(orMinusOne(e.ExistingFilesCount)).
		DeletedFiles(orMinusOne(e.DeletedFilesCount)).AddedRows(orMinusOne(e.AddedRowsCount)).
		ExistingRows(orMinusOne(e.ExistingRowsCount)).DeletedRows(orMinusOne(e.DeletedRowsCount)).
		Partitions(partitionsOf(e.PartitionList)).KeyMetadata(keyOf(e.Key)).Build()
}

func (e *listEntry) file(version int) iceberg.ManifestFile {
	return iceberg.NewManifestFile(version, e.Path, e.Len, e.SpecID, e.AddedSnapshotID).
		SequenceNum(e.SeqNumber, e.MinSeqNumber).Content(iceberg.ManifestContent(e.Content)).
		AddedFiles(e.AddedFilesCount).ExistingFiles(e.ExistingFilesCount).DeletedFiles(e.DeletedFilesCount).
		AddedRows(e.AddedRowsCount).ExistingRows(e.ExistingRowsCount).DeletedRows(e.DeletedRowsCount).
		Partitions(partitionsOf(e.PartitionList)).KeyMetadata(keyOf(e.Key)).Build()
}

func (r *Reader) compiledList(text []byte) (*compiledList, error) {
	k := r.schemas.key(text, listDomain)
	if c, ok := r.lists.cache.Get(k); ok && bytes.Equal(c.text, text) {
		return c, nil
	}
	r.compiles.Add(1)
	writer, err := avro.Parse(string(text))
	if err != nil {
		return nil, fmt.Errorf("ocf: parsing schema: %w", err)
	}
	c := &compiledList{text: bytes.Clone(text), inferred: inferListVersion(writer), resolved: map[int]*avro.Schema{}}
	// A schema that does not resolve as one version is refused as that
	// version when read (iceberg-go's error, through the fallback).
	if s, err := avro.Resolve(writer, r.lists.v1); err == nil {
		c.resolved[1] = s
	}
	if s, err := avro.Resolve(writer, r.lists.v2); err == nil {
		c.resolved[2] = s
	}
	r.lists.cache.Add(k, c)
	return c, nil
}

// listDomain keeps list schemas' keys apart from manifests' (whose second
// text is a partition spec, never this).
var listDomain = []byte("\x00manifest-list")

// inferListVersion is iceberg-go's inferManifestListVersion.
func inferListVersion(sc *avro.Schema) int {
	version := 1
	root := sc.Root()
	if root.Type != atype.Record {
		return version
	}
	for _, f := range root.Fields {
		id, ok := fieldID(f)
		switch {
		case ok && id == 520, !ok && f.Name == "first_row_id":
			return 3
		case ok && (id == 517 || id == 515), !ok && (f.Name == "content" || f.Name == "sequence_number"):
			version = 2
		}
	}
	return version
}
