package executor_test

import (
	"bytes"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	iceio "github.com/apache/iceberg-go/io"
	"github.com/google/uuid"

	"github.com/icereactor/reactor/deletions"
	"github.com/icereactor/reactor/executor"
	"github.com/icereactor/reactor/jobs"
	"github.com/icereactor/reactor/scope"
	"github.com/icereactor/reactor/streamwriter"
)

// filesOnDisk is every file under the table's data directory.
func (f *fixture) filesOnDisk() map[string]bool {
	f.t.Helper()
	out := map[string]bool{}
	if err := walk(f.load().Location()+"/data", func(p string) { out[p] = true }); err != nil {
		f.t.Fatal(err)
	}
	return out
}

func (f *fixture) outputIntents() []deletions.Ref {
	f.t.Helper()
	tbl := f.load()
	fs, err := tbl.FS(f.ctx)
	if err != nil {
		f.t.Fatal(err)
	}
	refs, err := records(f.t, fs, tbl).ListOutputIntents()
	if err != nil {
		f.t.Fatal(err)
	}
	return refs
}

// syncBuffer is a log sink the test reads after the executor wrote it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// leased is a commit guard that always allows: the executor holds the
// table's lease.
type leased struct{}

func (leased) CommitDeadline(string) (time.Time, error) { return time.Now().Add(time.Hour), nil }

// leasedExecutor is newTestExecutor holding the table's lease.
func (f *fixture) leasedExecutor(log *slog.Logger) *executor.Executor {
	e := newTestExecutor(f.t, f.cat, log, f.met)
	executor.GuardCommits(e, leased{})
	return e
}

// nextOwner is a second executor on the fixture's catalog: the replica
// that takes the table over, or the process after a restart.
func (f *fixture) nextOwner() (*executor.Executor, *syncBuffer) {
	logs := &syncBuffer{}
	return f.leasedExecutor(slog.New(slog.NewTextHandler(logs, nil))), logs
}

func TestKilledRewriteOutputsAreDeletedByTheNextOwner(t *testing.T) {
	f := newFixture(t, nil)
	for range 6 {
		f.commit("a", 10)
		f.commit("b", 10)
	}
	before, live := f.contents(), f.filesOnDisk()
	killed := f.leasedExecutor(slog.New(slog.DiscardHandler))
	executor.CrashAt(killed, "before-commit")
	if res, _ := killed.Run(f.ctx, f.job("defaults: {target_file_size: 1MiB, small_file_count: 5}", "a", "b")); res.Outcome != jobs.Failed {
		t.Fatalf("killed job: %v %v, want failed", res.Outcome, res.Err)
	}
	left := f.filesOnDisk()
	var outputs []string
	for p := range left {
		if !live[p] {
			outputs = append(outputs, p)
		}
	}
	if len(outputs) == 0 || len(f.outputIntents()) != 1 {
		t.Fatalf("the killed job left %d outputs and %d intents; want the first batch's outputs and its intent", len(outputs), len(f.outputIntents()))
	}
	next, logs := f.nextOwner()
	rec, err := next.RecoverOutputs(f.ctx, ident)
	if err != nil {
		t.Fatal(err)
	}
	if rec.Deleted != len(outputs) || rec.Kept != 0 || rec.Rejected != 0 {
		t.Errorf("recovery %+v; want the %d outputs deleted, nothing kept or rejected", rec, len(outputs))
	}
	if got := f.filesOnDisk(); !maps.Equal(got, live) {
		t.Errorf("files after recovery: %d, want exactly the %d live ones", len(got), len(live))
	}
	if after := f.contents(); !reflect.DeepEqual(before, after) {
		t.Errorf("contents changed: %+v -> %+v", before.Total, after.Total)
	}
	if n := len(f.outputIntents()); n != 0 {
		t.Errorf("%d output intents left", n)
	}
	if !strings.Contains(logs.String(), "outputs of an ended job looked at") {
		t.Errorf("no recovery line in\n%s", logs)
	}
	// The table is whole: the next compaction commits.
	if res, _ := next.Run(f.ctx, f.job("defaults: {target_file_size: 1MiB, small_file_count: 5}", "a", "b")); res.Outcome != jobs.Succeeded {
		t.Fatalf("compaction after recovery: %v %v", res.Outcome, res.Err)
	}
	if after := f.contents(); !reflect.DeepEqual(before, after) {
		t.Errorf("contents after the next compaction: %+v, want %+v", after.Total, before.Total)
	}
}

func TestCommittedRewriteKeepsItsOutputsWhenItsIntentOutlivesIt(t *testing.T) {
	f := newFixture(t, nil)
	for range 6 {
		f.commit("a", 10)
	}
	before := f.contents()
	killed := f.leasedExecutor(slog.New(slog.DiscardHandler))
	executor.CrashAt(killed, "after-commit")
	killed.Run(f.ctx, f.job("defaults: {target_file_size: 1MiB, small_file_count: 5}", "a"))
	if len(f.dataFiles("a")) != 1 || len(f.outputIntents()) != 1 {
		t.Fatalf("after the commit: %d live files, %d intents; want 1 and 1", len(f.dataFiles("a")), len(f.outputIntents()))
	}
	onDisk := f.filesOnDisk()
	next, _ := f.nextOwner()
	rec, err := next.RecoverOutputs(f.ctx, ident)
	if err != nil {
		t.Fatal(err)
	}
	if rec.Deleted != 0 || rec.Kept != 1 {
		t.Errorf("recovery %+v; want the committed output kept, nothing deleted", rec)
	}
	if got := f.filesOnDisk(); !maps.Equal(got, onDisk) {
		t.Errorf("files after recovery: %d, want the %d there before", len(got), len(onDisk))
	}
	if after := f.contents(); !reflect.DeepEqual(before, after) {
		t.Errorf("contents changed: %+v -> %+v", before.Total, after.Total)
	}
	if n := len(f.outputIntents()); n != 0 {
		t.Errorf("%d output intents left", n)
	}
}

func TestRunningJobsOutputsAreNeverRecovered(t *testing.T) {
	f := newFixture(t, nil)
	for range 6 {
		f.commit("a", 10)
	}
	before := f.contents()
	var rec executor.OutputRecovery
	var recErr error
	e := f.leasedExecutor(slog.New(slog.DiscardHandler))
	executor.AtCrashPoint(e, func(point string) {
		if point == "before-commit" {
			// The same process looks at the table while its job runs.
			rec, recErr = e.RecoverOutputs(f.ctx, ident)
		}
	})
	if res, _ := e.Run(f.ctx, f.job("defaults: {target_file_size: 1MiB, small_file_count: 5}", "a")); res.Outcome != jobs.Succeeded {
		t.Fatalf("compaction: %v %v", res.Outcome, res.Err)
	}
	if recErr != nil || rec.Intents != 1 || rec.Deleted != 0 {
		t.Errorf("a look during the job: %+v %v; want its intent seen and nothing deleted", rec, recErr)
	}
	if after := f.contents(); !reflect.DeepEqual(before, after) || len(f.dataFiles("a")) != 1 {
		t.Errorf("contents %+v, %d files; want %+v in one file", after.Total, len(f.dataFiles("a")), before.Total)
	}
	if n := len(f.outputIntents()); n != 0 {
		t.Errorf("%d output intents left after the commit", n)
	}
}

func TestForgedOutputIntentsDeleteNothing(t *testing.T) {
	f := newFixture(t, nil)
	for range 3 {
		f.commit("a", 10)
	}
	before, onDisk := f.contents(), f.filesOnDisk()
	tbl := f.load()
	fs, err := tbl.FS(f.ctx)
	if err != nil {
		t.Fatal(err)
	}
	outside := filepath.Join(t.TempDir(), "precious.parquet")
	if err := os.WriteFile(outside, []byte("not the table's"), 0o644); err != nil {
		t.Fatal(err)
	}
	liveFile := slices.Sorted(maps.Keys(f.dataFiles("a")))[0]
	data := tbl.Location() + "/data"
	write := func(in deletions.OutputIntent) {
		t.Helper()
		if _, err := records(t, fs, tbl).WriteOutputIntent(in); err != nil {
			t.Fatal(err)
		}
	}
	write(deletions.OutputIntent{JobID: "outside", Leased: true, Token: uuid.NewString(), Dirs: []string{data}, Planned: []string{"file://" + outside}})
	write(deletions.OutputIntent{JobID: "outside-dir", Leased: true, Token: uuid.NewString(), Dirs: []string{"file://" + filepath.Dir(outside)}})
	write(deletions.OutputIntent{JobID: "dotdot", Leased: true, Token: uuid.NewString(), Dirs: []string{data + "/../../.."}})
	// A token every name matches.
	write(deletions.OutputIntent{JobID: "wildcard", Leased: true, Token: "parquet", Dirs: []string{data}})
	// A live file named as an output: checked against the history, kept.
	write(deletions.OutputIntent{JobID: "live", Leased: true, Token: uuid.NewString(), Dirs: []string{data}, Planned: []string{liveFile}})
	if err := fs.(iceio.WriteFileIO).WriteFile(deletions.Dir(tbl.Location())+"/outputs-garbled.json", []byte(`{"job_id": "x", "dirs": [`)); err != nil {
		t.Fatal(err)
	}
	next, logs := f.nextOwner()
	rec, err := next.RecoverOutputs(f.ctx, ident)
	if err != nil {
		t.Fatal(err)
	}
	// Signed with reactor's key but naming what is not the table's: the
	// rule refuses each file. The garbled one is not reactor's record at
	// all: refused and left for an operator.
	if rec.Intents != 6 || rec.Rejected != 2 || rec.Deleted != 0 || rec.Kept != 1 {
		t.Errorf("recovery %+v; want 6 intents, 2 rejected (a token that is no uuid, an unsigned record), the live file kept, nothing deleted", rec)
	}
	if r := rec.Refusals; r.ByRule[scope.OutsideTable] != 2 || r.ByRule[scope.NotCanonical] != 1 || r.Records[deletions.RefusedMalformed] != 1 {
		t.Errorf("refusals %+v; want 2 outside_table, 1 not_canonical, 1 malformed record", r)
	}
	if _, err := os.Stat(outside); err != nil {
		t.Errorf("the file outside the table: %v", err)
	}
	if got := f.filesOnDisk(); !maps.Equal(got, onDisk) {
		t.Errorf("files after recovery: %d, want the %d there before", len(got), len(onDisk))
	}
	if after := f.contents(); !reflect.DeepEqual(before, after) {
		t.Errorf("contents changed: %+v -> %+v", before.Total, after.Total)
	}
	out := logs.String()
	for _, want := range []string{"deletion refused", `not a uuid`, "reactor record refused", "kept"} {
		if !strings.Contains(out, want) {
			t.Errorf("no log line saying %q in\n%s", want, out)
		}
	}
	if refs := f.outputIntents(); len(refs) != 1 || !strings.HasSuffix(refs[0].Location, "outputs-garbled.json") {
		t.Errorf("output intents left: %v; want only the garbled one, for an operator", refs)
	}
}

func TestKilledPositionDeleteRewriteOutputsAreDeleted(t *testing.T) {
	f := newFixture(t, streamwriter.MergeOnReadProperties)
	for range 3 {
		f.commit("a", 10) // ids 1..30
	}
	for _, id := range []int64{2, 12, 22, 5, 15, 25} {
		pdmDelete(t, f, id)
	}
	before, live := f.contents(), f.filesOnDisk()
	killed := f.leasedExecutor(slog.New(slog.DiscardHandler))
	executor.CrashAt(killed, "before-commit")
	if res, _ := killed.Run(f.ctx, pdmJob(f, "defaults: {delete_min_input_files: 5}", "a")); res.Outcome != jobs.Failed {
		t.Fatalf("killed job: %v %v, want failed", res.Outcome, res.Err)
	}
	merged := pdmMergedOnDisk(t, f)
	if len(merged) == 0 || len(f.outputIntents()) != 1 {
		t.Fatalf("the killed job left %d merged files and %d intents; want some and one", len(merged), len(f.outputIntents()))
	}
	next, _ := f.nextOwner()
	rec, err := next.RecoverOutputs(f.ctx, ident)
	if err != nil {
		t.Fatal(err)
	}
	if rec.Deleted != len(merged) || rec.Kept != 0 {
		t.Errorf("recovery %+v; want the %d merged files deleted", rec, len(merged))
	}
	if got := f.filesOnDisk(); !maps.Equal(got, live) {
		t.Errorf("files after recovery: %d, want exactly the %d live ones", len(got), len(live))
	}
	if after := f.contents(); !reflect.DeepEqual(before, after) {
		t.Errorf("contents changed: %+v -> %+v", before.Total, after.Total)
	}
}

// A job without a lease (a one-shot command) may still be running beside
// the replica that owns the table: its intent and outputs are left alone.
func TestUnleasedJobsOutputsAreLeftAlone(t *testing.T) {
	f := newFixture(t, nil)
	for range 6 {
		f.commit("a", 10)
	}
	oneShot := newTestExecutor(t, f.cat, slog.New(slog.DiscardHandler), f.met)
	executor.CrashAt(oneShot, "before-commit")
	oneShot.Run(f.ctx, f.job("defaults: {target_file_size: 1MiB, small_file_count: 5}", "a"))
	onDisk := f.filesOnDisk()
	next, _ := f.nextOwner()
	rec, err := next.RecoverOutputs(f.ctx, ident)
	if err != nil || rec.Deleted != 0 {
		t.Fatalf("recovery %+v %v; want nothing deleted", rec, err)
	}
	if got := f.filesOnDisk(); !maps.Equal(got, onDisk) || len(f.outputIntents()) != 1 {
		t.Errorf("files %d (want %d), intents %d (want 1)", len(got), len(onDisk), len(f.outputIntents()))
	}
}

// The next owner's look is the first step of its next rewrite: no explicit
// call needed.
func TestNextRewriteDeletesAKilledJobsOutputsFirst(t *testing.T) {
	f := newFixture(t, nil)
	for range 6 {
		f.commit("a", 10)
	}
	before, live := f.contents(), f.filesOnDisk()
	yaml := "defaults: {target_file_size: 1MiB, small_file_count: 5}"
	killed := f.leasedExecutor(slog.New(slog.DiscardHandler))
	executor.CrashAt(killed, "before-commit")
	killed.Run(f.ctx, f.job(yaml, "a"))
	var outputs []string
	for p := range f.filesOnDisk() {
		if !live[p] {
			outputs = append(outputs, p)
		}
	}
	next, logs := f.nextOwner()
	if res, _ := next.Run(f.ctx, f.job(yaml, "a")); res.Outcome != jobs.Succeeded {
		t.Fatalf("next compaction: %v %v", res.Outcome, res.Err)
	}
	for _, p := range outputs {
		if _, err := os.Stat(p); !os.IsNotExist(err) {
			t.Errorf("the killed job's output %s is still there (%v)", p, err)
		}
	}
	if len(outputs) == 0 || !strings.Contains(logs.String(), "outputs of an ended job looked at") {
		t.Errorf("%d outputs; no recovery line in\n%s", len(outputs), logs)
	}
	if after := f.contents(); !reflect.DeepEqual(before, after) || len(f.outputIntents()) != 0 {
		t.Errorf("contents %+v (want %+v), %d intents", after.Total, before.Total, len(f.outputIntents()))
	}
}
