package manifestread

import (
	"bytes"
	"fmt"
	"reflect"
	"testing"

	"github.com/apache/iceberg-go"
)

// sameManifests fails t unless got answers every ManifestFile accessor as
// want (iceberg-go's ReadManifestList) does.
func sameManifests(t testing.TB, what string, want, got []iceberg.ManifestFile) {
	t.Helper()
	if len(want) != len(got) {
		t.Fatalf("%s: %d manifests, iceberg-go read %d", what, len(got), len(want))
	}
	for i := range want {
		w, g := want[i], got[i]
		for _, c := range []struct {
			field     string
			want, got any
		}{
			{"version", w.Version(), g.Version()},
			{"path", w.FilePath(), g.FilePath()},
			{"length", w.Length(), g.Length()},
			{"spec id", w.PartitionSpecID(), g.PartitionSpecID()},
			{"content", w.ManifestContent(), g.ManifestContent()},
			{"snapshot id", w.SnapshotID(), g.SnapshotID()},
			{"added files", w.AddedDataFiles(), g.AddedDataFiles()},
			{"existing files", w.ExistingDataFiles(), g.ExistingDataFiles()},
			{"deleted files", w.DeletedDataFiles(), g.DeletedDataFiles()},
			{"added rows", w.AddedRows(), g.AddedRows()},
			{"existing rows", w.ExistingRows(), g.ExistingRows()},
			{"deleted rows", w.DeletedRows(), g.DeletedRows()},
			{"sequence number", w.SequenceNum(), g.SequenceNum()},
			{"min sequence number", w.MinSequenceNum(), g.MinSequenceNum()},
			{"key metadata", w.KeyMetadata(), g.KeyMetadata()},
			{"partitions", w.Partitions(), g.Partitions()},
			{"first row id", w.FirstRowID(), g.FirstRowID()},
			{"has added", w.HasAddedFiles(), g.HasAddedFiles()},
			{"has existing", w.HasExistingFiles(), g.HasExistingFiles()},
		} {
			if !reflect.DeepEqual(c.want, c.got) {
				t.Errorf("%s: manifest %d (%s): %s = %#v, iceberg-go read %#v", what, i, w.FilePath(), c.field, c.got, c.want)
			}
		}
	}
}

// writeList writes a manifest list of ms as iceberg-go does.
func writeList(t testing.TB, version int, ms []iceberg.ManifestFile) []byte {
	t.Helper()
	var buf bytes.Buffer
	seq, parent := int64(9), int64(76)
	if err := iceberg.WriteManifestList(version, &buf, 77, &parent, &seq, 500, ms); err != nil {
		t.Fatalf("v%d: %v", version, err)
	}
	return buf.Bytes()
}

func TestDecodeListReadsWhatIcebergGoReads(t *testing.T) {
	dir := t.TempDir()
	r := New(0)
	for _, version := range []int{1, 2, 3} {
		var data, deletes []iceberg.ManifestFile
		for _, c := range allCases() {
			if c.version != version {
				continue
			}
			m := writeManifest(t, dir, c, 7)
			if c.content == iceberg.ManifestContentData {
				data = append(data, m)
			} else {
				deletes = append(deletes, m)
			}
		}
		lists := map[string][]iceberg.ManifestFile{"data": data}
		if len(deletes) > 0 {
			lists["deletes"] = deletes
			lists["both"] = append(append([]iceberg.ManifestFile{}, data...), deletes...)
		}
		for name, ms := range lists {
			b := writeList(t, version, ms)
			want, err := iceberg.ReadManifestList(bytes.NewReader(b))
			if err != nil {
				t.Fatal(err)
			}
			got, err := r.DecodeList(b)
			if version == 3 && name != "deletes" {
				// Data manifests in a v3 list carry first row ids, which
				// only iceberg-go's reader can hand on.
				if err == nil {
					t.Fatalf("v3 %s: read a list of first row ids by the fast path", name)
				}
				continue
			}
			if err != nil {
				t.Fatalf("v%d %s: %v", version, name, err)
			}
			sameManifests(t, fmt.Sprintf("v%d %s", version, name), want, got)
		}
	}
}

// A list read from a cached schema is never a stale one: the forged list
// (a field id of its own schema changed so that it no longer reads as v2)
// compiles on its own.
func TestAForgedListSchemaIsNotServedFromTheCache(t *testing.T) {
	dir := t.TempDir()
	m := writeManifest(t, dir, manifestCase{2, "identity", iceberg.ManifestContentData}, 3)
	orig := writeList(t, 2, []iceberg.ManifestFile{m})
	r := New(0)
	got, err := r.DecodeList(orig)
	if err != nil || len(got) != 1 || got[0].Version() != 2 {
		t.Fatalf("original: %v (%d manifests)", err, len(got))
	}
	// The same list with the content field's id changed: another text.
	forged := forgeFieldID(t, orig, "517", "599")
	if _, err := r.DecodeList(forged); err != nil {
		t.Fatalf("forged: %v", err)
	}
	if st := r.Stats(); st.Compiles != 2 {
		t.Errorf("%d compiles for two different list schema texts, want 2", st.Compiles)
	}
	want, err := iceberg.ReadManifestList(bytes.NewReader(forged))
	if err != nil {
		t.Fatal(err)
	}
	got, err = r.DecodeList(forged)
	if err != nil {
		t.Fatal(err)
	}
	sameManifests(t, "forged", want, got)
}
