package worker

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/icereactor/reactor/events"
	"github.com/icereactor/reactor/executor"
	"github.com/icereactor/reactor/jobkind"
	"github.com/icereactor/reactor/jobs"
	"github.com/icereactor/reactor/metrics"
	"github.com/icereactor/reactor/planner"
	"github.com/icereactor/reactor/sparkcall"
	"github.com/icereactor/reactor/sparkrun"
	"github.com/icereactor/reactor/thresholds"
)

// standInSpark is a Spark Connect server for go test, which cannot run
// Spark (interop/run spark_connect runs the real one): each statement
// waits until the test releases it, then compacts the table with reactor's
// own executor on the same catalog and answers with rewrite_data_files'
// columns.
type standInSpark struct {
	h       *harness
	release chan struct{}

	mu         sync.Mutex
	statements []string
}

func (s *standInSpark) dial(_ context.Context, _ thresholds.SparkSettings, _, _ string) (sparkrun.Session, error) {
	return s, nil
}

// statement is the i-th statement received; b's job may be sending one
// while the test reads a's.
func (s *standInSpark) statement(i int) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.statements[i]
}

func (s *standInSpark) Exec(ctx context.Context, statement string) ([]string, [][]any, error) {
	s.mu.Lock()
	s.statements = append(s.statements, statement)
	s.mu.Unlock()
	select {
	case <-s.release:
	case <-ctx.Done():
		return nil, nil, ctx.Err()
	}
	tbl, err := s.h.cat.LoadTable(ctx, s.h.ident)
	if err != nil {
		return nil, nil, err
	}
	cfg, _ := thresholds.Parse([]byte(s.h.cfgYAML))
	// The statement's where predicate names the job's partitions.
	var parts []string
	for _, m := range partitionLiteral.FindAllStringSubmatch(statement, -1) {
		parts = append(parts, "category="+m[1])
	}
	job, err := planner.ManualJob(ctx, tbl, cfg, jobkind.Compact, planner.ManualOptions{Partitions: parts}, time.Now())
	if err != nil {
		return nil, nil, err
	}
	exec, err := executor.New(executor.Options{Catalog: s.h.cat, Logger: slog.New(slog.DiscardHandler), Metrics: metrics.New()})
	if err != nil {
		return nil, nil, err
	}
	res, rep := exec.Run(ctx, job)
	if res.Outcome != jobs.Succeeded {
		return nil, nil, fmt.Errorf("stand-in Spark: %s: %v", res.Outcome, res.Err)
	}
	row := []any{int32(rep.RewrittenDataFiles), int32(rep.AddedDataFiles), rep.RewrittenBytes, int32(0), int32(0)}
	return sparkcall.ResultColumns(sparkcall.RewriteDataFiles), [][]any{row}, nil
}

var partitionLiteral = regexp.MustCompile("`category` = \\\\'([^\\\\]+)\\\\'")

func (s *standInSpark) Interrupt(context.Context) ([]string, bool, error) { return nil, false, nil }
func (s *standInSpark) Close()                                            {}

// A compaction the spark rules select runs on Spark: its started and
// succeeded events say backend spark and carry Spark's counts, and while
// it runs no other job starts on the table, although another partition
// crosses its threshold meanwhile (one job per table includes Spark's).
func TestSparkBackendEndToEnd(t *testing.T) {
	cfg := testThresholds + `
spark:
  endpoint: sc://spark.test:15002
  catalog: reactor
  rules:
    - match: "db.*"
      kinds: [compact]
      min_input_files: 5
`
	h := newHarness(t, cfg, nil)
	spark := &standInSpark{h: h, release: make(chan struct{})}
	h.workerCfg = func(c *Config) { c.sparkDial = spark.dial }
	sub, err := h.conn.SubscribeSync(events.DefaultJobSubjectPrefix + ".>")
	if err != nil {
		t.Fatal(err)
	}
	for range 5 {
		h.commit("a", 10)
	}
	before := len(h.files()["a"])
	h.start()

	next := func() events.JobEvent {
		t.Helper()
		msg, err := sub.NextMsg(time.Minute)
		if err != nil {
			t.Fatalf("no job event: %v\nlogs:\n%s", err, h.logs.String())
		}
		var ev events.JobEvent
		if err := json.Unmarshal(msg.Data, &ev); err != nil {
			t.Fatal(err)
		}
		return ev
	}
	var first events.JobEvent
	for first = next(); first.Phase != events.JobStarted; first = next() {
	}
	if first.Backend != executor.BackendSpark {
		t.Fatalf("started event %+v, want backend spark", first)
	}
	// Partition b crosses its threshold while the Spark job runs.
	for range 5 {
		h.commit("b", 10)
	}
	time.Sleep(time.Second) // room for a wrongly scheduled second job to show up
	close(spark.release)

	var done events.JobEvent
	for done = next(); done.JobID != first.JobID || !done.Terminal(); done = next() {
		if done.JobID != first.JobID && (done.Phase == events.JobStarted || done.Phase == events.JobScheduled) {
			t.Fatalf("job %s (%s) on the table while the Spark job %s ran", done.JobID, done.Phase, first.JobID)
		}
	}
	if done.Phase != events.JobSucceeded || done.Backend != executor.BackendSpark {
		t.Fatalf("finished event %+v", done)
	}
	if done.Counts["rewritten_data_files_count"] < int64(before) || done.Counts["added_data_files_count"] < 1 {
		t.Errorf("counts %v, want the %d files of a rewritten", done.Counts, before)
	}
	if st := spark.statement(0); !strings.Contains(st, "rewrite_data_files") {
		t.Errorf("statement %q", st)
	}
	// Then b's job runs (on Spark too: it matches the rule).
	var second events.JobEvent
	for second = next(); second.Phase != events.JobSucceeded; second = next() {
	}
	if second.JobID == first.JobID || second.Backend != executor.BackendSpark {
		t.Errorf("second job %+v", second)
	}
	if got, want := h.contents().Total, h.writer.Written(); got != want {
		t.Errorf("table holds %s, the writer wrote %s", got, want)
	}
	logs := h.logs.String()
	for _, want := range []string{`msg="job goes to Spark"`, `backend=spark`, `msg="spark statement"`} {
		if !strings.Contains(logs, want) {
			t.Errorf("logs lack %s", want)
		}
	}
}
