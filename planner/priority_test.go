package planner

import (
	"strings"
	"testing"
	"time"

	"github.com/icereactor/reactor/jobkind"
	"github.com/icereactor/reactor/jobs"
)

// The planner ranks the jobs it schedules: the ones that answer writes and
// an expiry at the snapshot-count bound are urgent, an expiry by age is
// background (the executor's pool orders its queue by it).
func TestScheduledJobPriority(t *testing.T) {
	yaml := schedYAML + "  snapshot_max_age: 3h\n  min_reader_margin: 30m\n  retain_last: 1\n"
	t.Run("expiry by age", func(t *testing.T) {
		f := newSchedFixture(t, yaml)
		f.commit("a", 3)
		f.at(4 * time.Hour)
		got := f.takeJobs()
		if len(got) != 1 || got[0].Kind != jobkind.ExpireSnapshots || got[0].Priority != jobkind.PriorityBackground {
			t.Fatalf("jobs = %+v, want one background expiry", got)
		}
	})
	t.Run("expiry by count, then compaction", func(t *testing.T) {
		f := newSchedFixture(t, strings.Replace(yaml, "quiet_period: 1h", "quiet_period: 0s", 1)+"  snapshot_count: 6\n")
		f.commit("a", 6)
		f.at(time.Minute)
		got := f.takeJobs()
		if len(got) != 1 || got[0].Kind != jobkind.ExpireSnapshots || got[0].Priority != jobkind.PriorityUrgent {
			t.Fatalf("jobs = %+v, want one urgent expiry", got)
		}
		f.p.Finished(f.ctx, got[0], jobs.Result{Outcome: jobs.Noop})
		if got := f.takeJobs(); len(got) != 1 || got[0].Kind != jobkind.Compact || got[0].Priority != jobkind.PriorityUrgent {
			t.Fatalf("after the expiry, jobs = %+v, want an urgent compaction", got)
		}
	})
}
