package sizelimit

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"path"
	"strconv"
	"strings"

	"github.com/klauspost/compress/zstd"
)

// Kind is what a file is, as far as its limit goes.
type Kind string

// The kinds of files with a limit.
const (
	MetadataJSON  Kind = "metadata_json"
	ManifestList  Kind = "manifest_list"
	Manifest      Kind = "manifest"
	ParquetFooter Kind = "parquet_footer"
)

// Kinds lists every kind (the values of the kind label of the metric).
var Kinds = []Kind{MetadataJSON, ManifestList, Manifest, ParquetFooter}

// Catalog properties setting the limits, in bytes (reactor's flags set
// them).
const (
	MetadataJSONProperty  = "reactor.limit.metadata-json-bytes"
	ManifestListProperty  = "reactor.limit.manifest-list-bytes"
	ManifestProperty      = "reactor.limit.manifest-bytes"
	ParquetFooterProperty = "reactor.limit.parquet-footer-bytes"
)

// Defaults, generous for real tables: a metadata.json of thousands of
// snapshots and schemas is tens of MiB, a manifest list of 100,000
// manifests about 20 MiB, a manifest is written at 8 MiB by default (a
// few hundred MiB only when a writer lets one grow unchecked), a Parquet
// footer of thousands of columns and row groups tens of MiB.
const (
	DefaultMetadataJSON  = 256 << 20
	DefaultManifestList  = 128 << 20
	DefaultManifest      = 256 << 20
	DefaultParquetFooter = 64 << 20
)

// Limits are the most each kind of file may be, in bytes (a Parquet
// file's footer, not its whole size). Zero means no limit.
type Limits struct {
	MetadataJSON, ManifestList, Manifest, ParquetFooter int64
}

// Default is every default limit.
func Default() Limits {
	return Limits{MetadataJSON: DefaultMetadataJSON, ManifestList: DefaultManifestList, Manifest: DefaultManifest,
		ParquetFooter: DefaultParquetFooter}
}

// FromProperties reads the limits from catalog properties; one not given
// takes its default, and 0 turns it off.
func FromProperties(props map[string]string) (Limits, error) {
	l := Default()
	for _, p := range []struct {
		key string
		dst *int64
	}{{MetadataJSONProperty, &l.MetadataJSON}, {ManifestListProperty, &l.ManifestList}, {ManifestProperty, &l.Manifest},
		{ParquetFooterProperty, &l.ParquetFooter}} {
		v, ok := props[p.key]
		if !ok || v == "" {
			continue
		}
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 {
			return Limits{}, fmt.Errorf("sizelimit: %s must be a byte count (0: no limit), got %q", p.key, v)
		}
		*p.dst = n
	}
	return l, nil
}

// Of is the limit of kind and the property that sets it.
func (l Limits) Of(k Kind) (int64, string) {
	switch k {
	case MetadataJSON:
		return l.MetadataJSON, MetadataJSONProperty
	case ManifestList:
		return l.ManifestList, ManifestListProperty
	case Manifest:
		return l.Manifest, ManifestProperty
	case ParquetFooter:
		return l.ParquetFooter, ParquetFooterProperty
	}
	return 0, ""
}

// KindOf tells a file's kind by its name: a metadata file
// (*.metadata.json, compressed or not), a manifest list (snap-*.avro
// under a metadata/ directory), a manifest (any other .avro there), a
// Parquet file (*.parquet). ok is false for any other file, which has no
// limit.
func KindOf(name string) (k Kind, ok bool) {
	base := path.Base(name)
	switch {
	case strings.HasSuffix(base, ".metadata.json") || strings.HasSuffix(base, ".metadata.json.gz") ||
		strings.HasSuffix(base, ".metadata.json.zstd"):
		return MetadataJSON, true
	case strings.HasSuffix(base, ".avro") && inMetadataDir(name) && strings.HasPrefix(base, "snap-"):
		return ManifestList, true
	case strings.HasSuffix(base, ".avro") && inMetadataDir(name):
		// Avro data files (under data/) are data, not manifests.
		return Manifest, true
	case strings.HasSuffix(base, ".parquet"):
		return ParquetFooter, true
	}
	return "", false
}

// Error is a file refused for its size.
type Error struct {
	Path     string
	Kind     Kind
	Size     int64 // the file's, or its footer's, or its decompressed size (at least)
	Limit    int64
	Property string
	// Decompressed: Size is what the compressed file decompresses to.
	Decompressed bool
}

func (e *Error) Error() string {
	what := map[Kind]string{MetadataJSON: "metadata file", ManifestList: "manifest list", Manifest: "manifest",
		ParquetFooter: "Parquet file's footer"}[e.Kind]
	size := "is " + bytesText(e.Size)
	if e.Decompressed {
		size = "decompresses to more than " + bytesText(e.Size-1)
	}
	if e.Kind == ParquetFooter {
		what = "Parquet file"
		size = "has a footer of " + bytesText(e.Size)
	}
	return fmt.Sprintf("%s %s %s, over reactor's limit of %s (%s, catalog property %s): not read", what, e.Path, size,
		bytesText(e.Limit), flagOf[e.Kind], e.Property)
}

// flagOf names the reactor flag that sets each limit, for the error.
var flagOf = map[Kind]string{MetadataJSON: "--max-metadata-bytes", ManifestList: "--max-manifest-list-bytes",
	Manifest: "--max-manifest-bytes", ParquetFooter: "--max-parquet-footer-bytes"}

// ErrTooLarge is what every *Error is (errors.Is).
var ErrTooLarge = errors.New("file over reactor's size limit")

func (e *Error) Is(target error) bool { return target == ErrTooLarge }

func bytesText(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d bytes", n)
}

// CheckFile refuses a metadata file, manifest list or manifest of size
// bytes over its limit; a Parquet file or any other passes (see
// CheckFooter).
func (l Limits) CheckFile(name string, size int64) error {
	k, ok := KindOf(name)
	if !ok || k == ParquetFooter {
		return nil
	}
	limit, prop := l.Of(k)
	if limit > 0 && size > limit {
		return &Error{Path: name, Kind: k, Size: size, Limit: limit, Property: prop}
	}
	return nil
}

// parquetMagic ends every Parquet file, after the footer's length.
var parquetMagic = []byte("PAR1")

// CheckFooter refuses a Parquet file whose footer, as its last 8 bytes
// say (a 4-byte little-endian length and PAR1), is over the limit. A file
// that is not Parquet by those bytes passes: the Parquet reader says
// what is wrong with it, and reads nothing large for it.
func (l Limits) CheckFooter(name string, size int64, last8 []byte) error {
	if k, ok := KindOf(name); !ok || k != ParquetFooter || l.ParquetFooter <= 0 || len(last8) != 8 || !bytes.Equal(last8[4:], parquetMagic) {
		return nil
	}
	footer := int64(binary.LittleEndian.Uint32(last8[:4]))
	if footer > l.ParquetFooter {
		return &Error{Path: name, Kind: ParquetFooter, Size: footer, Limit: l.ParquetFooter, Property: ParquetFooterProperty}
	}
	return nil
}

// CheckMetadata refuses a compressed metadata file whose content
// decompresses to more than the metadata limit (a small file can hold a
// very large one): it decompresses data without keeping the output. An
// uncompressed file, or one that does not decompress (iceberg-go then
// says why), passes.
func (l Limits) CheckMetadata(name string, data []byte) error {
	if l.MetadataJSON <= 0 {
		return nil
	}
	var r io.Reader
	base := path.Base(name)
	switch {
	case strings.HasSuffix(base, ".gz.metadata.json") || strings.HasSuffix(base, ".metadata.json.gz"):
		zr, err := gzip.NewReader(bytes.NewReader(data))
		if err != nil {
			return nil
		}
		defer zr.Close()
		r = zr
	case strings.HasSuffix(base, ".zstd.metadata.json") || strings.HasSuffix(base, ".metadata.json.zstd"):
		zr, err := zstd.NewReader(bytes.NewReader(data), zstd.WithDecoderMaxMemory(64<<20))
		if err != nil {
			return nil
		}
		defer zr.Close()
		r = zr
	default:
		return nil
	}
	n, _ := io.Copy(io.Discard, io.LimitReader(r, l.MetadataJSON+1))
	if n > l.MetadataJSON {
		return &Error{Path: name, Kind: MetadataJSON, Size: n, Limit: l.MetadataJSON, Property: MetadataJSONProperty, Decompressed: true}
	}
	return nil
}

// inMetadataDir reports whether name lies in a table's metadata/
// directory.
func inMetadataDir(name string) bool {
	return path.Base(path.Dir(name)) == "metadata"
}
