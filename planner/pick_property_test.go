package planner

import (
	"fmt"
	"log/slog"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/icereactor/reactor/deletions"
	"github.com/icereactor/reactor/jobkind"
	"github.com/icereactor/reactor/jobs"
	"github.com/icereactor/reactor/tablename"
	"github.com/icereactor/reactor/thresholds"
)

// runAndPlan shows what plan and the status page say of st (Outlook,
// twice: it must change nothing) and then what run does with the same
// state at the same moment (the real evaluateLocked, dispatching into a
// slice and arming its timer on a fake clock).
type runAndPlan struct {
	plan Plan
	job  *jobs.Job     // what run dispatched (its id cleared)
	wake time.Time     // the timer run armed (zero: none)
	st   *tableState   // the state after run
	p    *Planner      // the planner run used
	clk  *fakeClock    // its clock
	out  []jobs.Job    // every job dispatched
	errs []string      // where plan and run disagree
	desc func() string // the case, for a failure message
}

func playRunAndPlan(t *testing.T, st *tableState, now time.Time) *runAndPlan {
	t.Helper()
	r := &runAndPlan{clk: newFakeClock(now), st: st}
	r.p = New(Options{Now: r.clk.Now, AfterFunc: r.clk.AfterFunc, Logger: slog.New(slog.DiscardHandler),
		Dispatch: func(j jobs.Job) { r.out = append(r.out, j) }})
	defer r.p.Close()
	r.p.tables[st.table.String()] = st
	plan, ok := r.p.Outlook(st.table.String(), now)
	if !ok {
		t.Fatalf("no outlook of %s", st.table)
	}
	again, _ := r.p.Outlook(st.table.String(), now)
	if !reflect.DeepEqual(plan, again) {
		r.errs = append(r.errs, "two outlooks of the same state at the same moment differ: Outlook changed the state")
	}
	r.plan = plan
	st.mu.Lock()
	r.p.evaluateLocked(st)
	st.mu.Unlock()
	if len(r.out) > 0 {
		j := r.out[0]
		j.ID = ""
		r.job = &j
	}
	r.wake, _ = r.clk.next()
	r.compare()
	return r
}

// compare states the property: plan's first job is the job run started,
// field for field, and nothing else started; when run started nothing,
// plan shows no job due and its next look is run's timer; every
// table-wide check plan shows as over is acted on (a job of its kind due)
// or held, and plan says by what; a snapshot_max_age plan shows as reached
// is over (it measures the snapshot run would expire, not one retain_last
// or a branch head keeps); a partition plan marks due is in a due job.
func (r *runAndPlan) compare() {
	bad := func(format string, args ...any) { r.errs = append(r.errs, fmt.Sprintf(format, args...)) }
	switch {
	case len(r.out) > 1:
		bad("run dispatched %d jobs at once", len(r.out))
	case r.job == nil && len(r.plan.Jobs) > 0:
		bad("run started nothing; plan shows %s due first (%s)", r.plan.Jobs[0].Kind, reasonsOf(r.plan.Jobs[0].Reasons))
	case r.job != nil && len(r.plan.Jobs) == 0:
		bad("run started %s (%s); plan shows nothing due", r.job.Kind, r.job.ReasonText())
	case r.job != nil && !reflect.DeepEqual(r.plan.Jobs[0].Job(), *r.job):
		bad("run started\n  %+v\nplan shows first\n  %+v", *r.job, r.plan.Jobs[0].Job())
	}
	if r.job == nil && !r.wake.Equal(r.plan.Next) {
		bad("run looks again at %v; plan says %v", r.wake, r.plan.Next)
	}
	due := map[jobkind.Kind]bool{}
	inJob := map[string]bool{}
	for _, j := range r.plan.Jobs {
		due[j.Kind] = true
		for _, k := range j.Partitions {
			inJob[k] = true
		}
	}
	held := strings.Join(r.plan.Held, "\n")
	for _, c := range r.plan.TableWide {
		kind, ok := map[jobs.Threshold]jobkind.Kind{jobs.SnapshotMaxAge: jobkind.ExpireSnapshots, jobs.SnapshotCount: jobkind.ExpireSnapshots,
			jobs.ManifestCount: jobkind.RewriteManifests}[c.Threshold]
		if !ok {
			continue
		}
		if c.Threshold == jobs.SnapshotMaxAge && c.Limit > 0 && c.Measured >= c.Limit && !c.Over {
			bad("plan shows %s %d of %d %s, reached but not over (%s): not the snapshot run measures", c.Threshold, c.Measured, c.Limit, c.Unit, c.Note)
		}
		if c.Over && !due[kind] && !strings.Contains(held, kind.String()) && !strings.Contains(held, "job is running") {
			bad("plan shows %s over (%d of %d) with no %s due and nothing holding it (held: %q)", c.Threshold, c.Measured, c.Limit, kind, r.plan.Held)
		}
	}
	for _, pp := range r.plan.Partitions {
		if pp.Due != inJob[pp.Key] {
			bad("plan marks %s due=%v, in a due job=%v (wait %q)", pp.Key, pp.Due, inJob[pp.Key], pp.Wait)
		}
	}
}

func reasonsOf(rs []jobs.Reason) string {
	var s []string
	for _, r := range rs {
		s = append(s, r.String())
	}
	return strings.Join(s, "; ")
}

// tableGen generates table states and environments from a seeded source.
type tableGen struct {
	r   *rand.Rand
	now time.Time
}

func (g *tableGen) chance(p float64) bool { return g.r.Float64() < p }

func (g *tableGen) dur(max time.Duration) time.Duration { return time.Duration(g.r.Int64N(int64(max))) }

// settings draws thresholds around the edges that matter: small counts,
// quiet periods and cool-downs of seconds to minutes, on and off switches.
func (g *tableGen) settings() thresholds.Effective {
	set := thresholds.Default().For("db.t", nil)
	set.TargetFileSize = 1 << 20
	set.SmallFileSize = 3 << 18
	set.TierFanIn = 2 + g.r.IntN(9)
	set.MinInputFiles = 2 + g.r.IntN(3)
	set.SmallFileCount = set.MinInputFiles + g.r.IntN(6)
	set.QuietPeriod = []time.Duration{0, time.Second, 30 * time.Second, 10 * time.Minute}[g.r.IntN(4)]
	set.MaxQuietWait = []time.Duration{0, time.Minute, time.Hour}[g.r.IntN(3)]
	set.Cooldown = []time.Duration{time.Second, time.Minute, time.Hour}[g.r.IntN(3)]
	set.ConflictCooldown = set.Cooldown * 2
	set.SnapshotMaxAge = []time.Duration{4 * time.Second, time.Minute, time.Hour, 24 * time.Hour}[g.r.IntN(4)]
	set.RetainLast = 1 + g.r.IntN(5)
	set.SnapshotCount = []int{0, 4, 8, 20}[g.r.IntN(4)]
	set.ManifestCount = 2 + g.r.IntN(20)
	set.EqualityDeleteFileCount = []int{0, 1, 3}[g.r.IntN(3)]
	set.DeleteMinInputFiles = 1 + g.r.IntN(5)
	set.CompactWhenQuietAfter = []time.Duration{0, time.Minute, time.Hour}[g.r.IntN(3)]
	set.Strategy = []thresholds.Strategy{thresholds.StrategyBinpack, thresholds.StrategyBinpack, thresholds.StrategySort, thresholds.StrategyZOrder}[g.r.IntN(4)]
	set.SortQuietPeriod = []time.Duration{time.Minute, time.Hour}[g.r.IntN(2)]
	set.OrphanListingInterval = []time.Duration{0, time.Hour, 24 * time.Hour}[g.r.IntN(3)]
	set.OrphanMargin = []time.Duration{time.Minute, time.Hour}[g.r.IntN(2)]
	set.OrphanDelete = g.chance(0.5)
	set.MinReaderMargin = []time.Duration{time.Minute, time.Hour}[g.r.IntN(2)]
	return set
}

// counters draws one partition's files: small files spread over the size
// tiers, deletes of every kind, sorted files, a last write or none.
func (g *tableGen) counters(set thresholds.Effective) Counters {
	var c Counters
	c.DataFiles = g.r.IntN(16)
	if c.DataFiles > 0 {
		c.SmallFiles = g.r.IntN(c.DataFiles + 1)
	}
	tiers := jobs.TiersOf(set)
	for range c.SmallFiles {
		size := 1 + g.r.Int64N(set.SmallFileSize-1)
		c.SmallBytes += size
		c.Tiers[tiers.Of(size)]++
	}
	c.Bytes = c.SmallBytes + int64(c.DataFiles-c.SmallFiles)*set.TargetFileSize
	c.Rows = int64(c.DataFiles) * (1 + g.r.Int64N(1000))
	if g.chance(0.4) {
		c.PositionDeleteFiles = g.r.IntN(8)
		c.PositionDeleteRows = int64(c.PositionDeleteFiles) * g.r.Int64N(200)
		c.DeleteBytes = int64(c.PositionDeleteFiles) * (1 + g.r.Int64N(set.DeleteTargetFileSize))
	}
	if g.chance(0.2) {
		c.EqualityDeleteFiles = g.r.IntN(5)
		c.EqualityDeleteRows = int64(c.EqualityDeleteFiles) * 10
	}
	if g.chance(0.2) {
		c.DeletionVectors = g.r.IntN(6)
		c.DeletionVectorRows = int64(c.DeletionVectors) * 5
		c.DuplicateDeletionVectors = g.r.IntN(c.DeletionVectors + 1)
	}
	if c.DataFiles > 0 {
		c.SortedFiles = g.r.IntN(c.DataFiles + 1)
	}
	if g.chance(0.85) {
		c.LastWrite = g.now.Add(-g.dur(3 * time.Hour)).Truncate(time.Millisecond)
	}
	return c
}

// table draws a table state: its partitions with their own scheduling
// state, its history, manifests and the table-wide jobs' state. known
// false draws a state as a fresh reactor (or reactor plan) has it.
func (g *tableGen) table(known bool) *tableState {
	set := g.settings()
	st := &tableState{table: tablename.MustParseName("db.t"), settings: set}
	tc := &st.counters
	tc.sizes = sizesOf(set)
	tc.partitions = map[string]*partitionState{}
	tc.snapshotID = 1 + g.r.Int64N(1<<40)
	tc.formatVersion = 2 + g.r.IntN(2)
	tc.dataManifests = g.r.IntN(30)
	parts := g.r.IntN(7)
	for i := range parts {
		ps := &partitionState{Key: fmt.Sprintf("category=p%d", i), values: compactValues(map[int]any{1000: fmt.Sprintf("p%d", i)})}
		ps.Counters = g.counters(set)
		tc.partitions[ps.Key] = ps
		if !known {
			continue
		}
		if g.chance(0.3) {
			ps.cooldownUntil = instantOf(g.now.Add(g.dur(2*time.Hour) - time.Hour))
		}
		if g.chance(0.25) {
			ps.settledWrite = instantOf(ps.LastWrite)
			if g.chance(0.3) {
				ps.settledWrite = instantOf(ps.LastWrite.Add(-time.Second))
			}
			for _, k := range []jobkind.Kind{jobkind.Compact, jobkind.ConvertEqualityDeletes, jobkind.RewritePositionDeletes, jobkind.Sort} {
				if g.chance(0.4) {
					ps.settledKinds = ps.settledKinds.With(k)
				}
			}
		}
		if g.chance(0.3) {
			ps.waitingSince = instantOf(g.now.Add(-g.dur(2 * time.Hour)))
		}
		if g.chance(0.2) {
			ps.quietMerged = spellOf(ps)
		}
	}
	// History, newest first: the current snapshot is main's head.
	n := g.r.IntN(25)
	at := g.now.Add(-g.dur(time.Minute))
	ids := make([]int64, n)
	for i := range n {
		st.snapshots.timesMs = append(st.snapshots.timesMs, at.UnixMilli())
		st.snapshots.refHeads = append(st.snapshots.refHeads, i == 0 || g.chance(0.1))
		ids[i] = tc.snapshotID - int64(i)
		at = at.Add(-g.dur(time.Duration(1+g.r.IntN(3)) * time.Hour))
	}
	slices.Sort(ids)
	st.snapshots.ids = ids
	if !known {
		st.orphans.gcDisabled, st.orphans.s3Tables = g.chance(0.1), g.chance(0.05)
		return st
	}
	g.environment(st)
	return st
}

// environment draws what a running reactor learned from its own jobs.
func (g *tableGen) environment(st *tableState) {
	set := st.settings
	if g.chance(0.15) && len(st.counters.partitions) > 0 {
		job := jobs.Job{ID: "running", Kind: jobkind.Compact, Table: st.table}
		for _, ps := range st.counters.sortedPartitions() {
			if g.chance(0.5) {
				ps.inJob = true
				job.Partitions = append(job.Partitions, ps.partition())
			}
		}
		st.running = &job
	}
	if g.chance(0.3) {
		st.expiry.cooldownUntil = g.now.Add(g.dur(2*time.Hour) - time.Hour)
	}
	if g.chance(0.15) {
		st.expiry.settledAt = st.counters.snapshotID
	}
	for i := range g.r.IntN(4) {
		st.expiry.pending = mergeRefs(st.expiry.pending, []deletions.Ref{{Location: fmt.Sprintf("s3://b/t/pending-%d", i),
			Due: g.now.Add(g.dur(4*time.Hour) - 2*time.Hour)}})
	}
	if g.chance(0.2) {
		st.expiry.pendingRetryAt = g.now.Add(g.dur(2*time.Hour) - time.Hour)
	}
	if g.chance(0.3) {
		st.manifests.cooldownUntil = g.now.Add(g.dur(2*time.Hour) - time.Hour)
	}
	if g.chance(0.15) {
		st.manifests.settledAt = st.counters.dataManifests
	}
	st.orphans.gcDisabled, st.orphans.s3Tables = g.chance(0.1), g.chance(0.05)
	if g.chance(0.3) {
		st.orphans.cooldownUntil = g.now.Add(g.dur(2*time.Hour) - time.Hour)
	}
	if set.OrphanListingInterval > 0 {
		st.orphans.nextListing = g.now.Add(g.dur(2*set.OrphanListingInterval) - set.OrphanListingInterval/2)
	}
	st.trackingIncomplete = g.chance(0.1)
	for i := range g.r.IntN(5) {
		if st.unconfirmed == nil {
			st.unconfirmed = map[string]unconfirmedFile{}
		}
		loc := fmt.Sprintf("s3://b/t/data/tracked-%d.parquet", i)
		st.unconfirmed[loc] = unconfirmedFile{location: loc, size: 100, created: g.now.Add(-g.dur(3 * time.Hour))}
		if g.chance(0.3) {
			if st.orphans.dryRunReported == nil {
				st.orphans.dryRunReported = map[string]bool{}
			}
			st.orphans.dryRunReported[loc] = true
		}
	}
}

// What plan and the status page show is what run does: for random table
// states and environments (seeded, so a failure replays), the real run
// path (evaluateLocked) and the status page's Outlook agree on the job
// started, its every field, and the next look; and plan's checks say what
// the decision acted on.
func TestPlanShowsWhatRunDoes(t *testing.T) {
	const cases = 4000
	g := &tableGen{r: rand.New(rand.NewPCG(40, 2)), now: time.Date(2026, 12, 6, 12, 0, 0, 0, time.UTC)}
	kinds := map[string]int{}
	failed := 0
	for i := range cases {
		st := g.table(true)
		r := playRunAndPlan(t, st, g.now)
		if r.job != nil {
			kinds[r.job.Kind.String()]++
		} else {
			kinds["none"]++
		}
		if len(r.errs) > 0 {
			if failed++; failed <= 5 {
				t.Errorf("case %d:\n%s", i, strings.Join(r.errs, "\n"))
			}
		}
	}
	if failed > 0 {
		t.Errorf("%d of %d cases disagree", failed, cases)
	}
	// The generator must reach every decision, or agreement says little.
	for _, k := range []string{"none", "compact", "convert_equality_deletes", "rewrite_position_deletes", "sort", "expire_snapshots",
		"delete_expired_files", "rewrite_manifests", "remove_orphans"} {
		if kinds[k] == 0 {
			t.Errorf("no case where run picked %s (%v)", k, kinds)
		}
	}
	t.Logf("decisions over %d cases: %v", cases, kinds)
}

// Explain, as reactor plan runs it in a one-off process, is the decision
// of a reactor that has just started: a fresh planner's first evaluation
// of the same table starts the job plan shows first.
func TestExplainIsAFreshRun(t *testing.T) {
	const cases = 2000
	g := &tableGen{r: rand.New(rand.NewPCG(40, 3)), now: time.Date(2026, 12, 6, 12, 0, 0, 0, time.UTC)}
	for i := range cases {
		st := g.table(false)
		st.settings.OrphanListingInterval = 0 // a fresh run's first listing is at a random time
		plan := explain(st.view(), environment{}, g.now)
		if len(plan.Unknown) == 0 || !strings.Contains(strings.Join(plan.Unknown, "\n"), "cool-downs unknown in plan") {
			t.Fatalf("case %d: plan does not say what it cannot know: %q", i, plan.Unknown)
		}
		r := playRunAndPlan(t, st, g.now)
		want := r.plan
		want.Unknown, want.TableWide = plan.Unknown, plan.TableWide[:3:3]
		got := plan
		got.TableWide = plan.TableWide[:3:3]
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("case %d: plan of a fresh state differs from the planner's outlook:\nplan    %+v\noutlook %+v", i, got, want)
		}
		if len(r.errs) > 0 {
			t.Fatalf("case %d:\n%s", i, strings.Join(r.errs, "\n"))
		}
	}
}

// Named cases of the property, each a way plan and run once disagreed.
func TestPlanShowsWhatRunDoesCases(t *testing.T) {
	now := time.Date(2026, 12, 6, 12, 0, 0, 0, time.UTC)
	base := func(setup func(set *thresholds.Effective)) *tableState {
		set := thresholds.Default().For("db.t", nil)
		set.TargetFileSize, set.SmallFileSize = 1<<20, 3<<18
		set.SmallFileCount, set.MinInputFiles = 3, 2
		set.QuietPeriod, set.MaxQuietWait, set.Cooldown = time.Second, 0, time.Minute
		set.SnapshotCount, set.OrphanListingInterval = 0, 0
		if setup != nil {
			setup(&set)
		}
		st := &tableState{table: tablename.MustParseName("db.t"), settings: set}
		st.counters.sizes = sizesOf(set)
		st.counters.partitions = map[string]*partitionState{}
		st.counters.snapshotID = 7
		st.snapshots = snapshotSummary{timesMs: []int64{now.Add(-26 * time.Second).UnixMilli()}, refHeads: []bool{true}, ids: []int64{7}}
		return st
	}
	smallFiles := func(st *tableState, key string, n int, lastWrite time.Time) *partitionState {
		ps := &partitionState{Key: key, values: compactValues(map[int]any{1000: key})}
		ps.DataFiles, ps.SmallFiles, ps.LastWrite = n, n, lastWrite
		for range n {
			ps.SmallBytes += 1000
			ps.Tiers[jobs.TiersOf(st.settings).Of(1000)]++
		}
		ps.Bytes = ps.SmallBytes
		st.counters.partitions[key] = ps
		return ps
	}
	for _, tc := range []struct {
		name  string
		state func() *tableState
		want  jobkind.Kind // 0: nothing starts
		check func(t *testing.T, r *runAndPlan)
	}{
		{name: "retain_last holds the only snapshot older than snapshot_max_age",
			state: func() *tableState {
				st := base(func(set *thresholds.Effective) { set.SnapshotMaxAge, set.RetainLast = 4*time.Second, 1 })
				smallFiles(st, "category=a", 1, now.Add(-time.Hour))
				return st
			},
			check: func(t *testing.T, r *runAndPlan) {
				age := r.plan.TableWide[0]
				if age.Threshold != jobs.SnapshotMaxAge || age.Measured >= age.Limit || age.Over || !strings.Contains(age.Note, "retain_last 1") {
					t.Errorf("snapshot_max_age shows %d of %d (over %v, %q); want the measure of an expirable snapshot (none) and retain_last named",
						age.Measured, age.Limit, age.Over, age.Note)
				}
			}},
		{name: "retain_last keeps a branch head's elder, the next snapshot is measured",
			state: func() *tableState {
				st := base(func(set *thresholds.Effective) { set.SnapshotMaxAge, set.RetainLast = time.Hour, 1 })
				st.snapshots = snapshotSummary{timesMs: []int64{now.Add(-time.Minute).UnixMilli(), now.Add(-30 * time.Minute).UnixMilli(),
					now.Add(-3 * time.Hour).UnixMilli()}, refHeads: []bool{true, false, true}, ids: []int64{5, 6, 7}}
				return st
			},
			check: func(t *testing.T, r *runAndPlan) {
				if age := r.plan.TableWide[0]; age.Measured != 1800 || age.Over {
					t.Errorf("snapshot_max_age %+v; want the 30-minute-old snapshot measured, not the 3-hour-old branch head", age)
				}
			}},
		{name: "metadata over its bounds comes before a compaction",
			state: func() *tableState {
				st := base(func(set *thresholds.Effective) { set.SnapshotCount, set.RetainLast = 2, 1 })
				st.snapshots = snapshotSummary{timesMs: []int64{now.Add(-time.Minute).UnixMilli(), now.Add(-2 * time.Minute).UnixMilli(),
					now.Add(-3 * time.Minute).UnixMilli()}, refHeads: []bool{true, false, false}, ids: []int64{5, 6, 7}}
				smallFiles(st, "category=a", 5, now.Add(-time.Hour))
				return st
			},
			want: jobkind.ExpireSnapshots,
			check: func(t *testing.T, r *runAndPlan) {
				if len(r.plan.Jobs) != 2 || r.plan.Jobs[1].Kind != jobkind.Compact {
					t.Errorf("plan jobs %+v; want the compaction behind the expiry", r.plan.Jobs)
				}
			}},
		{name: "a cool-down holds a partition over its threshold",
			state: func() *tableState {
				st := base(nil)
				ps := smallFiles(st, "category=a", 5, now.Add(-time.Hour))
				ps.cooldownUntil = instantOf(now.Add(30 * time.Second))
				return st
			},
			check: func(t *testing.T, r *runAndPlan) {
				if pp := r.plan.Partitions[0]; pp.Due || !strings.Contains(pp.Wait, "cooling down") {
					t.Errorf("partition %+v; want it shown cooling down", pp)
				}
				if !r.plan.Next.Equal(now.Add(30 * time.Second)) {
					t.Errorf("next look %v, want the cool-down's end", r.plan.Next)
				}
			}},
		{name: "a running job holds the table",
			state: func() *tableState {
				st := base(nil)
				smallFiles(st, "category=a", 5, now.Add(-time.Hour))
				st.running = &jobs.Job{ID: "x", Kind: jobkind.RewriteManifests, Table: st.table}
				return st
			},
			check: func(t *testing.T, r *runAndPlan) {
				if len(r.plan.Held) == 0 || !strings.Contains(r.plan.Held[0], "rewrite_manifests job is running") {
					t.Errorf("held %q; want the running job named", r.plan.Held)
				}
			}},
		{name: "an expiry that found nothing waits for a commit",
			state: func() *tableState {
				st := base(func(set *thresholds.Effective) { set.SnapshotMaxAge, set.RetainLast = time.Minute, 1 })
				st.snapshots = snapshotSummary{timesMs: []int64{now.Add(-time.Minute).UnixMilli(), now.Add(-time.Hour).UnixMilli()},
					refHeads: []bool{true, false}, ids: []int64{6, 7}}
				st.expiry.settledAt = st.counters.snapshotID
				return st
			},
			check: func(t *testing.T, r *runAndPlan) {
				if len(r.plan.Held) == 0 || !strings.Contains(r.plan.Held[0], "found nothing to expire") {
					t.Errorf("held %q; want the settled expiry said", r.plan.Held)
				}
			}},
		{name: "a partition written past max_quiet_wait is compacted beside the writer",
			state: func() *tableState {
				st := base(func(set *thresholds.Effective) { set.QuietPeriod, set.MaxQuietWait = time.Minute, 10*time.Minute })
				ps := smallFiles(st, "category=a", 5, now.Add(-time.Second))
				ps.waitingSince = instantOf(now.Add(-11 * time.Minute))
				return st
			},
			want: jobkind.Compact,
			check: func(t *testing.T, r *runAndPlan) {
				if !strings.Contains(r.job.Reasons[0].Note, "max_quiet_wait") {
					t.Errorf("reason %+v; want max_quiet_wait named", r.job.Reasons[0])
				}
				if r.st.counters.partitions["category=a"].waitingSince != 0 {
					t.Error("run did not end the partition's quiet wait")
				}
			}},
		{name: "a partition still being written waits, and run records since when",
			state: func() *tableState {
				st := base(func(set *thresholds.Effective) { set.QuietPeriod, set.MaxQuietWait = time.Minute, 10*time.Minute })
				smallFiles(st, "category=a", 5, now.Add(-time.Second))
				return st
			},
			check: func(t *testing.T, r *runAndPlan) {
				if got := r.st.counters.partitions["category=a"].waitingSince.time(); !got.Equal(now) {
					t.Errorf("waiting since %v, want now", got)
				}
				if !r.plan.Next.Equal(now.Add(59 * time.Second)) {
					t.Errorf("next look %v, want the quiet period's end", r.plan.Next)
				}
			}},
		{name: "a settled kind passes to the next remedy",
			state: func() *tableState {
				st := base(func(set *thresholds.Effective) { set.DeleteMinInputFiles = 2 })
				ps := smallFiles(st, "category=a", 1, now.Add(-time.Hour))
				ps.DataFiles, ps.Rows, ps.Bytes = 4, 100000, 4<<20
				ps.PositionDeleteFiles, ps.PositionDeleteRows, ps.DeleteBytes = 4, 4, 4000
				ps.settledWrite, ps.settledKinds = instantOf(ps.LastWrite), ps.settledKinds.With(jobkind.RewritePositionDeletes)
				return st
			},
			want: jobkind.Compact},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := playRunAndPlan(t, tc.state(), now)
			for _, e := range r.errs {
				t.Error(e)
			}
			switch {
			case tc.want == 0 && r.job != nil:
				t.Errorf("run started %s (%s); want nothing", r.job.Kind, r.job.ReasonText())
			case tc.want != 0 && (r.job == nil || r.job.Kind != tc.want):
				t.Fatalf("run started %+v; want %s", r.job, tc.want)
			}
			if tc.check != nil {
				tc.check(t, r)
			}
		})
	}
}
