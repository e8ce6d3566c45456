package executor_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	iceio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"

	"github.com/icereactor/reactor/deletions"
	"github.com/icereactor/reactor/embedded"
	"github.com/icereactor/reactor/executor"
	"github.com/icereactor/reactor/jobkind"
	"github.com/icereactor/reactor/jobs"
	"github.com/icereactor/reactor/metrics"
	"github.com/icereactor/reactor/streamwriter"
	"github.com/icereactor/reactor/tablename"
	"github.com/icereactor/reactor/thresholds"
)

var ident = table.Identifier{"db", "events"}

type fixture struct {
	t      testing.TB
	ctx    context.Context
	cat    catalog.Catalog
	writer *streamwriter.Writer
	met    *metrics.Metrics
	exec   *executor.Executor
	// interleave runs a real commit from another writer just before
	// reactor's next catalog commit (see interleavingCatalog).
	icat *interleavingCatalog
}

func newFixture(t testing.TB, tableProps iceberg.Properties) *fixture {
	t.Helper()
	ctx := t.Context()
	cat, err := embedded.OpenCatalog(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return newFixtureOn(t, cat, tableProps)
}

// newFixtureOn is newFixture on cat (benchStore's s3:// catalog).
func newFixtureOn(t testing.TB, cat catalog.Catalog, tableProps iceberg.Properties) *fixture {
	t.Helper()
	ctx := t.Context()
	if _, err := streamwriter.CreateTable(ctx, cat, ident, tableProps); err != nil {
		t.Fatal(err)
	}
	f := &fixture{t: t, ctx: ctx, cat: cat, met: metrics.New()}
	f.writer = streamwriter.New(cat, ident, nil)
	f.icat = &interleavingCatalog{Catalog: cat}
	level := slog.LevelWarn
	if testing.Verbose() {
		level = slog.LevelDebug
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
	f.exec = newTestExecutor(t, f.icat, log, f.met)
	return f
}

// writerEnv selects the data path every executor test runs on:
// "iceberg-go" (iceberg-go's ExecuteCompactionGroup, one group at a time,
// as before reactor's own writer) or, by default, reactor's pipelined
// writer with two units at a time and every freed buffer poisoned. .ci/run
// runs the package under both.
const writerEnv = "REACTOR_TEST_WRITER"

// recordKeys is the key every test executor signs its records with, as the
// replicas of one deployment share one: a test's next owner verifies what
// the killed one wrote.
var recordKeys = func() *deletions.Keyring {
	k, err := deletions.NewKeyring([]byte("reactor's executor tests' record key"))
	if err != nil {
		panic(err)
	}
	return k
}()

// records are tbl's records as the test executors read them.
func records(t testing.TB, fs iceio.IO, tbl *table.Table) deletions.Records {
	t.Helper()
	return recordKeys.Records(fs, deletions.RefOf(tbl))
}

// newExecutor is executor.New(o), failing t on an error; without keys of
// its own it signs with recordKeys.
func newExecutor(t testing.TB, o executor.Options) *executor.Executor {
	t.Helper()
	if o.Records == nil {
		o.Records = recordKeys
	}
	e, err := executor.New(o)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// newTestExecutor is executor.New on the data path writerEnv selects.
func newTestExecutor(t testing.TB, cat catalog.Catalog, log *slog.Logger, met *metrics.Metrics) *executor.Executor {
	t.Helper()
	o := executor.Options{Catalog: cat, Logger: log, Metrics: met}
	var e *executor.Executor
	switch w := os.Getenv(writerEnv); w {
	case "iceberg-go":
		e = newExecutor(t, o)
		executor.UseIcebergWriter(e)
	case "", "reactor":
		o.Concurrency = 2
		e = newExecutor(t, o)
		executor.PoisonFreedBuffers(e)
	default:
		t.Fatalf("%s=%q: want iceberg-go or reactor", writerEnv, w)
	}
	switch h := os.Getenv(historyEnv); h {
	case "walk":
		executor.WalkWholeHistory(e)
	case "", "index":
	default:
		t.Fatalf("%s=%q: want walk or index", historyEnv, h)
	}
	return e
}

// historyEnv selects how the executor tests answer questions about a
// table's history: "walk" walks all of it every time (as before history
// indexes), by default the executor keeps an index per table across jobs.
// .ci/run runs the package both ways.
const historyEnv = "REACTOR_TEST_HISTORY"

func (f *fixture) commit(category string, rows int) {
	f.t.Helper()
	if _, err := f.writer.Commit(f.ctx, category, rows); err != nil {
		f.t.Fatal(err)
	}
}

func (f *fixture) load() *table.Table {
	f.t.Helper()
	tbl, err := f.cat.LoadTable(f.ctx, ident)
	if err != nil {
		f.t.Fatal(err)
	}
	return tbl
}

// job builds a compaction job for the given partitions with the test's
// thresholds (YAML, may be empty).
func (f *fixture) job(yaml string, categories ...string) jobs.Job {
	f.t.Helper()
	cfg, err := thresholds.Parse([]byte(yaml))
	if err != nil {
		f.t.Fatal(err)
	}
	tbl := f.load()
	j := jobs.Job{
		ID:       fmt.Sprintf("test-%s", f.t.Name()),
		Kind:     jobkind.Compact,
		Table:    tablename.Of(ident),
		Settings: cfg.For("db.events", tbl.Properties()),
	}
	for _, c := range categories {
		j.Partitions = append(j.Partitions, jobs.Partition{Key: "category=" + c})
	}
	return j
}

func (f *fixture) contents() streamwriter.Contents {
	f.t.Helper()
	c, err := streamwriter.Read(f.ctx, f.load())
	if err != nil {
		f.t.Fatal(err)
	}
	return c
}

// dataFiles lists live data files of one partition with their sizes.
func (f *fixture) dataFiles(category string) map[string]int64 {
	f.t.Helper()
	tbl := f.load()
	tasks, err := tbl.Scan().PlanFiles(f.ctx)
	if err != nil {
		f.t.Fatal(err)
	}
	out := map[string]int64{}
	for _, task := range tasks {
		if fmt.Sprint(task.File.Partition()[1000]) == category {
			out[task.File.FilePath()] = task.File.FileSizeBytes()
		}
	}
	return out
}

// parquetFilesOnDisk counts Parquet files under the table's data directory,
// referenced or not: what a failed attempt leaves behind shows up here.
func (f *fixture) parquetFilesOnDisk() int {
	f.t.Helper()
	tbl := f.load()
	root := tbl.Location() + "/data"
	n := 0
	err := walk(root, func(p string) {
		if len(p) > 8 && p[len(p)-8:] == ".parquet" {
			n++
		}
	})
	if err != nil {
		f.t.Fatal(err)
	}
	return n
}

func walk(uri string, visit func(string)) error {
	dir := uri
	if len(dir) > 7 && dir[:7] == "file://" {
		dir = dir[7:]
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		if os.IsNotExist(err) {
			return nil
		}
		return err
	}
	for _, e := range entries {
		p := dir + "/" + e.Name()
		if e.IsDir() {
			if err := walk(p, visit); err != nil {
				return err
			}
			continue
		}
		visit(p)
	}
	return nil
}

// interleavingCatalog is the real SQL catalog with one addition: before
// reactor's next CommitTable it can run a real commit from a concurrent
// writer, so a race that is timing-dependent in production happens
// deterministically in the test. Tables it loads are bound to it, so the
// commits iceberg-go makes for reactor go through it.
type interleavingCatalog struct {
	catalog.Catalog
	mu     sync.Mutex
	before []func()
	// commits counts CommitTable calls made by reactor through it.
	commits int
	// wrapFS, when set, wraps the IO of every table it loads (to count
	// what reactor reads).
	wrapFS func(iceio.IO) iceio.IO
	// calls records when each load and commit started and ended (for the
	// benchmarks that time one commit attempt).
	calls []catalogCall
	// beforeLoad, when set, runs before each LoadTable with its number
	// (1 for the first).
	beforeLoad func(n int)
	loads      int
}

type catalogCall struct {
	commit     bool
	start, end time.Time
	err        error
}

func (c *interleavingCatalog) record(commit bool, start time.Time, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.calls = append(c.calls, catalogCall{commit: commit, start: start, end: time.Now(), err: err})
}

// lastAttempt is how long reactor's last commit attempt took: from the
// table load that started it to the end of its catalog commit.
func (c *interleavingCatalog) lastAttempt() time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i := len(c.calls) - 1; i > 0; i-- {
		if c.calls[i].commit {
			for j := i - 1; j >= 0 && !c.calls[j].commit; j-- {
				if j == 0 || c.calls[j-1].commit {
					return c.calls[i].end.Sub(c.calls[j].start)
				}
			}
		}
	}
	return 0
}

func (c *interleavingCatalog) LoadTable(ctx context.Context, id table.Identifier) (*table.Table, error) {
	c.mu.Lock()
	c.loads++
	n, hook := c.loads, c.beforeLoad
	c.mu.Unlock()
	if hook != nil {
		hook(n)
	}
	start := time.Now()
	tbl, err := c.Catalog.LoadTable(ctx, id)
	c.record(false, start, err)
	if err != nil {
		return nil, err
	}
	wrap := c.wrapFS
	return table.New(tbl.Identifier(), tbl.Metadata(), tbl.MetadataLocation(),
		func(ctx context.Context) (iceio.IO, error) {
			fs, err := tbl.FS(ctx)
			if err == nil && wrap != nil {
				fs = wrap(fs)
			}
			return fs, err
		}, c), nil
}

func (c *interleavingCatalog) CommitTable(ctx context.Context, id table.Identifier, reqs []table.Requirement, updates []table.Update) (table.Metadata, string, error) {
	c.mu.Lock()
	c.commits++
	var run func()
	if len(c.before) > 0 {
		run, c.before = c.before[0], c.before[1:]
	}
	c.mu.Unlock()
	if run != nil {
		run()
	}
	start := time.Now()
	meta, loc, err := c.Catalog.CommitTable(ctx, id, reqs, updates)
	c.record(true, start, err)
	return meta, loc, err
}

// loadCount is how many tables were loaded through c.
func (c *interleavingCatalog) loadCount() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.loads
}

// beforeNextCommits queues actions, one per upcoming reactor commit.
func (c *interleavingCatalog) beforeNextCommits(actions ...func()) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.before = append(c.before, actions...)
}

// newExecutorOn is an executor committing through cat, logging like the
// fixture's.
func newExecutorOn(f *fixture, cat catalog.Catalog) *executor.Executor {
	level := slog.LevelWarn
	if testing.Verbose() {
		level = slog.LevelDebug
	}
	return newExecutor(f.t, executor.Options{Catalog: cat,
		Logger: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level})), Metrics: f.met})
}
