package manifestread

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/iceberg-go"
	iceio "github.com/apache/iceberg-go/io"
	"github.com/google/uuid"
)

var testSchema = iceberg.NewSchema(0,
	iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64, Required: true},
	iceberg.NestedField{ID: 2, Name: "name", Type: iceberg.PrimitiveTypes.String},
	iceberg.NestedField{ID: 3, Name: "ts", Type: iceberg.PrimitiveTypes.TimestampTz},
	iceberg.NestedField{ID: 4, Name: "d", Type: iceberg.PrimitiveTypes.Date},
	iceberg.NestedField{ID: 5, Name: "amount", Type: iceberg.DecimalTypeOf(10, 2)},
	iceberg.NestedField{ID: 6, Name: "u", Type: iceberg.PrimitiveTypes.UUID},
	iceberg.NestedField{ID: 7, Name: "flag", Type: iceberg.PrimitiveTypes.Bool},
	iceberg.NestedField{ID: 8, Name: "b", Type: iceberg.PrimitiveTypes.Binary},
	iceberg.NestedField{ID: 9, Name: "t", Type: iceberg.PrimitiveTypes.Time},
	iceberg.NestedField{ID: 10, Name: "n", Type: iceberg.PrimitiveTypes.Int32},
	iceberg.NestedField{ID: 11, Name: "lts", Type: iceberg.PrimitiveTypes.Timestamp},
)

func pf(src, id int, name string, tr iceberg.Transform) iceberg.PartitionField {
	return iceberg.PartitionField{SourceIDs: []int{src}, FieldID: id, Name: name, Transform: tr}
}

// testSpecs: unpartitioned, identity on every partitionable type, and the
// time and hashing transforms.
var testSpecs = map[string]iceberg.PartitionSpec{
	"unpartitioned": *iceberg.UnpartitionedSpec,
	"identity": iceberg.NewPartitionSpecID(1,
		pf(1, 1000, "id", iceberg.IdentityTransform{}), pf(2, 1001, "name", iceberg.IdentityTransform{}),
		pf(3, 1002, "ts", iceberg.IdentityTransform{}), pf(4, 1003, "d", iceberg.IdentityTransform{}),
		pf(5, 1004, "amount", iceberg.IdentityTransform{}), pf(6, 1005, "u", iceberg.IdentityTransform{}),
		pf(7, 1006, "flag", iceberg.IdentityTransform{}), pf(8, 1007, "b", iceberg.IdentityTransform{}),
		pf(9, 1008, "t", iceberg.IdentityTransform{}), pf(10, 1009, "n", iceberg.IdentityTransform{}),
		pf(11, 1010, "lts", iceberg.IdentityTransform{})),
	"transforms": iceberg.NewPartitionSpecID(2,
		pf(3, 1000, "ts_day", iceberg.DayTransform{}), pf(3, 1001, "ts_hour", iceberg.HourTransform{}),
		pf(4, 1002, "d_month", iceberg.MonthTransform{}), pf(11, 1003, "lts_year", iceberg.YearTransform{}),
		pf(1, 1004, "id_bucket", iceberg.BucketTransform{NumBuckets: 16}),
		pf(2, 1005, "name_trunc", iceberg.TruncateTransform{Width: 3})),
}

// partitionFor gives the i-th file's partition tuple in spec (every
// tenth null), typed as iceberg-go's writer takes them.
func partitionFor(spec iceberg.PartitionSpec, i int) map[int]any {
	out := map[int]any{}
	for _, f := range spec.Fields() {
		if i%10 == 9 {
			out[f.FieldID] = nil
			continue
		}
		var v any
		switch f.Name {
		case "id":
			v = int64(i * 7)
		case "name":
			v = fmt.Sprintf("name-%d", i)
		case "ts", "lts":
			v = iceberg.Timestamp(1_700_000_000_000_000 + int64(i)*3_600_000_000)
		case "d":
			v = iceberg.Date(19_000 + i)
		case "amount":
			v = iceberg.DecimalLiteral(iceberg.Decimal{Val: decimal128FromInt(int64(i*100 + 5)), Scale: 2})
		case "u":
			v = uuidOf(i)
		case "flag":
			v = i%2 == 0
		case "b":
			v = []byte{byte(i), 0, 0xff}
		case "t":
			v = iceberg.Time(int64(i) * 1_000_000)
		case "n":
			v = int32(i)
		case "ts_day":
			v = iceberg.Date(19_000 + i)
		case "ts_hour", "d_month", "lts_year", "id_bucket":
			v = int32(i)
		case "name_trunc":
			v = fmt.Sprintf("n%d", i%100)
		default:
			panic(f.Name)
		}
		out[f.FieldID] = v
	}
	return out
}

type manifestCase struct {
	version int
	spec    string
	content iceberg.ManifestContent
}

func (c manifestCase) String() string {
	return fmt.Sprintf("v%d/%s/%s", c.version, c.spec, c.content)
}

func allCases() []manifestCase {
	var out []manifestCase
	for _, v := range []int{1, 2, 3} {
		for _, spec := range []string{"unpartitioned", "identity", "transforms"} {
			out = append(out, manifestCase{v, spec, iceberg.ManifestContentData})
			if v >= 2 {
				out = append(out, manifestCase{v, spec, iceberg.ManifestContentDeletes})
			}
		}
	}
	return out
}

// writeManifest writes a manifest of n entries as iceberg-go does, lists
// it in a manifest list of the same version (so the list's sequence
// number and first row id are inherited on read) and returns the list's
// entry for it.
func writeManifest(t testing.TB, dir string, c manifestCase, n int) iceberg.ManifestFile {
	t.Helper()
	spec := testSpecs[c.spec]
	const snapshotID, seq = int64(77), int64(5)
	var entries []iceberg.ManifestEntry
	for i := range n {
		content := iceberg.EntryContentData
		format := iceberg.ParquetFile
		if c.content == iceberg.ManifestContentDeletes {
			content = iceberg.EntryContentPosDeletes
			if i%3 == 1 {
				content = iceberg.EntryContentEqDeletes
			}
			if c.version >= 3 && i%3 == 2 {
				format = iceberg.PuffinFile
			}
		}
		b, err := iceberg.NewDataFileBuilder(spec, content, fmt.Sprintf("s3://bucket/t/data/%s-%d.parquet", c, i),
			format, partitionFor(spec, i), nil, nil, int64(100+i), int64(1000+i*37))
		if err != nil {
			t.Fatal(err)
		}
		b.ColumnSizes(map[int]int64{1: 10, 2: int64(i)}).ValueCounts(map[int]int64{1: 100}).
			NullValueCounts(map[int]int64{2: 1}).LowerBoundValues(map[int][]byte{1: {1}}).
			UpperBoundValues(map[int][]byte{1: {9}}).SplitOffsets([]int64{4, int64(100 + i)})
		if i%4 == 0 {
			b.KeyMetadata([]byte{0xde, 0xad, byte(i)})
		}
		if content == iceberg.EntryContentData && i%2 == 0 {
			b.SortOrderID(1)
		}
		if content == iceberg.EntryContentEqDeletes {
			b.EqualityFieldIDs([]int{1, 2})
		}
		if format == iceberg.PuffinFile {
			b.ReferencedDataFile(fmt.Sprintf("s3://bucket/t/data/ref-%d.parquet", i)).ContentOffset(int64(4 + i)).ContentSizeInBytes(int64(40 + i))
		}
		if c.version >= 3 && content == iceberg.EntryContentData && i%5 == 3 {
			b.FirstRowID(int64(1_000_000 + i))
		}
		df := b.Build()
		var e iceberg.ManifestEntry
		switch i % 3 {
		case 0: // added in this snapshot: snapshot id and sequence numbers inherited
			e = iceberg.NewManifestEntry(iceberg.EntryStatusADDED, nil, nil, nil, df)
		case 1:
			sn, s, fs := int64(60+i), int64(2), int64(3)
			e = iceberg.NewManifestEntry(iceberg.EntryStatusEXISTING, &sn, &s, &fs, df)
		default:
			sn, s, fs := int64(50+i), int64(1), int64(1)
			e = iceberg.NewManifestEntry(iceberg.EntryStatusDELETED, &sn, &s, &fs, df)
		}
		entries = append(entries, e)
	}
	path := filepath.Join(dir, fmt.Sprintf("manifest-%d-%s-%d.avro", c.version, c.spec, c.content))
	var buf bytes.Buffer
	w, err := iceberg.NewManifestWriter(c.version, &buf, spec, testSchema, snapshotID, iceberg.WithManifestWriterContent(c.content))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		var err error
		switch e.Status() {
		case iceberg.EntryStatusADDED:
			err = w.Add(e)
		case iceberg.EntryStatusEXISTING:
			err = w.Existing(e)
		default:
			err = w.Delete(e)
		}
		if err != nil {
			t.Fatalf("%s: %v", c, err)
		}
	}
	mf, err := w.ToManifestFile(path, 0, iceberg.WithManifestFileContent(c.content))
	if err != nil {
		t.Fatal(err)
	}
	if err := (iceio.LocalFS{}).WriteFile(path, buf.Bytes()); err != nil {
		t.Fatal(err)
	}
	var list bytes.Buffer
	s := seq
	if err := iceberg.WriteManifestList(c.version, &list, snapshotID, nil, &s, 500, []iceberg.ManifestFile{mf}); err != nil {
		t.Fatal(err)
	}
	listed, err := iceberg.ReadManifestList(&list)
	if err != nil || len(listed) != 1 {
		t.Fatalf("%s: read back the manifest list: %v (%d)", c, err, len(listed))
	}
	return listed[0]
}

// sameEntries fails t unless got (this package) answers every accessor as
// want (iceberg-go's reader) does, the column statistics excepted.
func sameEntries(t testing.TB, what string, want, got []iceberg.ManifestEntry) {
	t.Helper()
	if len(want) != len(got) {
		t.Fatalf("%s: %d entries, iceberg-go read %d", what, len(got), len(want))
	}
	for i := range want {
		w, g := want[i], got[i]
		wd, gd := w.DataFile(), g.DataFile()
		for _, c := range []struct {
			field     string
			want, got any
		}{
			{"status", w.Status(), g.Status()},
			{"snapshot id", w.SnapshotID(), g.SnapshotID()},
			{"sequence number", w.SequenceNum(), g.SequenceNum()},
			{"file sequence number", w.FileSequenceNum(), g.FileSequenceNum()},
			{"content", wd.ContentType(), gd.ContentType()},
			{"path", wd.FilePath(), gd.FilePath()},
			{"format", wd.FileFormat(), gd.FileFormat()},
			{"partition", wd.Partition(), gd.Partition()},
			{"record count", wd.Count(), gd.Count()},
			{"size", wd.FileSizeBytes(), gd.FileSizeBytes()},
			{"spec id", wd.SpecID(), gd.SpecID()},
			{"key metadata", wd.KeyMetadata(), gd.KeyMetadata()},
			{"split offsets", wd.SplitOffsets(), gd.SplitOffsets()},
			{"equality ids", wd.EqualityFieldIDs(), gd.EqualityFieldIDs()},
			{"sort order id", wd.SortOrderID(), gd.SortOrderID()},
			{"first row id", wd.FirstRowID(), gd.FirstRowID()},
			{"referenced data file", wd.ReferencedDataFile(), gd.ReferencedDataFile()},
			{"content offset", wd.ContentOffset(), gd.ContentOffset()},
			{"content size", wd.ContentSizeInBytes(), gd.ContentSizeInBytes()},
		} {
			if !reflect.DeepEqual(c.want, c.got) {
				t.Errorf("%s: entry %d (%s): %s = %#v, iceberg-go read %#v", what, i, wd.FilePath(), c.field, c.got, c.want)
			}
		}
	}
}

func TestFetchReadsWhatIcebergGoReads(t *testing.T) {
	dir := t.TempDir()
	r := New(0)
	texts := map[string]bool{} // the distinct schema and partition-spec texts
	for _, c := range allCases() {
		m := writeManifest(t, dir, c, 23)
		b, err := os.ReadFile(m.FilePath())
		if err != nil {
			t.Fatal(err)
		}
		h, err := readHeader(b)
		if err != nil {
			t.Fatal(err)
		}
		texts[string(h.meta["avro.schema"])+"\x00"+string(h.meta["partition-spec"])] = true
		for _, discard := range []bool{false, true} {
			want, err := m.FetchEntries(iceio.LocalFS{}, discard)
			if err != nil {
				t.Fatalf("%s: iceberg-go: %v", c, err)
			}
			got, err := r.Fetch(iceio.LocalFS{}, m, discard)
			if err != nil {
				t.Fatalf("%s: %v", c, err)
			}
			sameEntries(t, fmt.Sprintf("%s discardDeleted=%v", c, discard), want, got)
			if len(got) == 0 {
				t.Fatalf("%s: no entries", c)
			}
		}
	}
	st := r.Stats()
	if st.Fallbacks != 0 {
		t.Errorf("%d manifests fell back to iceberg-go; the fast path reads every manifest iceberg-go writes", st.Fallbacks)
	}
	if want := int64(len(texts)); st.Compiles != want {
		t.Errorf("%d schema compiles for %d distinct manifest schemas read twice each", st.Compiles, want)
	}
}

func decimal128FromInt(v int64) decimal128.Num { return decimal128.FromI64(v) }

func uuidOf(i int) uuid.UUID {
	return uuid.UUID{byte(i), 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, byte(i)}
}
