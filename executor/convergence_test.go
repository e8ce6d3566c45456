package executor_test

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"

	"github.com/icereactor/reactor/embedded"
	"github.com/icereactor/reactor/executor"
	"github.com/icereactor/reactor/jobs"
	"github.com/icereactor/reactor/planner"
	"github.com/icereactor/reactor/streamwriter"
	"github.com/icereactor/reactor/thresholds"
)

var convergenceSeeds = flag.Int("convergence.seeds", 0,
	"seeds TestConvergence runs (default 12, 4 with -short); BenchmarkConvergence runs b.N")

// maxJobsPerKind is how many jobs of one kind a partition (or, for
// table-wide kinds, the table) may take before the table settles.
const maxJobsPerKind = 3

// Convergence, as a property: on a random small table (appends, position
// and equality deletes, equality deletes of keys the table never held,
// several partitions) under random thresholds within their valid ranges,
// reactor with no writer settles within maxJobsPerKind jobs per partition
// and kind, rows and checksum exact; then neither the first reactor
// looking again nor a fresh one on the settled table schedules anything.
func TestConvergence(t *testing.T) {
	n := *convergenceSeeds
	if n == 0 {
		n = 12
		if testing.Short() {
			n = 4
		}
	}
	for seed := range uint64(n) {
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) { convergenceRun(t, seed) })
	}
}

// BenchmarkConvergence runs one random table per iteration (seeds from
// 1000 on): `go test ./executor -run '^$' -bench Convergence -benchtime 200x`.
func BenchmarkConvergence(b *testing.B) {
	for i := range b.N {
		convergenceRun(b, 1000+uint64(i))
	}
}

// convergenceTable is one random table: what was written, and the
// thresholds reactor runs with.
type convergenceTable struct {
	yaml string
	ops  []string
}

func convergenceRun(t testing.TB, seed uint64) { convergenceRunOn(t, seed, false) }

// convergenceRunOn is convergenceRun; with upgrade, the table is upgraded
// to format v3 after a random number of its writes (v3_convergence_test.go).
func convergenceRunOn(t testing.TB, seed uint64, upgrade bool) {
	ctx := t.Context()
	rng := rand.New(rand.NewPCG(seed, 18))
	cat, err := embedded.OpenCatalog(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	ident := table.Identifier{"db", "conv"}
	if _, err := streamwriter.CreateTable(ctx, cat, ident, streamwriter.MergeOnReadProperties); err != nil {
		t.Fatal(err)
	}
	w := streamwriter.New(cat, ident, nil)
	upgradeAt := -1
	if upgrade {
		upgradeAt = rng.IntN(8)
	}
	ct := writeRandomTable(t, ctx, rng, w, upgradeAt, func() error { return upgradeToV3(ctx, cat, ident) })
	cfg, err := thresholds.Parse([]byte(ct.yaml))
	if err != nil {
		t.Fatalf("random thresholds invalid: %v\n%s", err, ct.yaml)
	}
	describe := func() string {
		return fmt.Sprintf("seed %d\nthresholds:\n%s\nwrites: %s", seed, ct.yaml, strings.Join(ct.ops, ", "))
	}

	want := w.Written()
	if upgrade {
		// iceberg-go v0.7.0's v3 delete writes a data file's first
		// deletion vector without the file's v2 position deletes, which
		// by the spec's reader rule then stop applying: the table reads
		// rows the writer deleted. Reactor must keep what the table reads.
		tbl, err := cat.LoadTable(ctx, ident)
		if err != nil {
			t.Fatal(err)
		}
		before, err := streamwriter.Read(ctx, tbl)
		if err != nil {
			t.Fatal(err)
		}
		want = before.Total
	}
	first := newConvergenceReactor(t, cat, cfg)
	defer first.close()
	ran := first.runUntilQuiet(ctx, ident)
	counts := map[string]int{}
	for _, j := range ran {
		for _, key := range jobScope(j.job) {
			counts[j.job.Kind.String()+" "+key]++
		}
	}
	for scope, n := range counts {
		if n > maxJobsPerKind {
			t.Errorf("%s: %d jobs, more than %d\n%s\njobs:\n%s", scope, n, maxJobsPerKind, describe(), jobLog(ran))
		}
	}
	if tl, ok := t.(*testing.T); ok {
		tl.Logf("%d jobs until quiet:\n%s", len(ran), jobLog(ran))
	}
	tbl, err := cat.LoadTable(ctx, ident)
	if err != nil {
		t.Fatal(err)
	}
	got, err := streamwriter.Read(ctx, tbl)
	if err != nil {
		t.Fatal(err)
	}
	if got.Total != want {
		t.Fatalf("table holds %v, before reactor's jobs %v\n%s\njobs:\n%s", got.Total, want, describe(), jobLog(ran))
	}
	if upgrade {
		for _, p := range v3RuleBreaks(t, ctx, tbl) {
			t.Errorf("settled v3 table: %s\n%s\njobs:\n%s", p, describe(), jobLog(ran))
		}
	}

	// The same reactor looking again (a redelivered event) schedules
	// nothing: every kind it tried is settled or satisfied.
	if err := first.planner.Observe(ctx, tbl); err != nil {
		t.Fatal(err)
	}
	if again := first.runUntilQuiet(ctx, ident); len(again) > 0 {
		t.Errorf("second look scheduled %d jobs on a settled table\n%s\njobs:\n%s", len(again), describe(), jobLog(again))
	}

	// A fresh reactor (a restart) schedules nothing on the settled table:
	// the planner's due rules agree with what the executor would plan.
	fresh := newConvergenceReactor(t, cat, cfg)
	defer fresh.close()
	if again := fresh.runUntilQuiet(ctx, ident); len(again) > 0 {
		t.Errorf("a fresh reactor scheduled %d jobs on the settled table\n%s\njobs:\n%s", len(again), describe(), jobLog(again))
	}
}

// writeRandomTable writes 1-4 partitions with a random mix of appends,
// position deletes, equality deletes and equality deletes of keys no row
// of the partition has, and returns random valid thresholds.
//
// Before write upgradeAt (none when negative) it calls upgrade.
func writeRandomTable(t testing.TB, ctx context.Context, rng *rand.Rand, w *streamwriter.Writer, upgradeAt int, upgrade func() error) convergenceTable {
	var ct convergenceTable
	parts := 1 + rng.IntN(4)
	category := func() string { return fmt.Sprintf("p%d", rng.IntN(parts)) }
	pick := func(n int) []int64 {
		live := w.LiveIDs()
		var ids []int64
		for range min(n, len(live)) {
			ids = append(ids, live[rng.IntN(len(live))])
		}
		return ids
	}
	ops := 4 + rng.IntN(14)
	for i := 0; i < ops; i++ {
		if i == upgradeAt {
			if err := upgrade(); err != nil {
				t.Fatal(err)
			}
			ct.ops = append(ct.ops, "upgrade to v3")
		}
		var err error
		switch r := rng.IntN(10); {
		case r < 6 || i == 0:
			c, rows := category(), 1+rng.IntN(300)
			_, err = w.Commit(ctx, c, rows)
			ct.ops = append(ct.ops, fmt.Sprintf("append %s %d", c, rows))
		case r < 8:
			ids := pick(1 + rng.IntN(5))
			_, err = w.DeleteRows(ctx, ids...)
			ct.ops = append(ct.ops, fmt.Sprintf("pos-delete %v", ids))
		case r < 9:
			ids := pick(1 + rng.IntN(5))
			_, err = w.DeleteKeys(ctx, ids...)
			ct.ops = append(ct.ops, fmt.Sprintf("eq-delete %v", ids))
		default:
			// A CDC delete for a key this partition never held (maybe
			// another partition's, maybe none at all).
			c, id := category(), 1+rng.Int64N(int64(len(w.LiveIDs())+50))
			_, err = w.DeleteKeysIn(ctx, c, id)
			ct.ops = append(ct.ops, fmt.Sprintf("eq-delete-blind %s %d", c, id))
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	minInput := 1 + rng.IntN(5)
	strategy := "binpack"
	if rng.IntN(4) == 0 {
		strategy = "sort"
	}
	ct.yaml = fmt.Sprintf(`defaults:
  target_file_size: %dKiB
  small_file_ratio: %.2f
  max_file_ratio: %.2f
  min_input_files: %d
  small_file_count: %d
  tier_fan_in: %d
  delete_file_ratio: %.2f
  deleted_row_ratio: %.2f
  delete_file_threshold: %d
  delete_min_input_files: %d
  manifest_count: %d
  partial_progress_max_commits: %d
  strategy: %s
  sort_order: "id"
  sort_quiet_period: 0s
  quiet_period: 0s
  max_quiet_wait: 0s
  cooldown: 0s
  conflict_cooldown: 0s
  orphan_listing_interval: 100000h
`, 2+rng.IntN(62), 0.1+0.8*rng.Float64(), 1.1+2*rng.Float64(), minInput, minInput+rng.IntN(10), 2+rng.IntN(9),
		0.1+rng.Float64(), 0.05+0.95*rng.Float64(), 1+rng.IntN(5), 1+rng.IntN(5), 2+rng.IntN(30),
		1+rng.IntN(3), strategy)
	return ct
}

// convergenceReactor is a planner and an executor wired as the worker
// wires them, minus NATS: dispatched jobs queue, and runUntilQuiet runs
// them one by one, reporting each back through Finished.
type convergenceReactor struct {
	cat     catalog.Catalog
	planner *planner.Planner
	exec    *executor.Executor
	queue   chan jobs.Job
}

type ranJob struct {
	job jobs.Job
	res jobs.Result
	rep executor.Report
}

func newConvergenceReactor(t testing.TB, cat catalog.Catalog, cfg *thresholds.Config) *convergenceReactor {
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	if testing.Verbose() {
		log = slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelInfo}))
	}
	r := &convergenceReactor{cat: cat, queue: make(chan jobs.Job, 64), exec: newTestExecutor(t, cat, log, nil)}
	r.planner = planner.New(planner.Options{Catalog: cat, Config: cfg, Logger: log,
		Dispatch: func(j jobs.Job) { r.queue <- j }})
	return r
}

func (r *convergenceReactor) close() { r.planner.Close() }

// runUntilQuiet observes the table and runs jobs until none is queued.
// Jobs are dispatched synchronously by Observe and Finished, so an empty
// queue after Finished means the planner has nothing due.
func (r *convergenceReactor) runUntilQuiet(ctx context.Context, ident table.Identifier) []ranJob {
	var ran []ranJob
	tbl, err := r.cat.LoadTable(ctx, ident)
	if err == nil {
		_ = r.planner.Observe(ctx, tbl)
	}
	for len(ran) < 60 { // a loop shows as far more than maxJobsPerKind jobs
		select {
		case j := <-r.queue:
			res, rep := r.exec.Run(ctx, j)
			ran = append(ran, ranJob{j, res, rep})
			r.planner.Finished(ctx, j, res)
		default:
			return ran
		}
	}
	return ran
}

// jobScope is what a job's count is kept against: each of its partitions,
// or the table for table-wide kinds.
func jobScope(j jobs.Job) []string {
	if len(j.Partitions) == 0 {
		return []string{"(table)"}
	}
	return j.PartitionKeys()
}

func jobLog(ran []ranJob) string {
	var b strings.Builder
	for _, j := range ran {
		fmt.Fprintf(&b, "  %s %v %s: %s, files %d->%d, deletes removed %d, commits %d\n", j.job.Kind,
			j.job.PartitionKeys(), j.job.ReasonText(), j.res.Outcome, j.rep.RewrittenDataFiles, j.rep.AddedDataFiles,
			j.rep.RemovedDeleteFiles, j.rep.Commits)
	}
	return b.String()
}

type testWriter struct{ t testing.TB }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}
