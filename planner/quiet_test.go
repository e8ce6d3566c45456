package planner

import (
	"strings"
	"testing"
	"time"

	"github.com/apache/iceberg-go/table"

	"github.com/icereactor/reactor/jobkind"
	"github.com/icereactor/reactor/jobs"
	"github.com/icereactor/reactor/thresholds"
)

// quietSettings: a 1 MiB target (small below 768 KiB), the built-in tier
// rule, a one-minute quiet merge.
func quietSettings(t *testing.T, extra string) thresholds.Effective {
	t.Helper()
	cfg, err := thresholds.Parse([]byte("defaults:\n  target_file_size: 1MiB\n  quiet_period: 1s\n  max_quiet_wait: 1s\n  cooldown: 1s\n  orphan_listing_interval: 100000h\n" + extra))
	if err != nil {
		t.Fatal(err)
	}
	return cfg.For("db.t", nil)
}

// What the quiet merge of one partition measures, says and decides.
func TestQuietCheck(t *testing.T) {
	const kb = int64(1 << 10)
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	on := quietSettings(t, "  compact_when_quiet_after: 1m\n")
	off := quietSettings(t, "  compact_when_quiet_after: off\n")
	slow := on
	slow.CompactWhenQuietAfter, slow.QuietPeriod = time.Second, 10*time.Second
	small := func(n int, each int64, ago time.Duration) Counters {
		return Counters{DataFiles: n, SmallFiles: n, Bytes: int64(n) * each, SmallBytes: int64(n) * each, LastWrite: now.Add(-ago)}
	}
	for _, tt := range []struct {
		name     string
		c        Counters
		set      thresholds.Effective
		over     bool
		due      bool
		wakeIn   time.Duration // from now; 0: no wake-up
		note     string
		after    int
		measured int64
	}{
		{name: "quiet, 7 small files fit in 1", c: small(7, 50*kb, 72*time.Second), set: on, over: true, due: true,
			note: "quiet for 1m12s, 7 files where 1 would do: merge", after: 1, measured: 72},
		{name: "written 3s ago: waits", c: small(7, 50*kb, 3*time.Second), set: on, over: true, wakeIn: 57 * time.Second,
			note: "written 3s ago, quiet merge waits until 12:00:57", after: 1, measured: 3},
		{name: "exactly at the limit", c: small(7, 50*kb, time.Minute), set: on, over: true, due: true, after: 1, measured: 60},
		{name: "off", c: small(7, 50*kb, time.Hour), set: off, note: "off", after: 1, measured: 0},
		{name: "one small file: at the ideal", c: small(1, 50*kb, time.Hour), set: on, note: "a merge of the 1 small files leaves 1", after: 1},
		{name: "no small files", c: Counters{DataFiles: 4, Bytes: 4 << 20, LastWrite: now.Add(-time.Hour)}, set: on, after: 4},
		{name: "small files too large to merge into fewer", c: small(3, 700*kb, time.Hour), set: on, after: 3,
			note: "a merge of the 3 small files leaves 3"},
		{name: "two large files beside two small: merge to 3, ideal 3",
			c:   Counters{DataFiles: 4, SmallFiles: 2, Bytes: 2*(900*kb) + 2*(100*kb), SmallBytes: 200 * kb, LastWrite: now.Add(-time.Hour)},
			set: on, over: true, due: true, after: 3},
		{name: "at the ideal although a merge would reach fewer: left alone (the ideal is the bar)",
			c:   Counters{DataFiles: 4, SmallFiles: 2, Bytes: 2*(1750*kb) + 2*(200*kb), SmallBytes: 400 * kb, LastWrite: now.Add(-time.Hour)},
			set: on, after: 3},
		{name: "only reactor wrote it: quiet", c: Counters{DataFiles: 5, SmallFiles: 5, Bytes: 5 * 10 * kb, SmallBytes: 5 * 10 * kb},
			set: on, over: true, due: true, after: 1, measured: 60},
		{name: "never shorter than quiet_period", c: small(5, 10*kb, 5*time.Second), set: slow, over: true, wakeIn: 5 * time.Second,
			after: 1, measured: 5},
	} {
		t.Run(tt.name, func(t *testing.T) {
			chk, due, at := quietCheck(tt.c, tt.set, now)
			if chk.Threshold != "compact_when_quiet_after" || chk.Over != tt.over || due != tt.due {
				t.Errorf("check %+v due=%v, want over=%v due=%v", chk, due, tt.over, tt.due)
			}
			if tt.measured != 0 && chk.Measured != tt.measured {
				t.Errorf("measured %d s, want %d", chk.Measured, tt.measured)
			}
			switch {
			case tt.wakeIn == 0 && !at.IsZero():
				t.Errorf("wakes at %v, want no wake-up", at)
			case tt.wakeIn != 0 && !at.Equal(now.Add(tt.wakeIn)):
				t.Errorf("wakes at %v, want %v", at, now.Add(tt.wakeIn))
			}
			if !strings.Contains(chk.Note, tt.note) {
				t.Errorf("note %q, want it to contain %q", chk.Note, tt.note)
			}
			if after, _, _ := QuietMerge(tt.c, tt.set); after != tt.after {
				t.Errorf("after the merge %d files, want %d", after, tt.after)
			}
		})
	}
}

// The scheduler: one quiet merge when the spell is long enough, marked
// Quiet, nothing again until the partition is written.
func TestQuietMergeScheduledOncePerSpell(t *testing.T) {
	sim := newQuietSim(t, quietSettings(t, "  compact_when_quiet_after: 1m\n"), 1)
	for i := range 7 {
		sim.write(0, time.Duration(i)*time.Second, 50<<10)
	}
	sim.runUntil(50 * time.Second)
	if n := sim.quietJobs(0); n != 0 {
		t.Fatalf("%d quiet merges 44 s after the last write, want none", n)
	}
	sim.runUntil(10 * time.Minute)
	if n := sim.quietJobs(0); n != 1 {
		t.Fatalf("%d quiet merges after 10 quiet minutes, want 1", n)
	}
	if got := len(sim.files[0]); got != 1 {
		t.Errorf("%d files after the quiet merge, want 1", got)
	}
	sim.write(0, 11*time.Minute, 50<<10)
	sim.write(0, 11*time.Minute+time.Second, 50<<10)
	sim.runUntil(20 * time.Minute)
	if n := sim.quietJobs(0); n != 2 {
		t.Fatalf("%d quiet merges after a second spell, want 2", n)
	}
	sim.check()
}

// reactor plan explains the quiet merge: waiting while the partition was
// written recently, due once it has been quiet long enough, and a job that
// merges it.
func TestExplainQuietMerge(t *testing.T) {
	f := newSchedFixture(t, "defaults:\n  target_file_size: 1MiB\n  quiet_period: 1s\n  compact_when_quiet_after: 1m\n  orphan_listing_interval: 100000h\n")
	f.commit("a", 4)
	tbl, err := f.cat.LoadTable(f.ctx, table.Identifier{"db", "t"})
	if err != nil {
		t.Fatal(err)
	}
	cfg := f.p.cfg.Load()
	last := time.UnixMilli(tbl.CurrentSnapshot().TimestampMs)
	plan, err := Explain(f.ctx, tbl, cfg, last.Add(3*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if len(plan.Jobs) != 0 || len(plan.Partitions) != 1 {
		t.Fatalf("3 s after the last write: %d jobs, %d partitions; want none due, one partition", len(plan.Jobs), len(plan.Partitions))
	}
	pp := plan.Partitions[0]
	wantWait := "written 3s ago, quiet merge waits until " + last.Add(time.Minute).Format(time.TimeOnly) + " (4 files where 1 would do)"
	if pp.Due || pp.Wait != wantWait {
		t.Errorf("partition due=%v wait %q, want %q", pp.Due, pp.Wait, wantWait)
	}
	plan, err = Explain(f.ctx, tbl, cfg, last.Add(72*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if len(plan.Jobs) != 1 || plan.Jobs[0].Kind != jobkind.Compact || !plan.Jobs[0].Job().Partitions[0].Quiet {
		t.Fatalf("72 s after: jobs %+v, want one quiet compaction", plan.Jobs)
	}
	if got := plan.Jobs[0].Reasons[0].String(); got != "category=a: quiet merge, compact_when_quiet_after 1m (quiet for 1m12s, 4 files where 1 would do: merge)" {
		t.Errorf("reason %q", got)
	}
}

// A quiet merge waits behind the jobs that answer writes; a compaction
// that also merges a partition over its threshold does not.
func TestQuietMergePriority(t *testing.T) {
	quiet := jobs.Reason{Threshold: jobs.CompactWhenQuietAfter}
	if p := jobs.PriorityOf(jobkind.Compact, []jobs.Reason{quiet, quiet}); p != jobkind.PriorityBackground {
		t.Errorf("quiet merges only: %s, want background", p)
	}
	if p := jobs.PriorityOf(jobkind.Compact, []jobs.Reason{quiet, {Threshold: "small_file_count"}}); p != jobkind.PriorityUrgent {
		t.Errorf("with a tier merge: %s, want urgent", p)
	}
	if p := jobs.PriorityOf(jobkind.Compact, nil); p != jobkind.PriorityUrgent {
		t.Errorf("no reason: %s, want urgent", p)
	}
}
