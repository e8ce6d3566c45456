package worker

import (
	"context"
	"io"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/apache/iceberg-go/table"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/icereactor/reactor/embedded"
	"github.com/icereactor/reactor/events"
	"github.com/icereactor/reactor/executor"
	"github.com/icereactor/reactor/jobkind"
	"github.com/icereactor/reactor/jobs"
	"github.com/icereactor/reactor/lease"
	"github.com/icereactor/reactor/metrics"
	"github.com/icereactor/reactor/planner"
	"github.com/icereactor/reactor/streamwriter"
	"github.com/icereactor/reactor/tablename"
	"github.com/icereactor/reactor/thresholds"
)

// recordingOut keeps what the loop announces, in order.
type recordingOut struct {
	mu       sync.Mutex
	phases   []string
	subjects []string
	finished chan events.JobEvent
}

func (o *recordingOut) publishJob(ev events.JobEvent) {
	o.mu.Lock()
	o.phases = append(o.phases, ev.Phase)
	o.mu.Unlock()
	if ev.Phase != events.JobScheduled && ev.Phase != events.JobStarted {
		o.finished <- ev
	}
}

func (o *recordingOut) publish(subject string, _ any) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.subjects = append(o.subjects, subject)
}

// runAs runs every job as it is told: a result and report, or a panic.
type runAs struct {
	res   jobs.Result
	rep   executor.Report
	panic bool
}

func (r runAs) Run(context.Context, jobs.Job) (jobs.Result, executor.Report) {
	if r.panic {
		panic("a bug in a job")
	}
	return r.res, r.rep
}

// ownsNone owns no table (a replica whose lease moved).
type ownsNone struct{}

func (ownsNone) Owns(string) bool                         { return false }
func (ownsNone) ShardOf(string) int                       { return 3 }
func (ownsNone) CommitDeadline(string) (time.Time, error) { return time.Time{}, lease.ErrLeaseLost }

// The job loop, between a real planner and pool: a dispatched job is
// announced scheduled, started and finished in that order, its end counted
// and told to the planner, then the table's health and (orphan cleanup)
// its report published; a job of a table not owned ends failed, never
// started; a panicking job is counted failed.
func TestJobLoopAnnouncesCountsAndReports(t *testing.T) {
	orphans := executor.Report{Orphans: executor.OrphanReport{DeletedFiles: 1,
		Orphans: []executor.OrphanFile{{Location: "s3://b/t/data/a"}, {Location: "s3://b/t/data/b"}, {Location: "s3://b/t/data/c"}}}}
	tests := []struct {
		name         string
		kind         jobkind.Kind
		run          runAs
		notOwned     bool
		wantPhases   []string
		wantSubjects []string
		check        func(t *testing.T, met *metrics.Metrics, finished events.JobEvent)
	}{
		{name: "succeeds", kind: jobkind.Compact, run: runAs{res: jobs.Result{Outcome: jobs.Succeeded}},
			wantPhases:   []string{events.JobScheduled, events.JobStarted, events.JobSucceeded},
			wantSubjects: []string{"reactor.health.db.t"}},
		{name: "orphans", kind: jobkind.RemoveOrphans, run: runAs{res: jobs.Result{Outcome: jobs.Succeeded}, rep: orphans},
			wantPhases:   []string{events.JobScheduled, events.JobStarted, events.JobSucceeded},
			wantSubjects: []string{"reactor.orphans.db.t", "reactor.health.db.t"},
			check: func(t *testing.T, met *metrics.Metrics, _ events.JobEvent) {
				if got := testutil.ToFloat64(met.OrphanCandidates.WithLabelValues("db.t")); got != 2 {
					t.Errorf("orphan candidates left %v, want 2 (3 found, 1 deleted)", got)
				}
			}},
		{name: "not owned", kind: jobkind.Compact, run: runAs{res: jobs.Result{Outcome: jobs.Succeeded}}, notOwned: true,
			wantPhases: []string{events.JobScheduled, events.JobFailed},
			check: func(t *testing.T, _ *metrics.Metrics, finished events.JobEvent) {
				if want := "table lease not held by this replica: db.t (shard 3)"; finished.Error != want {
					t.Errorf("error %q, want %q", finished.Error, want)
				}
			}},
		{name: "panics", kind: jobkind.Compact, run: runAs{panic: true},
			wantPhases:   []string{events.JobScheduled, events.JobStarted, events.JobFailed},
			wantSubjects: []string{"reactor.health.db.t"},
			check: func(t *testing.T, met *metrics.Metrics, _ events.JobEvent) {
				if got := testutil.ToFloat64(met.Jobs.WithLabelValues(jobkind.Compact.String(), metrics.JobFailed)); got != 1 {
					t.Errorf("failed jobs counted %v, want 1", got)
				}
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := t.Context()
			cat, err := embedded.OpenCatalog(ctx, t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = cat.(io.Closer).Close() })
			ident := table.Identifier{"db", "t"}
			if _, err := streamwriter.CreateTable(ctx, cat, ident, nil); err != nil {
				t.Fatal(err)
			}
			if _, err := streamwriter.New(cat, ident, nil).Commit(ctx, "a", 3); err != nil {
				t.Fatal(err)
			}
			tbl, err := cat.LoadTable(ctx, ident)
			if err != nil {
				t.Fatal(err)
			}
			cfg, err := thresholds.Parse(nil)
			if err != nil {
				t.Fatal(err)
			}
			met := metrics.New()
			log := slog.New(slog.DiscardHandler)
			out := &recordingOut{finished: make(chan events.JobEvent, 1)}
			opts := loopOptions{Planner: planner.Options{Catalog: cat, Config: cfg, Logger: log, Metrics: met},
				Runner: tt.run, Out: out, Metrics: met, Logger: log, HealthPrefix: DefaultHealthSubjectPrefix}
			if tt.notOwned {
				opts.Ownership = ownsNone{}
			}
			loop := newJobLoop(ctx, opts)
			t.Cleanup(loop.planner.Close)
			// A replica keeps the state of the tables it owns only (a lost
			// one's is forgotten): no health report for the others.
			if !tt.notOwned {
				if err := loop.planner.Observe(ctx, tbl); err != nil {
					t.Fatal(err)
				}
			}
			loop.dispatch(jobs.Job{ID: "j1", Table: tablename.MustParseName("db.t"), Kind: tt.kind})
			var finished events.JobEvent
			select {
			case finished = <-out.finished:
			case <-time.After(30 * time.Second):
				t.Fatal("the job did not finish")
			}
			loop.pool.Wait()
			out.mu.Lock()
			defer out.mu.Unlock()
			if !slices.Equal(out.phases, tt.wantPhases) {
				t.Errorf("phases %v, want %v", out.phases, tt.wantPhases)
			}
			if !slices.Equal(out.subjects, tt.wantSubjects) {
				t.Errorf("reports on %v, want %v", out.subjects, tt.wantSubjects)
			}
			if tt.check != nil {
				tt.check(t, met, finished)
			}
		})
	}
}
