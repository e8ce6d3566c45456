package worker

import (
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/icereactor/reactor/events"
	"github.com/icereactor/reactor/executor"
	"github.com/icereactor/reactor/jobkind"
	"github.com/icereactor/reactor/jobs"
	"github.com/icereactor/reactor/redact/redacttest"
	"github.com/icereactor/reactor/tablename"
)

// Every outcome maps to the phase a subscriber filters on, with the error
// kept for failures and noops reported as successes.
func TestFinishedEventPhases(t *testing.T) {
	job := jobs.Job{ID: "j", Kind: jobkind.Compact, Table: tablename.MustParseName("db.t"),
		Partitions: []jobs.Partition{{Key: "category=a"}}, ScheduledAt: time.Unix(100, 0)}
	for _, tt := range []struct {
		outcome jobs.Outcome
		err     error
		phase   string
	}{
		{jobs.Succeeded, nil, events.JobSucceeded},
		{jobs.Noop, nil, events.JobSucceeded},
		{jobs.GaveUp, errors.New("requirement failed"), events.JobFailed},
		{jobs.Failed, errors.New("load table: down"), events.JobFailed},
	} {
		ev := finishedEvent(job, jobs.Result{Outcome: tt.outcome, Err: tt.err},
			executor.Report{RewrittenDataFiles: 3, Attempts: 2}, time.Unix(200, 0))
		if ev.Phase != tt.phase || ev.Outcome != tt.outcome.String() || !ev.Terminal() {
			t.Errorf("%v: phase %q outcome %q, want %q", tt.outcome, ev.Phase, ev.Outcome, tt.phase)
		}
		if (tt.err != nil) != (ev.Error != "") || ev.Counts["rewritten_data_files_count"] != 3 || ev.Attempts != 2 {
			t.Errorf("%v: event %+v", tt.outcome, ev)
		}
		if got := events.JobSubject(events.DefaultJobSubjectPrefix, ev.Phase, ev.Table); got != "reactor.jobs."+tt.phase+".db.t" {
			t.Errorf("subject %s", got)
		}
	}
}

// A failed job's event, as published on NATS, masks every shape of
// secret its error quotes.
func TestFinishedEventMasksSecrets(t *testing.T) {
	job := jobs.Job{ID: "j", Kind: jobkind.Compact, Table: tablename.MustParseName("db.t")}
	for _, s := range redacttest.Shapes {
		ev := finishedEvent(job, jobs.Result{Outcome: jobs.Failed, Err: errors.New("commit: " + s.Text)},
			executor.Report{}, time.Unix(0, 0))
		data, err := json.Marshal(ev)
		if err != nil {
			t.Fatal(err)
		}
		redacttest.AssertMasked(t, s.Name, string(data))
	}
}
