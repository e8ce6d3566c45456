package executor_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"

	"github.com/icereactor/reactor/deletions"
	"github.com/icereactor/reactor/history"
	"github.com/icereactor/reactor/jobkind"
	"github.com/icereactor/reactor/jobs"
	"github.com/icereactor/reactor/scope"
	"github.com/icereactor/reactor/streamwriter"
	"github.com/icereactor/reactor/tablename"
)

// gc.enabled=false: the expiry still commits (the metadata stays bounded)
// and deletes nothing, now or later; orphan cleanup refuses the table.
func TestGCDisabledExpiresAndDeletesNothing(t *testing.T) {
	for _, value := range []string{"false", "False", "0"} {
		t.Run(value, func(t *testing.T) {
			s := newShared(t, "local", iceberg.Properties{scope.GCEnabledKey: value})
			before := len(s.load(s.a).Metadata().Snapshots())
			replaced, res := s.compactAndExpire("0s")
			after := s.load(s.a)
			if n := len(after.Metadata().Snapshots()); n >= before {
				t.Errorf("%d snapshots after the expiry, %d before: it did not commit", n, before)
			}
			if len(res.PendingDeletes) != 0 {
				t.Errorf("pending deletions %v written for a table that forbids deleting", res.PendingDeletes)
			}
			for _, p := range replaced {
				if !s.exists(p) {
					t.Errorf("%s deleted although gc.enabled=%s", p, value)
				}
			}
			if left := s.recordsLeft(); len(left) != 0 {
				t.Errorf("records %v written", left)
			}
			if rows := s.contents(s.a).Total.Rows; rows != 60 {
				t.Errorf("A has %d rows, want 60", rows)
			}
			// An old unreferenced file: an orphan by every other rule.
			dir := strings.TrimPrefix(after.Location(), "file://")
			stray := filepath.Join(dir, "data", "category=a", "stray.parquet")
			writeFile(t, stray)
			ageTree(t, dir)
			j := s.job(jobkind.RemoveOrphans, orphanYAMLDelete)
			j.OrphanSource = jobs.OrphansFromListing
			res, rep := s.exec.Run(t.Context(), j)
			if res.Outcome != jobs.Noop || rep.Refusals.ByRule[scope.GCDisabled] != 1 {
				t.Errorf("orphan cleanup: %v %v %+v; want refused as gc_disabled", res.Outcome, res.Err, rep.Refusals)
			}
			if _, err := os.Stat(stray); err != nil {
				t.Errorf("orphan cleanup deleted %s: %v", stray, err)
			}
		})
	}
}

const orphanYAMLDelete = "defaults: {orphan_margin: 1h, orphan_margin_floor: 1h, orphan_delete: true}"

// A table located inside another's location: the outer table's orphan
// cleanup lists the inner one's files and deletes none of them; its own
// orphan goes (the control), and so does the inner one's, by its own
// cleanup.
func TestNestedTablesKeepEachOthersFiles(t *testing.T) {
	s := newShared(t, "local", nil)
	ctx := t.Context()
	outer := s.load(s.a)
	inner := table.Identifier{"db", "inner"}
	if _, err := streamwriter.CreateTableAt(ctx, s.cat, inner, nil, outer.Location()+"/nested"); err != nil {
		t.Fatal(err)
	}
	w := streamwriter.New(s.cat, inner, nil)
	for range 3 {
		if _, err := w.Commit(ctx, "a", 10); err != nil {
			t.Fatal(err)
		}
	}
	innerRows := s.contents(inner)
	dir := strings.TrimPrefix(outer.Location(), "file://")
	outerStray := filepath.Join(dir, "data", "category=a", "outer-stray.parquet")
	innerStray := filepath.Join(dir, "nested", "data", "category=a", "inner-stray.parquet")
	writeFile(t, outerStray)
	writeFile(t, innerStray)
	ageTree(t, dir)
	listed := s.files(inner) // the inner table's files, its orphan among them
	j := s.job(jobkind.RemoveOrphans, orphanYAMLDelete)
	j.OrphanSource = jobs.OrphansFromListing
	res, rep := s.exec.Run(ctx, j)
	if res.Outcome != jobs.Succeeded {
		t.Fatalf("outer cleanup: %v %v", res.Outcome, res.Err)
	}
	if _, err := os.Stat(outerStray); err == nil {
		t.Error("the outer table's own orphan survived its cleanup")
	}
	for p := range listed {
		if _, err := os.Stat(strings.TrimPrefix(p, "file://")); err != nil {
			t.Errorf("the outer table's cleanup deleted the inner table's %s", p)
		}
	}
	if got := s.contents(inner); got.Total != innerRows.Total {
		t.Errorf("inner table reads %+v, want %+v", got.Total, innerRows.Total)
	}
	if rep.Orphans.OtherTables == 0 {
		t.Errorf("report %+v: no file counted as another table's", rep.Orphans)
	}
	// The inner table's own cleanup takes its orphan.
	ij := j
	ij.Table = tablename.Of(inner)
	if res, _ := s.exec.Run(ctx, ij); res.Outcome != jobs.Succeeded {
		t.Fatalf("inner cleanup: %v %v", res.Outcome, res.Err)
	}
	if _, err := os.Stat(innerStray); err == nil {
		t.Error("the inner table's orphan survived its own cleanup")
	}
}

// refsOnlyCatalog answers LoadTable as a REST catalog in
// snapshot-loading-mode "refs" does: the metadata holds only the snapshots
// a branch or tag names, the snapshot log all of them. A stand-in for the
// REST server's answer, built from the real table.
type refsOnlyCatalog struct {
	catalog.Catalog
}

func (c refsOnlyCatalog) LoadTable(ctx context.Context, ident table.Identifier) (*table.Table, error) {
	tbl, err := c.Catalog.LoadTable(ctx, ident)
	if err != nil {
		return nil, err
	}
	raw, err := json.Marshal(tbl.Metadata())
	if err != nil {
		return nil, err
	}
	var doc map[string]any
	if err := json.Unmarshal(raw, &doc); err != nil {
		return nil, err
	}
	keep := map[float64]bool{}
	for _, ref := range doc["refs"].(map[string]any) {
		keep[ref.(map[string]any)["snapshot-id"].(float64)] = true
	}
	var snaps []any
	for _, s := range doc["snapshots"].([]any) {
		if keep[s.(map[string]any)["snapshot-id"].(float64)] {
			snaps = append(snaps, s)
		}
	}
	doc["snapshots"] = snaps
	if raw, err = json.Marshal(doc); err != nil {
		return nil, err
	}
	meta, err := table.ParseMetadataBytes(raw)
	if err != nil {
		return nil, err
	}
	return table.New(tbl.Identifier(), meta, tbl.MetadataLocation(), tbl.FS, c), nil
}

// A catalog that leaves historical snapshots out of what it loads (a REST
// server in snapshot-loading-mode "refs") makes their files look
// unreferenced: expiry, its deletion pass and orphan cleanup refuse such a
// table, and no file of a snapshot that is still there is deleted.
func TestPartialMetadataDeletesNothing(t *testing.T) {
	s := newShared(t, "local", nil)
	ctx := t.Context()
	// The compaction's inputs stay referenced by the snapshots before it
	// (retained), which the refs-only catalog hides.
	var inputs []string
	for _, df := range s.liveDataFiles(s.a) {
		inputs = append(inputs, df.FilePath())
	}
	if r, _ := s.exec.Run(ctx, s.job(jobkind.Compact, "defaults: {target_file_size: 1MiB, small_file_count: 5}")); r.Outcome != jobs.Succeeded {
		t.Fatalf("compaction: %v %v", r.Outcome, r.Err)
	}
	dir := strings.TrimPrefix(s.load(s.a).Location(), "file://")
	ageTree(t, dir)
	partial := newTestExecutor(t, refsOnlyCatalog{s.cat}, slog.New(slog.DiscardHandler), s.met)
	tbl, err := refsOnlyCatalog{s.cat}.LoadTable(ctx, s.a)
	if err != nil {
		t.Fatal(err)
	}
	if p := scope.Partial(tbl.Metadata()); p == "" {
		t.Fatal("the stand-in catalog did not leave snapshots out")
	}

	orphans := s.job(jobkind.RemoveOrphans, orphanYAMLDelete)
	orphans.OrphanSource = jobs.OrphansFromListing
	expiry := s.job(jobkind.ExpireSnapshots, "defaults: {snapshot_max_age: 30d, retain_last: 100, min_reader_margin: 0s}")
	pass := s.job(jobkind.DeleteExpiredFiles, "defaults: {min_reader_margin: 1ms}")
	pass.PendingDeletes = []deletions.Ref{{Location: deletions.Dir(tbl.Location()) + "/0000000000001-x.json"}}
	for _, j := range []jobs.Job{orphans, expiry, pass} {
		res, _ := partial.Run(ctx, j)
		if res.Outcome != jobs.Failed || res.Err == nil || !strings.Contains(res.Err.Error(), string(scope.PartialMetadata)) {
			t.Errorf("%s: %v %v; want failed, naming partial_metadata", j.Kind, res.Outcome, res.Err)
		}
	}
	for _, p := range inputs {
		if !s.exists(p) {
			t.Errorf("%s, referenced by a snapshot the catalog left out, was deleted", p)
		}
	}
	if rows := s.contents(s.a).Total.Rows; rows != 60 {
		t.Errorf("A has %d rows, want 60", rows)
	}
}

// Another table's genuine record copied into A's directory, and a record
// too large to read: refused, left in place, nothing deleted.
func TestReplayedAndOversizedRecordsDeleteNothing(t *testing.T) {
	s := newShared(t, "local", nil)
	b := s.load(s.b)
	var victims []deletions.File
	for _, df := range s.liveDataFiles(s.b) {
		victims = append(victims, deletions.File{Path: df.FilePath(), Kind: history.Data})
	}
	// B's own record, signed with reactor's key, listing B's files: genuine
	// for B, replayed into A.
	refs, err := records(t, s.fs(), b).WriteBatch(deletions.Batch{Table: "db.b", JobID: "b-own", Due: time.Now().Add(-time.Hour), Files: victims})
	if err != nil {
		t.Fatal(err)
	}
	data := readAll(t, s.fs(), refs[0].Location)
	if err := s.fs().Remove(refs[0].Location); err != nil {
		t.Fatal(err)
	}
	aDir := deletions.Dir(s.load(s.a).Location())
	s.put(aDir+"/0000000000001-replayed.json", data)
	huge := strings.TrimPrefix(aDir+"/0000000000002-huge.json", "file://")
	if err := os.WriteFile(huge, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(huge, 1<<36); err != nil { // 64 GiB, sparse
		t.Fatal(err)
	}
	bFiles, bRows := s.files(s.b), s.contents(s.b)
	res, rep := s.pass()
	if res.Outcome != jobs.Succeeded {
		t.Fatalf("pass: %v %v", res.Outcome, res.Err)
	}
	s.untouched(bFiles, bRows)
	if r := rep.Refusals.Records; r[deletions.RefusedOtherTable] != 1 || r[deletions.RefusedTooLarge] != 1 {
		t.Errorf("records refused %v; want the replayed one (other_table) and the huge one (too_large)", r)
	}
	if left := s.recordsLeft(); len(left) != 2 {
		t.Errorf("records left %v; want both, for an operator", left)
	}
}
