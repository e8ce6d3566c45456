package pool

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/icereactor/reactor/executor"
	"github.com/icereactor/reactor/jobkind"
	"github.com/icereactor/reactor/jobs"
	"github.com/icereactor/reactor/lease"
	"github.com/icereactor/reactor/ownership"
	"github.com/icereactor/reactor/tablename"
)

// ownsOnly owns one table, in shard 7 as every other.
type ownsOnly struct{ table string }

func (o ownsOnly) Owns(table string) bool { return table == o.table }
func (ownsOnly) ShardOf(string) int       { return 7 }
func (ownsOnly) CommitDeadline(string) (time.Time, error) {
	panic("the pool never commits")
}

// countingRunner counts the jobs it ran.
type countingRunner struct{ ran atomic.Int32 }

func (r *countingRunner) Run(context.Context, jobs.Job) (jobs.Result, executor.Report) {
	r.ran.Add(1)
	return jobs.Result{Outcome: jobs.Succeeded}, executor.Report{}
}

// A job of a table this replica does not own ends Failed, unrun, with the
// lease's error naming the table and its shard (bench/replicas counts
// these words as a lost race); a job of an owned table runs.
func TestJobOfATableNotOwnedFailsUnrun(t *testing.T) {
	tests := []struct {
		table   string
		want    jobs.Outcome
		wantErr string
	}{
		{table: "db.mine", want: jobs.Succeeded},
		{table: "db.theirs", want: jobs.Failed, wantErr: "table lease not held by this replica: db.theirs (shard 7)"},
	}
	for _, tt := range tests {
		t.Run(tt.table, func(t *testing.T) {
			run := &countingRunner{}
			finished := make(chan jobs.Result, 1)
			p := New(t.Context(), Options{Runner: run, Ownership: ownsOnly{table: "db.mine"},
				OnFinish: func(_ context.Context, _ jobs.Job, res jobs.Result, _ executor.Report) { finished <- res }})
			p.Dispatch(jobs.Job{ID: "j", Table: tablename.MustParseName(tt.table), Kind: jobkind.Compact})
			var res jobs.Result
			select {
			case res = <-finished:
			case <-time.After(10 * time.Second):
				t.Fatal("the job did not finish")
			}
			p.Wait()
			if res.Outcome != tt.want {
				t.Fatalf("outcome %v (%v), want %v", res.Outcome, res.Err, tt.want)
			}
			if tt.wantErr == "" {
				if run.ran.Load() != 1 {
					t.Errorf("ran %d jobs, want 1", run.ran.Load())
				}
				return
			}
			if run.ran.Load() != 0 {
				t.Errorf("ran %d jobs of a table not owned, want none", run.ran.Load())
			}
			if !errors.Is(res.Err, ownership.ErrNotHeld) || !errors.Is(res.Err, lease.ErrLeaseLost) || res.Err.Error() != tt.wantErr {
				t.Errorf("err = %v, want %q wrapping ownership.ErrNotHeld (lease.ErrLeaseLost)", res.Err, tt.wantErr)
			}
		})
	}
}
