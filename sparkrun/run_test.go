package sparkrun

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"
	"github.com/apache/spark-connect-go/spark/sparkerrors"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"google.golang.org/grpc/codes"

	"github.com/icereactor/reactor/embedded"
	"github.com/icereactor/reactor/executor"
	"github.com/icereactor/reactor/jobkind"
	"github.com/icereactor/reactor/jobs"
	"github.com/icereactor/reactor/metrics"
	"github.com/icereactor/reactor/planner"
	"github.com/icereactor/reactor/sparkcall"
	"github.com/icereactor/reactor/streamwriter"
	"github.com/icereactor/reactor/thresholds"
)

// fakeSpark stands in for a Spark Connect server, which cannot run in go
// test (interop/run runs the real one). Its statements run reactor's own
// executor on the same SQLite catalog, so what "Spark" commits is a real
// Iceberg replace snapshot with real result counts; block, fail and
// interrupt let a test choose how a statement ends.
type fakeSpark struct {
	t    *testing.T
	cat  catalog.Catalog
	job  jobs.Job
	exec *executor.Executor

	dialErr error
	// block makes Exec wait until interrupted (or its context ends);
	// lostAfter makes it fail as a broken connection.
	block     bool
	execErr   error
	interrupt func(n int) ([]string, bool, error)

	mu          sync.Mutex
	statements  []string
	interrupts  int
	execEnded   bool
	closed      bool
	interrupted chan struct{}
}

func (f *fakeSpark) dial(_ context.Context, set thresholds.SparkSettings, catalog, tag string) (Session, error) {
	if f.dialErr != nil {
		return nil, f.dialErr
	}
	if catalog != "lake" || tag != Tag(f.job) {
		f.t.Errorf("dialled catalog %q tag %q", catalog, tag)
	}
	f.interrupted = make(chan struct{})
	return f, nil
}

func (f *fakeSpark) Exec(ctx context.Context, statement string) ([]string, [][]any, error) {
	f.mu.Lock()
	f.statements = append(f.statements, statement)
	f.mu.Unlock()
	defer func() {
		f.mu.Lock()
		f.execEnded = true
		f.mu.Unlock()
	}()
	if f.block {
		select {
		case <-f.interrupted:
			return nil, nil, errors.New("[OPERATION_CANCELED] operation was interrupted")
		case <-ctx.Done():
			return nil, nil, ctx.Err()
		}
	}
	if f.execErr != nil {
		return nil, nil, f.execErr
	}
	res, rep := f.exec.Run(ctx, f.job)
	if res.Outcome != jobs.Succeeded && res.Outcome != jobs.Noop {
		return nil, nil, fmt.Errorf("spark side failed: %v", res.Err)
	}
	row := []any{int32(rep.RewrittenDataFiles), int32(rep.AddedDataFiles), rep.RewrittenBytes, int32(rep.FailedDataFiles), int32(rep.RemovedDeleteFiles)}
	return sparkcall.ResultColumns(sparkcall.RewriteDataFiles), [][]any{row}, nil
}

func (f *fakeSpark) Interrupt(context.Context) ([]string, bool, error) {
	f.mu.Lock()
	f.interrupts++
	n := f.interrupts
	f.mu.Unlock()
	if f.interrupt != nil {
		return f.interrupt(n)
	}
	select {
	case <-f.interrupted:
	default:
		close(f.interrupted)
	}
	return []string{"op-1"}, false, nil
}

func (f *fakeSpark) Close() {
	f.mu.Lock()
	f.closed = true
	f.mu.Unlock()
}

type runFixture struct {
	t      *testing.T
	cat    catalog.Catalog
	spark  *fakeSpark
	runner *Runner
	met    *metrics.Metrics
	job    jobs.Job
}

var testIdent = table.Identifier{"db", "events"}

// newRunFixture creates a table with 2 partitions of 6 small files each
// and a compaction job for it, and a Runner whose Spark is fakeSpark.
func newRunFixture(t *testing.T, sparkDoc string) *runFixture {
	t.Helper()
	ctx := t.Context()
	cat, err := embedded.OpenCatalog(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := streamwriter.CreateTable(ctx, cat, testIdent, nil); err != nil {
		t.Fatal(err)
	}
	w := streamwriter.New(cat, testIdent, nil)
	for i := range 12 {
		if _, err := w.Commit(ctx, []string{"a", "b"}[i%2], 20); err != nil {
			t.Fatal(err)
		}
	}
	cfg, err := thresholds.Parse([]byte("defaults: {target_file_size: 1MiB, min_input_files: 2, small_file_count: 2}\n" + sparkDoc))
	if err != nil {
		t.Fatal(err)
	}
	tbl, err := cat.LoadTable(ctx, testIdent)
	if err != nil {
		t.Fatal(err)
	}
	job, err := planner.ManualJob(ctx, tbl, cfg, jobkind.Compact, planner.ManualOptions{}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	job.InputFiles, job.InputBytes = 12, 12*4096
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	met := metrics.New()
	f := &runFixture{t: t, cat: cat, met: met, job: job}
	exec, err := executor.New(executor.Options{Catalog: cat, Logger: log, Metrics: metrics.New()})
	if err != nil {
		t.Fatal(err)
	}
	f.spark = &fakeSpark{t: t, cat: cat, job: job, exec: exec}
	f.runner = New(Options{Catalog: cat, CatalogName: "lake", Config: cfg, Logger: log, Metrics: met, Dial: f.spark.dial,
		interruptEvery: time.Millisecond})
	return f
}

func (f *runFixture) run() (jobs.Result, executor.Report, bool, bool) {
	started := false
	res, rep, local := f.runner.Run(f.t.Context(), f.job, func() { started = true })
	return res, rep, local, started
}

func (f *runFixture) dataFiles() int {
	tbl, err := f.cat.LoadTable(f.t.Context(), testIdent)
	if err != nil {
		f.t.Fatal(err)
	}
	tasks, err := tbl.Scan().PlanFiles(f.t.Context())
	if err != nil {
		f.t.Fatal(err)
	}
	return len(tasks)
}

// TestRunMapsSparkResults: a job Spark ran reports Spark's counts, with
// backend spark, the snapshot Spark committed and the committed table for
// the planner, and the rendered statement is what ran.
func TestRunMapsSparkResults(t *testing.T) {
	f := newRunFixture(t, "spark: {endpoint: 'sc://spark:15002', catalog: lake, rules: [{}]}")
	res, rep, local, started := f.run()
	if local || !started {
		t.Fatalf("local %v, started %v", local, started)
	}
	if res.Outcome != jobs.Succeeded || res.Err != nil {
		t.Fatalf("outcome %s: %v", res.Outcome, res.Err)
	}
	if rep.Backend != executor.BackendSpark || rep.RewrittenDataFiles != 12 || rep.AddedDataFiles != 2 || rep.RewrittenBytes <= 0 {
		t.Fatalf("report = %+v", rep)
	}
	if rep.Commits < 1 || rep.CommittedSnapshotID == 0 || res.Table == nil || res.Table.CurrentSnapshot().SnapshotID != rep.CommittedSnapshotID {
		t.Fatalf("commits %d, committed %d, table %v", rep.Commits, rep.CommittedSnapshotID, res.Table != nil)
	}
	if len(res.OwnSnapshots) != rep.Commits || res.OwnSnapshots[0] != rep.CommittedSnapshotID {
		t.Fatalf("own snapshots %v for %d commits, committed %d", res.OwnSnapshots, rep.Commits, rep.CommittedSnapshotID)
	}
	if n := f.dataFiles(); n != 2 {
		t.Fatalf("%d data files after the job, want 2", n)
	}
	if len(f.spark.statements) != 1 || !strings.HasPrefix(f.spark.statements[0], "CALL `lake`.system.rewrite_data_files(table => '`lake`.`db`.`events`'") {
		t.Fatalf("statements = %q", f.spark.statements)
	}
	if !f.spark.closed {
		t.Error("the session was not released")
	}
	got := rep.CountMap(jobkind.Compact)
	if got["rewritten_data_files_count"] != 12 || got["added_data_files_count"] != 2 {
		t.Errorf("event counts = %v", got)
	}
}

// TestRunNotExpressibleStaysLocal: a job sparkcall refuses never reaches
// Spark.
func TestRunNotExpressibleStaysLocal(t *testing.T) {
	f := newRunFixture(t, "spark: {endpoint: 'sc://spark:15002', catalog: lake, rules: [{}]}")
	f.job.DryRun = true
	res, _, local, started := f.run()
	if !local || started || len(f.spark.statements) != 0 {
		t.Fatalf("local %v, started %v, statements %q, result %+v", local, started, f.spark.statements, res)
	}
}

// TestRunUnreachable: Spark not reachable before the statement is sent.
// on_failure retry fails the job (the planner retries it on Spark);
// on_failure local runs it here when it is within the local bounds, and
// fails it when it is not: never both.
func TestRunUnreachable(t *testing.T) {
	unreachable := fmt.Errorf("reach Spark Connect: %w", sparkerrors.WithType(errors.New("connection refused"), sparkerrors.ConnectionError))
	for _, tc := range []struct {
		name    string
		doc     string
		local   bool
		outcome jobs.Outcome
	}{
		{"retry", "spark: {endpoint: 'sc://spark:15002', catalog: lake, rules: [{}]}", false, jobs.Failed},
		{"local within bounds", "spark: {endpoint: 'sc://spark:15002', catalog: lake, on_failure: local, local_max_input_files: 100, rules: [{}]}", true, 0},
		{"local too big", "spark: {endpoint: 'sc://spark:15002', catalog: lake, on_failure: local, local_max_input_files: 5, rules: [{}]}", false, jobs.Failed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newRunFixture(t, tc.doc)
			f.spark.dialErr = unreachable
			res, _, local, started := f.run()
			if started || local != tc.local {
				t.Fatalf("started %v, local %v, want local %v", started, local, tc.local)
			}
			if !local && (res.Outcome != tc.outcome || !strings.Contains(fmt.Sprint(res.Err), "connection refused")) {
				t.Fatalf("outcome %s: %v", res.Outcome, res.Err)
			}
			if n := f.dataFiles(); n != 12 {
				t.Fatalf("%d data files, want the 12 untouched", n)
			}
		})
	}
}

// TestRunTimeoutInterrupts: a statement still running at the timeout is
// interrupted through Spark Connect, and Run returns only after Spark
// ended it; the job fails and is never run locally.
func TestRunTimeoutInterrupts(t *testing.T) {
	f := newRunFixture(t, "spark: {endpoint: 'sc://spark:15002', catalog: lake, timeout: 1ms, interrupt_grace: 1m, on_failure: local, local_max_input_files: 100, rules: [{}]}")
	f.spark.block = true
	res, rep, local, _ := f.run()
	if local || res.Outcome != jobs.Failed || !strings.Contains(fmt.Sprint(res.Err), "interrupted (timeout)") {
		t.Fatalf("local %v, outcome %s: %v", local, res.Outcome, res.Err)
	}
	f.spark.mu.Lock()
	defer f.spark.mu.Unlock()
	if f.spark.interrupts < 1 || !f.spark.execEnded {
		t.Fatalf("interrupts %d, statement ended %v: Run returned before Spark ended the statement", f.spark.interrupts, f.spark.execEnded)
	}
	if rep.Backend != executor.BackendSpark || res.Table != nil {
		t.Fatalf("report %+v, table %v", rep, res.Table != nil)
	}
}

// TestRunShutdownInterrupts: reactor stopping interrupts its Spark jobs
// too, so a restarted reactor cannot start a second job on the table.
func TestRunShutdownInterrupts(t *testing.T) {
	f := newRunFixture(t, "spark: {endpoint: 'sc://spark:15002', catalog: lake, rules: [{}]}")
	f.spark.block = true
	ctx, cancel := context.WithCancel(t.Context())
	var once sync.Once
	f.spark.interrupt = func(int) ([]string, bool, error) {
		// The runner interrupts until Spark confirms: maybe more than once.
		once.Do(func() { close(f.spark.interrupted) })
		return []string{"op-1"}, false, nil
	}
	done := make(chan jobs.Result)
	go func() {
		res, _, _ := f.runner.Run(ctx, f.job, func() { cancel() })
		done <- res
	}()
	var res jobs.Result
	select {
	case res = <-done:
	case <-time.After(time.Minute):
		t.Fatal("timed out after 1m waiting for the shut-down job to end")
	}
	if res.Outcome != jobs.Failed || !strings.Contains(fmt.Sprint(res.Err), "interrupted (shutdown)") {
		t.Fatalf("outcome %s: %v", res.Outcome, res.Err)
	}
}

// TestRunLostConnection: the connection breaks mid-statement. reactor
// interrupts until Spark answers; a confirmed end fails the job (retried
// later), and with Spark silent through interrupt_grace the end is
// unconfirmed: the job fails, is never run locally, and the metric says so.
func TestRunLostConnection(t *testing.T) {
	lost := sparkerrors.WithType(fmt.Errorf("failed to execute sql: %w",
		&sparkerrors.SparkError{Code: codes.Unavailable, Message: "error reading from server: EOF"}), sparkerrors.ExecutionError)
	doc := "spark: {endpoint: 'sc://spark:15002', catalog: lake, interrupt_grace: 20ms, on_failure: local, local_max_input_files: 100, rules: [{}]}"

	t.Run("server back", func(t *testing.T) {
		f := newRunFixture(t, doc)
		f.spark.execErr = lost
		f.spark.interrupt = func(n int) ([]string, bool, error) {
			if n < 3 {
				return nil, false, errors.New("connection refused")
			}
			return nil, true, nil // a restarted server: the session is gone
		}
		res, _, local, _ := f.run()
		if local || res.Outcome != jobs.Failed || !strings.Contains(fmt.Sprint(res.Err), "connection lost") {
			t.Fatalf("local %v, outcome %s: %v", local, res.Outcome, res.Err)
		}
	})
	t.Run("server gone", func(t *testing.T) {
		f := newRunFixture(t, doc)
		f.spark.execErr = lost
		f.spark.interrupt = func(int) ([]string, bool, error) { return nil, false, errors.New("connection refused") }
		res, _, local, _ := f.run()
		if local || res.Outcome != jobs.Failed || !strings.Contains(fmt.Sprint(res.Err), "not confirmed") {
			t.Fatalf("local %v, outcome %s: %v", local, res.Outcome, res.Err)
		}
		if n := testutil.ToFloat64(f.met.SparkUnconfirmed); n != 1 {
			t.Fatalf("reactor_spark_unconfirmed_total = %v", n)
		}
	})
}

// TestRunConflict: Spark failing the statement on a commit conflict is
// recorded as one (gave_up, conflicts counted), and not run locally.
func TestRunConflict(t *testing.T) {
	f := newRunFixture(t, "spark: {endpoint: 'sc://spark:15002', catalog: lake, on_failure: local, local_max_input_files: 100, rules: [{}]}")
	f.spark.execErr = sparkerrors.WithType(&sparkerrors.SparkError{Code: codes.Internal,
		Message: "org.apache.iceberg.exceptions.ValidationException: Cannot commit, found new delete for replaced data file"}, sparkerrors.ExecutionError)
	res, rep, local, _ := f.run()
	if local || res.Outcome != jobs.GaveUp || rep.Conflicts != 1 {
		t.Fatalf("local %v, outcome %s, conflicts %d: %v", local, res.Outcome, rep.Conflicts, res.Err)
	}
}

// TestRunSparkFailureFallsBackLocally: Spark's own verdict on a statement
// (the operation is over) lets on_failure local run the job here.
func TestRunSparkFailureFallsBackLocally(t *testing.T) {
	f := newRunFixture(t, "spark: {endpoint: 'sc://spark:15002', catalog: lake, on_failure: local, local_max_input_files: 100, rules: [{}]}")
	f.spark.execErr = sparkerrors.WithType(&sparkerrors.SparkError{Code: codes.Internal, ErrorClass: "TABLE_OR_VIEW_NOT_FOUND",
		SqlState: "42P01", Message: "The table cannot be found"}, sparkerrors.ExecutionError)
	_, _, local, started := f.run()
	if !local || !started {
		t.Fatalf("local %v, started %v", local, started)
	}
}

// TestRunStopInterrupts: Stop (reactor's SIGTERM) interrupts a running
// statement at once, without waiting for the shutdown grace period.
func TestRunStopInterrupts(t *testing.T) {
	f := newRunFixture(t, "spark: {endpoint: 'sc://spark:15002', catalog: lake, rules: [{}]}")
	f.spark.block = true
	res, _, local := f.runner.Run(t.Context(), f.job, f.runner.Stop)
	if local || res.Outcome != jobs.Failed || !strings.Contains(fmt.Sprint(res.Err), "interrupted (shutdown)") {
		t.Fatalf("local %v, outcome %s: %v", local, res.Outcome, res.Err)
	}
	if f.spark.interrupts < 1 || !f.spark.execEnded {
		t.Fatalf("interrupts %d, statement ended %v", f.spark.interrupts, f.spark.execEnded)
	}
}
