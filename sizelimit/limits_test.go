package sizelimit

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/klauspost/compress/zstd"

	"github.com/icereactor/reactor/metrics"
)

func TestKindOf(t *testing.T) {
	for _, tt := range []struct {
		name string
		kind Kind
		ok   bool
	}{
		{"s3://b/wh/db/t/metadata/00012-5c1a.metadata.json", MetadataJSON, true},
		{"/wh/db/t/metadata/v3.metadata.json", MetadataJSON, true},
		{"/wh/db/t/metadata/00001-x.gz.metadata.json", MetadataJSON, true},
		{"/wh/db/t/metadata/00001-x.metadata.json.zstd", MetadataJSON, true},
		{"s3://b/wh/db/t/metadata/snap-123-1-abc.avro", ManifestList, true},
		{"s3://b/wh/db/t/metadata/abc-m0.avro", Manifest, true},
		{"s3://b/wh/db/t/data/category=a/00000-0-x.parquet", ParquetFooter, true},
		{"s3://b/wh/db/t/data/part-0.avro", "", false}, // an Avro data file
		{"s3://b/wh/db/t/data/x.puffin", "", false},
		{"s3://b/wh/db/t/metadata/version-hint.text", "", false},
	} {
		if k, ok := KindOf(tt.name); k != tt.kind || ok != tt.ok {
			t.Errorf("KindOf(%s) = %q %v, want %q %v", tt.name, k, ok, tt.kind, tt.ok)
		}
	}
	var kinds []string
	for _, k := range Kinds {
		kinds = append(kinds, string(k))
	}
	if !slices.Equal(kinds, metrics.SizeLimitKinds) {
		t.Errorf("metrics.SizeLimitKinds = %v, want %v", metrics.SizeLimitKinds, kinds)
	}
}

func TestFromProperties(t *testing.T) {
	l, err := FromProperties(map[string]string{ManifestProperty: "1024", ParquetFooterProperty: "0"})
	if err != nil || l.Manifest != 1024 || l.ParquetFooter != 0 || l.MetadataJSON != DefaultMetadataJSON || l.ManifestList != DefaultManifestList {
		t.Fatalf("%+v %v", l, err)
	}
	if _, err := FromProperties(map[string]string{MetadataJSONProperty: "lots"}); err == nil || !strings.Contains(err.Error(), MetadataJSONProperty) {
		t.Errorf("a bad value: %v", err)
	}
}

func TestChecks(t *testing.T) {
	l := Limits{MetadataJSON: 100, ManifestList: 50, Manifest: 80, ParquetFooter: 30}
	meta := "s3://b/t/metadata/v1.metadata.json"
	if err := l.CheckFile(meta, 100); err != nil {
		t.Errorf("at the limit: %v", err)
	}
	err := l.CheckFile(meta, 101)
	var e *Error
	if !errors.As(err, &e) || !errors.Is(err, ErrTooLarge) || e.Kind != MetadataJSON || e.Size != 101 || e.Limit != 100 {
		t.Fatalf("over the limit: %v", err)
	}
	for _, want := range []string{meta, "101 bytes", "100 bytes", "--max-metadata-bytes", MetadataJSONProperty} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%q lacks %q", err, want)
		}
	}
	if l.CheckFile("s3://b/t/metadata/snap-1.avro", 51) == nil || l.CheckFile("s3://b/t/metadata/m0.avro", 81) == nil {
		t.Error("a manifest list or manifest over its limit passed")
	}
	if (Limits{}).CheckFile(meta, 1<<40) != nil {
		t.Error("no limit refused")
	}
	footer := func(n uint32) []byte {
		b := make([]byte, 8)
		binary.LittleEndian.PutUint32(b, n)
		return append(b[:4], "PAR1"...)
	}
	pq := "s3://b/t/data/f.parquet"
	if l.CheckFooter(pq, 1000, footer(30)) != nil || l.CheckFooter(pq, 1000, []byte("notparq!")) != nil {
		t.Error("a footer at the limit, or a file that is no Parquet, refused")
	}
	if err := l.CheckFooter(pq, 1000, footer(31)); !errors.As(err, &e) || e.Kind != ParquetFooter || !strings.Contains(err.Error(), "footer of 31 bytes") {
		t.Errorf("a footer over the limit: %v", err)
	}
}

// A compressed metadata file is judged by what it decompresses to: a
// small file that is a bomb is refused without keeping its output.
func TestCheckMetadataDecompressed(t *testing.T) {
	l := Limits{MetadataJSON: 1 << 20}
	bomb := bytes.Repeat([]byte(" "), 64<<20)
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write(bomb)
	zw.Close()
	enc, _ := zstd.NewWriter(nil)
	zs := enc.EncodeAll(bomb, nil)
	for name, data := range map[string][]byte{"/t/metadata/v1.gz.metadata.json": gz.Bytes(), "/t/metadata/v1.metadata.json.zstd": zs} {
		if len(data) > 1<<20 {
			t.Fatalf("%s: the bomb is %d bytes compressed", name, len(data))
		}
		alloc := allocated(func() {
			var e *Error
			if err := l.CheckMetadata(name, data); !errors.As(err, &e) || !e.Decompressed {
				t.Errorf("%s: %v", name, err)
			}
		})
		if alloc > 16<<20 {
			t.Errorf("%s: checking a 64 MiB bomb allocated %d MiB", name, alloc>>20)
		}
	}
	small := bytes.Repeat([]byte("{}"), 100)
	gz.Reset()
	zw = gzip.NewWriter(&gz)
	zw.Write(small)
	zw.Close()
	if err := l.CheckMetadata("/t/metadata/v1.gz.metadata.json", gz.Bytes()); err != nil {
		t.Errorf("a small compressed file: %v", err)
	}
}

// allocated is the bytes f allocates.
func allocated(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// The local FileIO refuses an oversized metadata file and manifest at
// Open and ReadFile, and a Parquet file by its footer, reading next to
// nothing of them; files within the limits read as before.
func TestLocalFS(t *testing.T) {
	dir := t.TempDir()
	write := func(rel string, data []byte) string {
		p := filepath.Join(dir, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	big := write("t/metadata/00002-x.metadata.json", bytes.Repeat([]byte(" "), 64<<20))
	small := write("t/metadata/00001-x.metadata.json", []byte(`{"format-version":2}`))
	manifest := write("t/metadata/x-m0.avro", bytes.Repeat([]byte("a"), 4096))
	pq := make([]byte, 4096)
	binary.LittleEndian.PutUint32(pq[len(pq)-8:], 3000)
	copy(pq[len(pq)-4:], "PAR1")
	parquet := write("t/data/f.parquet", pq)
	fs := LocalFS{Limits: Limits{MetadataJSON: 1 << 20, Manifest: 1024, ParquetFooter: 2048}}
	var e *Error
	alloc := allocated(func() {
		if _, err := fs.ReadFile(big); !errors.As(err, &e) || e.Kind != MetadataJSON {
			t.Errorf("ReadFile of a 64 MiB metadata file: %v", err)
		}
		if _, err := fs.Open(big); !errors.As(err, &e) {
			t.Errorf("Open of a 64 MiB metadata file: %v", err)
		}
	})
	if alloc > 1<<20 {
		t.Errorf("refusing a 64 MiB metadata file allocated %d KiB", alloc>>10)
	}
	if data, err := fs.ReadFile(small); err != nil || string(data) != `{"format-version":2}` {
		t.Errorf("a small metadata file: %q %v", data, err)
	}
	if _, err := fs.Open(manifest); !errors.As(err, &e) || e.Kind != Manifest {
		t.Errorf("a manifest over its limit: %v", err)
	}
	if _, err := fs.Open(parquet); !errors.As(err, &e) || e.Kind != ParquetFooter || e.Size != 3000 {
		t.Errorf("a Parquet footer over its limit: %v", err)
	}
	fs.Limits.ParquetFooter = 4000
	f, err := fs.Open(parquet)
	if err != nil {
		t.Fatalf("a Parquet footer within its limit: %v", err)
	}
	f.Close()
}
