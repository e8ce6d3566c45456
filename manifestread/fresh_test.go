package manifestread

import (
	"bytes"
	"os"
	"regexp"
	"testing"

	"github.com/apache/iceberg-go"
	iceio "github.com/apache/iceberg-go/io"
)

// forgeFieldID rewrites one partition field id inside the manifest's Avro
// schema text (and nowhere else), keeping the file valid: the same
// number of digits, so no length in the header changes.
func forgeFieldID(t *testing.T, file []byte, from, to string) []byte {
	t.Helper()
	h, err := readHeader(file)
	if err != nil {
		t.Fatal(err)
	}
	text := h.meta["avro.schema"]
	at := bytes.Index(file, text)
	re := regexp.MustCompile(`"field-id"\s*:\s*` + from + `\b`)
	loc := re.FindIndex(text)
	if at < 0 || loc == nil || len(from) != len(to) {
		t.Fatalf("field id %s not found in the schema text", from)
	}
	forged := bytes.Clone(file)
	seg := forged[at+loc[0] : at+loc[1]]
	copy(seg[len(seg)-len(to):], to)
	return forged
}

func partitionIDs(t *testing.T, entries []iceberg.ManifestEntry) map[int]bool {
	t.Helper()
	ids := map[int]bool{}
	for _, e := range entries {
		for id := range e.DataFile().Partition() {
			ids[id] = true
		}
	}
	return ids
}

func TestACachedSchemaIsNeverStale(t *testing.T) {
	dir := t.TempDir()
	m := writeManifest(t, dir, manifestCase{2, "identity", iceberg.ManifestContentData}, 9)
	orig, err := os.ReadFile(m.FilePath())
	if err != nil {
		t.Fatal(err)
	}
	forged := forgeFieldID(t, orig, "1000", "1099")
	if bytes.Equal(orig, forged) {
		t.Fatal("nothing forged")
	}
	forgedPath := m.FilePath() + ".forged.avro"
	if err := os.WriteFile(forgedPath, forged, 0o644); err != nil {
		t.Fatal(err)
	}
	forgedM := iceberg.NewManifestFile(m.Version(), forgedPath, int64(len(forged)), m.PartitionSpecID(), m.SnapshotID()).
		SequenceNum(m.SequenceNum(), m.MinSequenceNum()).Content(m.ManifestContent()).Build()

	r := New(0)
	for round, c := range []struct {
		m          iceberg.ManifestFile
		has, hasNo int
	}{{m, 1000, 1099}, {forgedM, 1099, 1000}, {m, 1000, 1099}, {forgedM, 1099, 1000}} {
		got, err := r.Fetch(iceio.LocalFS{}, c.m, false)
		if err != nil {
			t.Fatal(err)
		}
		ids := partitionIDs(t, got)
		if !ids[c.has] || ids[c.hasNo] {
			t.Fatalf("read %d (%s): partition field ids %v, want %d and not %d", round, c.m.FilePath(), ids, c.has, c.hasNo)
		}
		want, err := c.m.FetchEntries(iceio.LocalFS{}, false)
		if err != nil {
			t.Fatal(err)
		}
		sameEntries(t, c.m.FilePath(), want, got)
	}
	if st := r.Stats(); st.Compiles != 2 || st.Fallbacks != 0 {
		t.Errorf("stats %+v: want the two texts compiled once each, no fallback", st)
	}
}

// Two texts whose keys collide still get their own compiled schema: a hit
// needs the texts to be equal, not only their hash.
func TestCollidingKeysDoNotShareAnEntry(t *testing.T) {
	dir := t.TempDir()
	m := writeManifest(t, dir, manifestCase{3, "identity", iceberg.ManifestContentData}, 3)
	orig, err := os.ReadFile(m.FilePath())
	if err != nil {
		t.Fatal(err)
	}
	forged := forgeFieldID(t, orig, "1001", "1098")
	s := newSchemas(8)
	s.keyOf = func(_, _ []byte) uint64 { return 42 } // every text collides
	text := func(b []byte) ([]byte, []byte) {
		h, err := readHeader(b)
		if err != nil {
			t.Fatal(err)
		}
		return h.meta["avro.schema"], h.meta["partition-spec"]
	}
	for i, c := range []struct {
		file []byte
		id   int
		miss bool
	}{{orig, 1001, true}, {orig, 1001, false}, {forged, 1098, true}, {orig, 1001, true}} {
		sc, spec := text(c.file)
		got, miss, err := s.get(sc, spec)
		if err != nil {
			t.Fatal(err)
		}
		if got.fields.nameToID["name"] != c.id || miss != c.miss {
			t.Fatalf("get %d: field \"name\" has id %d (miss %v), want %d (miss %v)", i, got.fields.nameToID["name"], miss, c.id, c.miss)
		}
	}
}

func TestTheCacheIsBounded(t *testing.T) {
	dir := t.TempDir()
	var ms []iceberg.ManifestFile
	for _, spec := range []string{"unpartitioned", "identity", "transforms"} {
		ms = append(ms, writeManifest(t, dir, manifestCase{2, spec, iceberg.ManifestContentData}, 4))
	}
	r := New(2)
	for round := range 2 {
		for _, m := range ms {
			got, err := r.Fetch(iceio.LocalFS{}, m, false)
			if err != nil {
				t.Fatal(err)
			}
			want, err := m.FetchEntries(iceio.LocalFS{}, false)
			if err != nil {
				t.Fatal(err)
			}
			sameEntries(t, m.FilePath(), want, got)
			if st := r.Stats(); st.Cached > 2 {
				t.Fatalf("round %d: %d schemas cached, bound 2", round, st.Cached)
			}
		}
	}
	// Three texts through two slots, in a cycle: every read a miss.
	if st := r.Stats(); st.Compiles != 6 {
		t.Errorf("%d compiles, want 6 (LRU of 2 cycling through 3 texts)", st.Compiles)
	}
}
