package pool

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/icereactor/reactor/executor"
	"github.com/icereactor/reactor/jobkind"
	"github.com/icereactor/reactor/jobs"
	"github.com/icereactor/reactor/redact"
	"github.com/icereactor/reactor/redact/redacttest"
	"github.com/icereactor/reactor/tablename"
)

// panicky panics on the job it is told to, with a value quoting secrets,
// and succeeds on every other.
type panicky struct{ on string }

func (p panicky) Run(_ context.Context, job jobs.Job) (jobs.Result, executor.Report) {
	if job.ID == p.on {
		panic("decoding manifest from " + redacttest.All())
	}
	return jobs.Result{Outcome: jobs.Succeeded}, executor.Report{}
}

// A job that panics fails with a redacted error (value and stack) and
// frees its slot: the next job, on the one slot, runs and succeeds.
func TestPanickingJobFailsAndTheNextRuns(t *testing.T) {
	var (
		mu       sync.Mutex
		finished = map[string]jobs.Result{}
		done     = make(chan struct{}, 2)
	)
	p := New(t.Context(), Options{Runner: panicky{on: "bad"}, Concurrency: 1,
		OnFinish: func(_ context.Context, job jobs.Job, res jobs.Result, _ executor.Report) {
			mu.Lock()
			finished[job.ID] = res
			mu.Unlock()
			done <- struct{}{}
		}})
	p.Dispatch(jobs.Job{ID: "bad", Table: tablename.MustParseName("db.a"), Kind: jobkind.Compact})
	p.Dispatch(jobs.Job{ID: "good", Table: tablename.MustParseName("db.b"), Kind: jobkind.Compact})
	for range 2 {
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Fatal("jobs did not finish")
		}
	}
	p.Wait()
	bad, good := finished["bad"], finished["good"]
	var pe *redact.PanicError
	if bad.Outcome != jobs.Failed || !errors.As(bad.Err, &pe) {
		t.Fatalf("panicking job: %+v", bad)
	}
	redacttest.AssertMasked(t, "panic error", bad.Err.Error())
	redacttest.AssertMasked(t, "panic stack", pe.Stack)
	if pe.Stack == "" {
		t.Error("no stack")
	}
	if good.Outcome != jobs.Succeeded {
		t.Errorf("the next job: %+v", good)
	}
	if st := p.Stats(); st.Failed != 1 || st.Succeeded != 1 {
		t.Errorf("stats %+v", st)
	}
}
