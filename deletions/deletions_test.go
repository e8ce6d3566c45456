package deletions

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	iceio "github.com/apache/iceberg-go/io"

	"github.com/icereactor/reactor/history"
)

// testKeys is a fixed keyring: records written in one test run verify in
// another.
func testKeys(t testing.TB, seed byte) *Keyring {
	t.Helper()
	k, err := NewKeyring(bytes.Repeat([]byte{seed}, MinKeyBytes))
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func tableAt(t testing.TB) (string, TableRef) {
	t.Helper()
	loc := "file://" + t.TempDir() + "/db/t"
	return loc, TableRef{Location: loc, UUID: "9c12d441-03fe-4693-9a96-a0705ddf69c1"}
}

func TestBatchesRoundTripInDueOrder(t *testing.T) {
	loc, ref := tableAt(t)
	fs := iceio.LocalFS{}
	recs := testKeys(t, 1).Records(fs, ref)
	if refs, err := recs.List(); err != nil || len(refs) != 0 {
		t.Fatalf("no directory yet: %v, %v; want an empty list", refs, err)
	}
	now := time.Now().UTC().Truncate(time.Millisecond)
	late := Batch{Table: "db.t", JobID: "job-2", LeftAt: now, Due: now.Add(2 * time.Hour),
		Files: []File{{Path: loc + "/data/b.parquet", Kind: history.Data}}, Roots: []string{loc}}
	early := Batch{Table: "db.t", JobID: "job/1 with spaces..", LeftAt: now, Due: now.Add(time.Hour),
		Files: []File{{Path: loc + "/data/a.parquet", Kind: history.Data}, {Path: loc + "/metadata/snap-1.avro", Kind: history.ManifestList}}}
	for _, b := range []Batch{late, early} {
		if _, err := recs.WriteBatch(b); err != nil {
			t.Fatal(err)
		}
	}
	// Not batches: ignored.
	dir := filepath.Join(loc[len("file://"):], DirName)
	for _, name := range []string{"notes.txt", "123-x.json", "0000000000001-../x.json"} {
		_ = os.WriteFile(filepath.Join(dir, filepath.Base(name)), []byte("{}"), 0o644)
	}
	refs, err := recs.List()
	if err != nil {
		t.Fatal(err)
	}
	if len(refs) != 2 || !refs[0].Due.Equal(early.Due) || !refs[1].Due.Equal(late.Due) {
		t.Fatalf("refs %v, want the two batches, earliest first", refs)
	}
	got, err := recs.ReadBatch(refs[0])
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got.Files, early.Files) || got.JobID != early.JobID || !got.Due.Equal(early.Due) {
		t.Errorf("read %+v, wrote %+v", got, early)
	}
	if got, _ := recs.ReadBatch(refs[1]); !reflect.DeepEqual(got.Roots, late.Roots) {
		t.Errorf("roots %v, wrote %v", got.Roots, late.Roots)
	}
	if err := recs.Remove(refs[0]); err != nil {
		t.Fatal(err)
	}
	if err := recs.Remove(refs[0]); err != nil {
		t.Errorf("removing a removed batch: %v", err)
	}
	if refs, err := recs.List(); err != nil || len(refs) != 1 || refs[0].Due != late.Due {
		t.Errorf("after removal: %v, %v", refs, err)
	}
}

func TestWriteRefusesABatchWithoutJob(t *testing.T) {
	_, ref := tableAt(t)
	if _, err := testKeys(t, 1).Records(iceio.LocalFS{}, ref).WriteBatch(Batch{JobID: "../.."}); err == nil {
		t.Error("a job id with nothing usable in a file name was accepted")
	}
}

func TestLargeBatchesAreSplit(t *testing.T) {
	loc, ref := tableAt(t)
	recs := testKeys(t, 1).Records(iceio.LocalFS{}, ref)
	b := Batch{Table: "db.t", JobID: "big", Due: time.Now()}
	for i := range maxFilesPerRecord + 10 {
		b.Files = append(b.Files, File{Path: fmt.Sprintf("%s/data/f-%06d.parquet", loc, i), Kind: history.Data})
	}
	refs, err := recs.WriteBatch(b)
	if err != nil {
		t.Fatal(err)
	}
	if len(refs) != 2 {
		t.Fatalf("%d records, want 2", len(refs))
	}
	total := 0
	for _, r := range refs {
		got, err := recs.ReadBatch(r)
		if err != nil {
			t.Fatal(err)
		}
		total += len(got.Files)
		if got.Parts != 2 {
			t.Errorf("part %d of %d", got.Part, got.Parts)
		}
	}
	if total != len(b.Files) {
		t.Errorf("%d files read back, wrote %d", total, len(b.Files))
	}
}

// write puts raw bytes where a record would be.
func write(t testing.TB, loc string, data []byte) {
	t.Helper()
	p := strings.TrimPrefix(loc, "file://")
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestForgedRecordsAreRefused(t *testing.T) {
	loc, ref := tableAt(t)
	fs := iceio.LocalFS{}
	keys := testKeys(t, 1)
	recs := keys.Records(fs, ref)
	batch := Batch{Table: "db.t", JobID: "j", Due: time.Now().Add(-time.Hour),
		Files: []File{{Path: loc + "/data/a.parquet", Kind: history.Data}}}
	plain, _ := json.Marshal(batch)
	signed, err := keys.seal(KindPendingDeletes, ref.binding(), batch)
	if err != nil {
		t.Fatal(err)
	}
	otherTable, _ := keys.seal(KindPendingDeletes, TableRef{Location: loc, UUID: "00000000-0000-0000-0000-00000000000b"}.binding(), batch)
	otherKey, _ := testKeys(t, 2).seal(KindPendingDeletes, ref.binding(), batch)
	asIntent, _ := keys.seal(KindOutputIntent, ref.binding(), batch)
	var env envelope
	_ = json.Unmarshal(signed, &env)
	env.Body = json.RawMessage(strings.Replace(string(env.Body), "a.parquet", "b.parquet", 1))
	altered, _ := json.Marshal(env)
	env.KeyID = keys.keys[0].id
	cases := []struct {
		name   string
		data   []byte
		reason string
	}{
		{"unsigned (an earlier version's)", plain, RefusedUnsigned},
		{"another key", otherKey, RefusedUnknownKey},
		{"altered after signing", altered, RefusedBadSignature},
		{"another table's, copied here", otherTable, RefusedOtherTable},
		{"another kind under a batch's name", asIntent, RefusedWrongKind},
		{"not JSON", []byte("rm -rf /"), RefusedMalformed},
		{"not UTF-8", []byte{0xff, 0xfe, '{'}, RefusedMalformed},
		{"a future version", []byte(`{"reactor_record":2,"mac":"x"}`), RefusedMalformed},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := Ref{Location: fmt.Sprintf("%s/%0013d-forged%d.json", Dir(loc), 1, i)}
			write(t, r.Location, tc.data)
			_, err := recs.ReadBatch(r)
			var refusal *Refusal
			if !errors.As(err, &refusal) || !errors.Is(err, ErrRefused) {
				t.Fatalf("read: %v; want a refusal", err)
			}
			if refusal.Reason != tc.reason {
				t.Errorf("reason %q (%v), want %q", refusal.Reason, refusal, tc.reason)
			}
		})
	}
	good := Ref{Location: Dir(loc) + "/0000000000001-good.json"}
	write(t, good.Location, signed)
	if _, err := recs.ReadBatch(good); err != nil {
		t.Errorf("the genuine record: %v", err)
	}
}

func TestOversizedRecordsAreRefusedUnread(t *testing.T) {
	loc, ref := tableAt(t)
	keys := testKeys(t, 1)
	keys.MaxRecordBytes = 1 << 20
	r := Ref{Location: Dir(loc) + "/0000000000001-huge.json"}
	write(t, r.Location, nil)
	// Sparse: the size is reported without the bytes being there.
	if err := os.Truncate(strings.TrimPrefix(r.Location, "file://"), 8<<30); err != nil {
		t.Fatal(err)
	}
	_, err := keys.Records(iceio.LocalFS{}, ref).ReadBatch(r)
	var refusal *Refusal
	if !errors.As(err, &refusal) || refusal.Reason != RefusedTooLarge || !strings.Contains(refusal.Detail, "8589934592 bytes") {
		t.Errorf("an 8 GiB record: %v; want refused as too_large, naming its size", err)
	}
	shield, err := keys.Records(iceio.LocalFS{}, ref).Shielded()
	if err != nil || len(shield) != 0 {
		t.Errorf("shielded %v, %v: an oversized batch shields nothing and fails nothing", shield, err)
	}
}

func TestKeyRotationKeepsOldRecordsReadable(t *testing.T) {
	loc, ref := tableAt(t)
	old := testKeys(t, 1)
	b := Batch{Table: "db.t", JobID: "j", Due: time.Now(), Files: []File{{Path: loc + "/data/a.parquet", Kind: history.Data}}}
	refs, err := old.Records(iceio.LocalFS{}, ref).WriteBatch(b)
	if err != nil {
		t.Fatal(err)
	}
	rotated, err := NewKeyring(bytes.Repeat([]byte{2}, MinKeyBytes), bytes.Repeat([]byte{1}, MinKeyBytes))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := rotated.Records(iceio.LocalFS{}, ref).ReadBatch(refs[0]); err != nil {
		t.Errorf("a record of the previous key: %v", err)
	}
	if rotated.SigningKeyID() == old.SigningKeyID() {
		t.Error("the new key does not sign")
	}
}

func TestShieldedCountsUnverifiedBatches(t *testing.T) {
	loc, ref := tableAt(t)
	recs := testKeys(t, 1).Records(iceio.LocalFS{}, ref)
	if _, err := recs.WriteBatch(Batch{JobID: "signed", Due: time.Now(), Files: []File{{Path: loc + "/data/a.parquet", Kind: history.Data}}}); err != nil {
		t.Fatal(err)
	}
	legacy, _ := json.Marshal(Batch{JobID: "legacy", Files: []File{{Path: loc + "/data/b.parquet", Kind: history.Data}}})
	write(t, Dir(loc)+"/0000000000001-legacy.json", legacy)
	write(t, Dir(loc)+"/0000000000002-garbage.json", []byte("{"))
	shield, err := recs.Shielded()
	if err != nil {
		t.Fatal(err)
	}
	if len(shield) != 2 {
		t.Errorf("shielded %v; want a.parquet and b.parquet", shield)
	}
}

func TestKeyFiles(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "sub", "record.key")
	k, err := GenerateKeyFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := GenerateKeyFile(path); err == nil {
		t.Error("an existing key file was overwritten")
	}
	again, err := ReadKeyFile(path)
	if err != nil || again.SigningKeyID() != k.SigningKeyID() {
		t.Fatalf("read back: %v, %v", again, err)
	}
	if err := os.Chmod(path, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadKeyFile(path); err == nil || !strings.Contains(err.Error(), "chmod 600") {
		t.Errorf("a world-readable key file: %v", err)
	}
	for text, want := range map[string]string{
		"":                      "no key line",
		"# only a comment\n":    "no key line",
		"c2hvcnQ=\n":            "at least 32",
		"not base64 at all!!\n": "not base64",
	} {
		if _, err := ParseKeys([]byte(text)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ParseKeys(%q): %v, want %q", text, err, want)
		}
	}
}
