package planner

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/icereactor/reactor/embedded"
	"github.com/icereactor/reactor/jobs"
	"github.com/icereactor/reactor/location"
	"github.com/icereactor/reactor/streamwriter"
	"github.com/icereactor/reactor/thresholds"
)

// The counters an incremental update produces must equal those a rebuild
// from the same snapshot produces, after appends, after a rewrite that
// removes files, and across reactor's own snapshots; and the incremental
// update must read only the manifests the new snapshots added.
func TestIncrementalCountersMatchRebuild(t *testing.T) {
	ctx := t.Context()
	cat, err := embedded.OpenCatalog(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	ident := table.Identifier{"db", "t"}
	if _, err := streamwriter.CreateTable(ctx, cat, ident, streamwriter.MergeOnReadProperties); err != nil {
		t.Fatal(err)
	}
	w := streamwriter.New(cat, ident, nil)
	load := func() *table.Table {
		tbl, err := cat.LoadTable(ctx, ident)
		if err != nil {
			t.Fatal(err)
		}
		return tbl
	}
	small := fileSizes{small: 1 << 20, tiny: 1 << 10}

	var inc tableCounters
	check := func(step string, wantManifests int) {
		t.Helper()
		tbl := load()
		st, err := inc.advance(ctx, tbl, small)
		if err != nil {
			t.Fatalf("%s: advance: %v", step, err)
		}
		if wantManifests >= 0 && (st.rebuilt || st.manifestsRead != wantManifests) {
			t.Errorf("%s: rebuilt=%v manifests read %d, want incremental reading %d", step, st.rebuilt, st.manifestsRead, wantManifests)
		}
		var full tableCounters
		if _, err := full.advance(ctx, tbl, small); err != nil {
			t.Fatalf("%s: rebuild: %v", step, err)
		}
		for k, ps := range full.partitions {
			got := inc.partitions[k]
			if got == nil || !sameCounters(got.Counters, ps.Counters) {
				t.Errorf("%s: partition %s incremental %+v, rebuild %+v", step, k, got, ps.Counters)
			}
		}
		for k, ps := range inc.partitions {
			if _, ok := full.partitions[k]; !ok && ps.DataFiles != 0 {
				t.Errorf("%s: partition %s only in incremental state: %+v", step, k, ps.Counters)
			}
		}
	}

	commit := func(cat string, rows int) {
		t.Helper()
		if _, err := w.Commit(ctx, cat, rows); err != nil {
			t.Fatal(err)
		}
	}
	commit("a", 10)
	check("first event builds", -1)
	commit("a", 10)
	commit("b", 5)
	check("two appends", 2)
	for range 4 {
		commit("a", 3)
	}
	check("four appends", 4)
	if _, err := w.DeleteRows(ctx, 1, 2, 21); err != nil { // a: 1, 2; b: 21
		t.Fatal(err)
	}
	if _, err := w.DeleteKeys(ctx, 3); err != nil {
		t.Fatal(err)
	}
	check("position and equality deletes", 2)
	pa := inc.partitions["category=a"]
	if pa.PositionDeleteFiles != 1 || pa.PositionDeleteRows != 2 || pa.EqualityDeleteFiles != 1 || pa.EqualityDeleteRows != 1 ||
		pa.DeleteBytes <= 0 || inc.partitions["category=b"].PositionDeleteFiles != 1 {
		t.Errorf("after deletes partition a = %+v, b = %+v", pa.Counters, inc.partitions["category=b"].Counters)
	}

	// A rewrite of partition a by "reactor": all files but one removed.
	tbl := load()
	tasks, err := tbl.Scan().PlanFiles(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var old []iceberg.DataFile
	var bDelete iceberg.DataFile
	for _, task := range tasks {
		if task.File.Partition()[1000] == "a" {
			old = append(old, task.File)
		} else if len(task.DeleteFiles) > 0 {
			bDelete = task.DeleteFiles[0]
		}
	}
	txn := tbl.NewTransaction()
	rw := txn.NewRewrite(iceberg.Properties{jobs.SnapshotJobProperty: "job-1"})
	for _, df := range old[1:] {
		rw.DeleteFile(df) // keep one file: the shape of a rewrite, without writing Parquet
	}
	rw.DeleteFile(bDelete) // and drop b's position deletes
	if err := rw.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := txn.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	lastWriteBefore := inc.partitions["category=a"].LastWrite
	check("reactor's rewrite", -1)
	pa = inc.partitions["category=a"]
	if pa.DataFiles != 1 || pa.SmallFiles != 1 {
		t.Errorf("after rewrite partition a = %+v, want 1 file", pa.Counters)
	}
	if !pa.LastWrite.Equal(lastWriteBefore) {
		t.Errorf("reactor's own snapshot moved LastWrite from %v to %v", lastWriteBefore, pa.LastWrite)
	}
	if pb := inc.partitions["category=b"]; pb.DataFiles != 1 || pb.Rows != 5 || pb.PositionDeleteFiles != 0 || pb.PositionDeleteRows != 0 {
		t.Errorf("partition b = %+v, want 1 file of 5 rows and no delete file", pb.Counters)
	}

	// An older table handed in after the state moved on changes nothing.
	snapBefore := inc.snapshotID
	if _, err := inc.advance(ctx, tbl, small); err != nil {
		t.Fatal(err)
	}
	if inc.snapshotID != snapBefore {
		t.Errorf("an older table moved the state back from %d to %d", snapBefore, inc.snapshotID)
	}

	// A different small-file size rebuilds.
	st, err := inc.advance(ctx, load(), fileSizes{small: 1})
	if err != nil || !st.rebuilt || inc.partitions["category=b"].SmallFiles != 0 {
		t.Errorf("changing the small-file size: rebuilt=%v err=%v b=%+v", st.rebuilt, err, inc.partitions["category=b"].Counters)
	}
}

func TestPartitionKey(t *testing.T) {
	ctx := context.Background()
	cat, err := embedded.OpenCatalog(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	tbl, err := streamwriter.CreateTable(ctx, cat, table.Identifier{"db", "k"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	meta := tbl.Metadata()
	tests := []struct {
		values map[int]any
		spec   int32
		want   string
	}{
		{map[int]any{1000: "books"}, 0, "category=books"},
		{map[int]any{1000: "a b+c=d"}, 0, "category=a b+c=d"},
		{map[int]any{1000: nil}, 0, "category=null"},
		{map[int]any{1000: "x"}, 7, "spec=7/1000=x"},
	}
	for _, tt := range tests {
		if got := jobs.NewKeyer(meta).Key(tt.spec, tt.values); got != tt.want {
			t.Errorf("Key(%v, spec %d) = %q, want %q", tt.values, tt.spec, got, tt.want)
		}
	}
}

func TestRecentHashes(t *testing.T) {
	var r recentHashes
	if r.set != nil || r.ring != nil {
		t.Fatal("an empty set must allocate nothing")
	}
	for id := uint64(1); id <= recentHashLimit+10; id++ {
		r.add(id)
	}
	r.add(recentHashLimit + 5) // duplicate: no eviction
	for id := uint64(1); id <= 10; id++ {
		if r.has(id) {
			t.Errorf("hash %d should have been evicted", id)
		}
	}
	for _, id := range []uint64{11, recentHashLimit, recentHashLimit + 10} {
		if !r.has(id) {
			t.Errorf("hash %d should be remembered", id)
		}
	}
	if len(r.set) != recentHashLimit {
		t.Errorf("set holds %d hashes, want %d", len(r.set), recentHashLimit)
	}
}

func TestMetadataCovered(t *testing.T) {
	applied := location.Identity("s3://b/w/db/t/metadata/00005-aaa.metadata.json")
	for _, tt := range []struct {
		loc  string
		want bool
	}{
		{"s3://b/w/db/t/metadata/00005-aaa.metadata.json", true},
		{"s3a://b/w/db/t/metadata/00005-aaa.metadata.json", true},
		{"s3://b/w/db/t/metadata/00004-bbb.metadata.json", true},
		{"s3://b/w/db/t/metadata/00006-ccc.metadata.json", false},
		{"s3://b/w/db/other/metadata/00001-ddd.metadata.json", false},
		{"s3://b/w/db/t/metadata/v3.metadata.json", false},
	} {
		if got := metadataCovered(applied, tt.loc); got != tt.want {
			t.Errorf("metadataCovered(%s) = %v, want %v", tt.loc, got, tt.want)
		}
	}
	if metadataCovered("", "s3://b/w/db/t/metadata/00001-a.metadata.json") {
		t.Error("nothing applied covers nothing")
	}
}

func TestHealthReport(t *testing.T) {
	ctx := t.Context()
	cat, err := embedded.OpenCatalog(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	ident := table.Identifier{"db", "h"}
	if _, err := streamwriter.CreateTable(ctx, cat, ident, nil); err != nil {
		t.Fatal(err)
	}
	w := streamwriter.New(cat, ident, nil)
	for range 4 {
		if _, err := w.Commit(ctx, "a", 5); err != nil {
			t.Fatal(err)
		}
	}
	tbl, err := cat.LoadTable(ctx, ident)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := thresholds.Parse([]byte("defaults: {health_max_tiny_files: 3, health_max_snapshots: 10, health_max_snapshot_age: 1h}"))
	if err != nil {
		t.Fatal(err)
	}
	h, err := CheckHealth(ctx, tbl, cfg, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if h.Table != "db.h" || h.DataFiles != 4 || h.TinyFiles != 4 || h.Snapshots != 4 || h.DataManifests != 4 || h.AvgFileSize <= 0 {
		t.Errorf("health = %+v", h)
	}
	if h.Healthy || len(h.Problems) != 1 || !strings.Contains(h.Problems[0], "4 files below 16MiB (limit 3)") {
		t.Errorf("want exactly the tiny-files problem: %+v", h.Problems)
	}
	h, _ = CheckHealth(ctx, tbl, cfg, time.Now().Add(2*time.Hour))
	if len(h.Problems) != 2 || !strings.Contains(h.Problems[1], "oldest snapshot is") {
		t.Errorf("two hours later the snapshot age is a problem too: %+v", h.Problems)
	}
}

// sameCounters compares incremental counters a with rebuilt ones b. A
// rebuild sees only live files, so when the newest write to a partition
// was a delete file since removed, it dates the last write earlier than the
// incremental state, which saw the write happen: a may be later, never
// earlier.
func sameCounters(a, b Counters) bool {
	if a.LastWrite.Before(b.LastWrite) {
		return false
	}
	a.LastWrite, b.LastWrite = time.Time{}, time.Time{}
	return a == b
}

func TestInstant(t *testing.T) {
	if at := instantOf(time.Time{}); at != 0 || !at.time().IsZero() {
		t.Error("the zero time is the zero instant and back")
	}
	now := time.Now()
	if !instantOf(now).time().Equal(now) {
		t.Error("an instant keeps the time to the nanosecond")
	}
}
