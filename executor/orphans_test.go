package executor_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/icereactor/reactor/executor"
	"github.com/icereactor/reactor/jobkind"
	"github.com/icereactor/reactor/jobs"
)

const orphanYAML = "defaults: {orphan_margin: 1h, orphan_margin_floor: 1h, orphan_delete: %s}"

func (f *fixture) orphanJob(del bool, source string, cands ...jobs.OrphanCandidate) jobs.Job {
	yaml := strings.Replace(orphanYAML, "%s", map[bool]string{true: "true", false: "false"}[del], 1)
	j := f.job(yaml)
	j.Kind = jobkind.RemoveOrphans
	j.OrphanSource = source
	j.OrphanCandidates = cands
	return j
}

// ageTree makes every file under dir look written two hours ago, so only
// being referenced protects a file from the 1h margin.
func ageTree(t testing.TB, dir string) {
	t.Helper()
	old := time.Now().Add(-2 * time.Hour)
	err := filepath.Walk(dir, func(p string, info os.FileInfo, err error) error {
		if err != nil || info.IsDir() {
			return err
		}
		return os.Chtimes(p, old, old)
	})
	if err != nil {
		t.Fatal(err)
	}
}

func writeFile(t testing.TB, path string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte("leftover of a failed write"), 0o644); err != nil {
		t.Fatal(err)
	}
}

// Full listing: a failed write's data file and a metadata file that fell out
// of the metadata log are orphans; an in-flight writer's fresh file and every
// referenced file are not. The dry run reports exactly what the real run
// then deletes.
func TestOrphanListingDryRunThenDelete(t *testing.T) {
	f := newFixture(t, nil)
	for range 3 {
		f.commit("a", 10)
	}
	dir := strings.TrimPrefix(f.load().Location(), "file://")
	strayData := filepath.Join(dir, "data", "category=a", "00000-9-failed-write.parquet")
	strayMeta := filepath.Join(dir, "metadata", "00000-fell-out-of-the-log.metadata.json")
	writeFile(t, strayData)
	writeFile(t, strayMeta)
	// Hidden files are not orphans (Spark's remove_orphan_files skips
	// them too): a Hadoop checksum sidecar and a failed job's _temporary.
	hidden := []string{
		filepath.Join(dir, "data", "category=a", ".00000-9-failed-write.parquet.crc"),
		filepath.Join(dir, "data", "_temporary", "0", "part-00000.parquet"),
	}
	for _, h := range hidden {
		writeFile(t, h)
	}
	ageTree(t, dir)
	// A name a store might resolve to another object ('?' starts a query
	// for some clients): listed, old, unreferenced, and still refused.
	oddName := filepath.Join(dir, "data", "category=a", "odd?name.parquet")
	writeFile(t, oddName)
	ageTree(t, dir)
	inFlight := filepath.Join(dir, "data", "category=a", "00000-9-being-written.parquet")
	writeFile(t, inFlight) // fresh: younger than the margin
	rows := f.contents().Total

	res, rep := f.exec.Run(f.ctx, f.orphanJob(false, jobs.OrphansFromListing))
	if res.Outcome != jobs.Succeeded || !rep.Orphans.DryRun || rep.Orphans.DeletedFiles != 0 {
		t.Fatalf("dry run: %v %v %+v", res.Outcome, res.Err, rep.Orphans)
	}
	var reported []string
	for _, o := range rep.Orphans.Orphans {
		reported = append(reported, strings.TrimPrefix(o.Location, "file://"))
	}
	slices.Sort(reported)
	want := []string{strayData, strayMeta}
	slices.Sort(want)
	if !slices.Equal(reported, want) {
		t.Fatalf("dry run reported %v, want %v", reported, want)
	}
	for _, p := range append(want, inFlight) {
		if !fileExists(t, p) {
			t.Fatalf("dry run deleted %s", p)
		}
	}

	res, rep = f.exec.Run(f.ctx, f.orphanJob(true, jobs.OrphansFromListing))
	if res.Outcome != jobs.Succeeded || rep.Orphans.DeletedFiles != 2 {
		t.Fatalf("real run: %v %v %+v", res.Outcome, res.Err, rep.Orphans)
	}
	var deleted []string
	for _, o := range rep.Orphans.Orphans {
		deleted = append(deleted, strings.TrimPrefix(o.Location, "file://"))
	}
	slices.Sort(deleted)
	if !slices.Equal(deleted, reported) {
		t.Errorf("deleted %v, dry run reported %v", deleted, reported)
	}
	if fileExists(t, strayData) || fileExists(t, strayMeta) || !fileExists(t, inFlight) {
		t.Errorf("after cleanup: stray data %v, stray metadata %v, in-flight %v (want false false true)",
			fileExists(t, strayData), fileExists(t, strayMeta), fileExists(t, inFlight))
	}
	if got := f.contents().Total; got != rows {
		t.Errorf("rows %v after cleanup, %v before", got, rows)
	}
	for _, h := range hidden {
		if !fileExists(t, h) {
			t.Errorf("hidden file %s was deleted", h)
		}
	}
	if !fileExists(t, oddName) || rep.Orphans.RefusedFiles != 1 || len(rep.Orphans.Refused) != 1 ||
		rep.Orphans.Refused[0].Reason != executor.RefusedNotCanonical {
		t.Errorf("odd name exists %v; refusals %d %+v (want it refused as not canonical)", fileExists(t, oddName),
			rep.Orphans.RefusedFiles, rep.Orphans.Refused)
	}
	if n := testutil.ToFloat64(f.met.OrphansRefused.WithLabelValues("db.events", executor.RefusedNotCanonical)); n != 2 {
		t.Errorf("reactor_orphans_refused_total{reason=not_canonical} = %v, want 2 (dry run and real run)", n)
	}
}

// Tracked candidates (from bucket notifications) only nominate: the
// object store's own LastModified and the table's history, read right
// before each delete, decide. A referenced file is never deleted, only
// untracked; a file the notification called old but the store calls fresh
// is kept and deferred to its real age; a candidate spelled another way
// than its canonical location, or outside the data location, is refused,
// counted and kept.
func TestTrackedOrphansAreVerifiedBeforeDeletion(t *testing.T) {
	f := newFixture(t, nil)
	for range 2 {
		f.commit("a", 10)
	}
	dir := strings.TrimPrefix(f.load().Location(), "file://")
	stray := filepath.Join(dir, "data", "category=a", "stray.parquet")
	writeFile(t, stray)
	var live string
	for loc := range f.dataFiles("a") {
		live = loc
	}
	meta := strings.TrimPrefix(f.load().MetadataLocation(), "file://")
	ageTree(t, dir)
	inFlight := filepath.Join(dir, "data", "category=a", "in-flight.parquet")
	writeFile(t, inFlight) // written just now; the notification lies about its age
	liveDoubled := strings.Replace(live, "/data/", "/data//", 1)
	forged := time.Now().Add(-1000 * time.Hour)
	cands := []jobs.OrphanCandidate{
		{Location: "file://" + stray, Size: 26, Created: forged},
		{Location: live, Size: 1, Created: forged},
		{Location: "file://" + inFlight, Size: 26, Created: forged},
		{Location: liveDoubled, Size: 1, Created: forged},
		{Location: meta, Size: 1, Created: forged},
	}
	rows := f.contents().Total
	res, rep := f.exec.Run(f.ctx, f.orphanJob(true, jobs.OrphansFromTracking, cands...))
	if res.Outcome != jobs.Succeeded || rep.Orphans.DeletedFiles != 1 || rep.Orphans.StillReferenced != 1 ||
		rep.Orphans.TooYoung != 1 || rep.Orphans.RefusedFiles != 2 {
		t.Fatalf("%v %v %+v", res.Outcome, res.Err, rep.Orphans)
	}
	if fileExists(t, stray) || !fileExists(t, live) || !fileExists(t, inFlight) || !fileExists(t, meta) {
		t.Errorf("stray exists %v (want false), live %v, in-flight %v, metadata %v (want true)",
			fileExists(t, stray), fileExists(t, live), fileExists(t, inFlight), fileExists(t, meta))
	}
	if got := f.contents().Total; got != rows {
		t.Errorf("rows %v after cleanup, %v before", got, rows)
	}
	// Deleted, referenced and refused-for-good are settled; the young
	// file stays tracked from the store's LastModified.
	if len(res.Settled) != 4 || slices.Contains(res.Settled, "file://"+inFlight) {
		t.Errorf("settled %v, want every candidate but the in-flight file", res.Settled)
	}
	info, err := os.Stat(inFlight)
	if err != nil {
		t.Fatal(err)
	}
	if got, ok := res.Deferred["file://"+inFlight]; !ok || !got.Equal(info.ModTime()) {
		t.Errorf("deferred %v, want the in-flight file at its modification time %v", res.Deferred, info.ModTime())
	}
	reasons := map[string]string{}
	for _, r := range rep.Orphans.Refused {
		reasons[r.Location] = r.Reason
	}
	if reasons[liveDoubled] != executor.RefusedNotCanonical || reasons[meta] != executor.RefusedOutsideData {
		t.Errorf("refusals %v", reasons)
	}
	for _, reason := range []string{executor.RefusedNotCanonical, executor.RefusedOutsideData} {
		if n := testutil.ToFloat64(f.met.OrphansRefused.WithLabelValues("db.events", reason)); n != 1 {
			t.Errorf("reactor_orphans_refused_total{reason=%q} = %v, want 1", reason, n)
		}
	}
}

// The reference check is re-read from the catalog right before a delete:
// an old file nobody referenced when the job started, which a commit made
// meanwhile adds to the table (Spark's add_files importing a file already
// under data/), is kept, and the table stays readable.
func TestOrphanReferencesAreReReadBeforeDeleting(t *testing.T) {
	f := newFixture(t, nil)
	f.commit("a", 10)
	dir := strings.TrimPrefix(f.load().Location(), "file://")
	var live string
	for loc := range f.dataFiles("a") {
		live = strings.TrimPrefix(loc, "file://")
	}
	imported := filepath.Join(dir, "data", "category=a", "imported-by-add-files.parquet")
	data, err := os.ReadFile(live)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(imported, data, 0o644); err != nil {
		t.Fatal(err)
	}
	ageTree(t, dir)
	rows := f.contents().Total
	executor.ReReadReferencesBeforeEveryDelete(f.exec)
	// The job's first load reads the history without the file; before the
	// next (the re-read before the delete) a writer commits it.
	f.icat.beforeLoad = func(n int) {
		if n != 2 {
			return
		}
		tx := f.load().NewTransaction()
		if err := tx.AddFiles(f.ctx, []string{"file://" + imported}, nil, false); err != nil {
			t.Error(err)
			return
		}
		if _, err := tx.Commit(f.ctx); err != nil {
			t.Error(err)
		}
	}
	cands := []jobs.OrphanCandidate{{Location: "file://" + imported, Created: time.Now().Add(-2 * time.Hour)}}
	res, rep := f.exec.Run(f.ctx, f.orphanJob(true, jobs.OrphansFromTracking, cands...))
	if res.Outcome == jobs.Failed || rep.Orphans.DeletedFiles != 0 || rep.Orphans.StillReferenced != 1 || !fileExists(t, imported) {
		t.Fatalf("%v %v %+v; imported file exists: %v", res.Outcome, res.Err, rep.Orphans, fileExists(t, imported))
	}
	if got := f.contents().Total.Rows; got != 2*rows.Rows {
		t.Errorf("table reads %d rows, want the %d written plus the %d imported", got, rows.Rows, rows.Rows)
	}
}
