package deletions

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	iceio "github.com/apache/iceberg-go/io"

	"github.com/icereactor/reactor/history"
)

func TestBatchesRoundTripInDueOrder(t *testing.T) {
	loc := "file://" + t.TempDir() + "/db/t"
	fs := iceio.LocalFS{}
	if refs, err := List(fs, loc); err != nil || len(refs) != 0 {
		t.Fatalf("no directory yet: %v, %v; want an empty list", refs, err)
	}
	now := time.Now().UTC().Truncate(time.Millisecond)
	late := Batch{Table: "db.t", JobID: "job-2", LeftAt: now, Due: now.Add(2 * time.Hour),
		Files: []File{{Path: loc + "/data/b.parquet", Kind: history.Data}}}
	early := Batch{Table: "db.t", JobID: "job/1 with spaces..", LeftAt: now, Due: now.Add(time.Hour),
		Files: []File{{Path: loc + "/data/a.parquet", Kind: history.Data}, {Path: loc + "/metadata/snap-1.avro", Kind: history.ManifestList}}}
	for _, b := range []Batch{late, early} {
		if _, err := Write(fs, loc, b); err != nil {
			t.Fatal(err)
		}
	}
	// Not batches: ignored.
	dir := filepath.Join(loc[len("file://"):], DirName)
	for _, name := range []string{"notes.txt", "123-x.json", "0000000000001-../x.json"} {
		_ = os.WriteFile(filepath.Join(dir, filepath.Base(name)), []byte("{}"), 0o644)
	}
	refs, err := List(fs, loc)
	if err != nil {
		t.Fatal(err)
	}
	if len(refs) != 2 || !refs[0].Due.Equal(early.Due) || !refs[1].Due.Equal(late.Due) {
		t.Fatalf("refs %v, want the two batches, earliest first", refs)
	}
	got, err := Read(fs, refs[0])
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got.Files, early.Files) || got.JobID != early.JobID || !got.Due.Equal(early.Due) {
		t.Errorf("read %+v, wrote %+v", got, early)
	}
	if err := Remove(fs, refs[0]); err != nil {
		t.Fatal(err)
	}
	if err := Remove(fs, refs[0]); err != nil {
		t.Errorf("removing a removed batch: %v", err)
	}
	if refs, err := List(fs, loc); err != nil || len(refs) != 1 || refs[0].Due != late.Due {
		t.Errorf("after removal: %v, %v", refs, err)
	}
}

func TestWriteRefusesABatchWithoutJob(t *testing.T) {
	if _, err := Write(iceio.LocalFS{}, "file://"+t.TempDir(), Batch{JobID: "../.."}); err == nil {
		t.Error("a job id with nothing usable in a file name was accepted")
	}
}
