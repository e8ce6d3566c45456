package planner

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"time"

	"github.com/apache/iceberg-go/table"

	"github.com/icereactor/reactor/jobkind"
	"github.com/icereactor/reactor/jobs"
	"github.com/icereactor/reactor/tablename"
	"github.com/icereactor/reactor/thresholds"
)

// Check is one threshold measured against its limit.
type Check struct {
	Threshold jobs.Threshold `json:"threshold"`
	Measured  int64          `json:"measured"`
	Limit     int64          `json:"limit"`
	// Unit says how to read Measured and Limit: files, manifests,
	// snapshots or seconds.
	Unit string `json:"unit"`
	// Over is true when the measured value reached the limit.
	Over bool   `json:"over"`
	Note string `json:"note,omitempty"`
}

// PartitionPlan is what the planner sees in one partition.
type PartitionPlan struct {
	Key      string   `json:"partition"`
	Counters Counters `json:"counters"`
	Checks   []Check  `json:"checks"`
	// Due is true when the partition would be compacted now; Wait says
	// why one over its threshold would not be yet.
	Due  bool   `json:"due"`
	Wait string `json:"wait,omitempty"`
}

// Plan is `reactor plan TABLE` and the status page's outlook: every
// threshold's measured value and limit for the table's current snapshot,
// and the picker's decision (pick.go): the job reactor starts now first,
// then the jobs due behind it, in the order it would run them.
type Plan struct {
	Table      string               `json:"table"`
	SnapshotID int64                `json:"snapshot_id"`
	Settings   thresholds.Effective `json:"settings"`
	Partitions []PartitionPlan      `json:"partitions"`
	TableWide  []Check              `json:"table_checks"`
	Jobs       []PlannedJob         `json:"jobs"`
	// Held says what is due but waits, and why (the table's running job,
	// a cool-down, a settled expiry).
	Held []string `json:"held,omitempty"`
	// Next is when reactor looks at the table again when nothing starts
	// now (a quiet period ending, a cool-down, the next expirable
	// snapshot); zero when only a commit can change the answer.
	Next time.Time `json:"next,omitzero"`
	// Unknown says what the plan could not know: reactor plan runs as a
	// one-off process with no history of reactor's jobs.
	Unknown []string `json:"unknown,omitempty"`
}

// PlannedJob is a job the picker found due.
type PlannedJob struct {
	Kind       jobkind.Kind  `json:"kind"`
	Partitions []string      `json:"partitions,omitempty"`
	Reasons    []jobs.Reason `json:"reasons"`
	// InputFiles and InputBytes are the job's input (see jobs.Job).
	InputFiles int   `json:"input_files"`
	InputBytes int64 `json:"input_bytes"`
	// Backend and BackendWhy say where the job would run and why; Explain
	// leaves them empty for a caller that knows the backends (reactor
	// plan) to fill in.
	Backend    string `json:"backend,omitempty"`
	BackendWhy string `json:"backend_why,omitempty"`

	job jobs.Job
}

// Job is the job a running reactor would schedule for it (without an id).
func (j PlannedJob) Job() jobs.Job { return j.job }

// Explain reads tbl's current snapshot (every live manifest once) and
// reports, without scheduling anything, what the planner measures and which
// jobs it would schedule now: the picker's decision (pick.go) for a reactor
// that has just started. It runs as a one-off process, so what a running
// reactor learns from its own jobs is not known here and Plan.Unknown says
// so: cool-downs, a job already running, expiry's pending deletions, the
// tracked orphan candidates (orphan cleanup needs a listing: reactor
// orphans --dry-run).
func Explain(ctx context.Context, tbl *table.Table, cfg *thresholds.Config, now time.Time) (Plan, error) {
	name := tablename.Format(tbl.Identifier())
	set := cfg.For(name, tbl.Properties())
	var tc tableCounters
	if _, err := tc.advance(ctx, tbl, sizesOf(set)); err != nil {
		return Plan{}, fmt.Errorf("read %s: %w", name, err)
	}
	v := tableView{table: tablename.Of(tbl.Identifier()), counters: &tc, snapshots: summarizeSnapshots(tbl.Metadata()), settings: set}
	return explain(v, environment{}, now), nil
}

// Explain is the package's Explain with what this planner holds of the
// table's jobs (a running reactor's status page): the picker decides with
// the running job, the cool-downs, settled kinds and quiet waits of the
// partitions it knows by key, the table-wide jobs' state and the tracked
// files, so the page shows what run decides for the snapshot it read. A
// table the planner does not hold yet is explained as plan explains it.
func (p *Planner) Explain(ctx context.Context, tbl *table.Table, cfg *thresholds.Config, now time.Time) (Plan, error) {
	name := tablename.Format(tbl.Identifier())
	set := cfg.For(name, tbl.Properties())
	var tc tableCounters
	if _, err := tc.advance(ctx, tbl, sizesOf(set)); err != nil {
		return Plan{}, fmt.Errorf("read %s: %w", name, err)
	}
	v := tableView{table: tablename.Of(tbl.Identifier()), counters: &tc, snapshots: summarizeSnapshots(tbl.Metadata()), settings: set}
	p.mu.Lock()
	st, ok := p.tables[name]
	p.mu.Unlock()
	if !ok {
		return explain(v, environment{}, now), nil
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	for key, ps := range tc.partitions {
		if held, ok := st.counters.partitions[key]; ok {
			ps.inJob, ps.cooldownUntil, ps.waitingSince, ps.quietMerged = held.inJob, held.cooldownUntil, held.waitingSince, held.quietMerged
			ps.settledKinds, ps.settledWrite = held.settledKinds, held.settledWrite
		}
	}
	return explain(v, st.environment(), now), nil
}

// unknownInPlan lists what a plan made without a running reactor's
// history cannot know (Plan.Unknown).
func unknownInPlan() []string {
	return []string{
		"cool-downs unknown in plan: a running reactor may hold a due job until its cool-down ends",
		"running job unknown in plan: a running reactor starts nothing on a table while its job runs",
		"pending deletions unknown in plan: the files of past expiries are deleted by the running reactor once min_reader_margin has passed",
		"orphan cleanup not assessed in plan: it needs a listing (reactor orphans --dry-run)",
	}
}

// explain renders the picker's decision for the table view and
// environment as a Plan: the job it starts now first, then those due
// behind it, in the order reactor runs them.
func explain(v tableView, env environment, now time.Time) Plan {
	d := pick(v, env, now, true)
	plan := Plan{Table: v.table.String(), SnapshotID: v.counters.snapshotID, Settings: v.settings,
		Partitions: d.partitions, TableWide: d.tableWide, Held: d.held}
	if !env.known {
		plan.Unknown = unknownInPlan()
	}
	if d.job == nil && env.running == nil {
		plan.Next = d.wake
	}
	due := d.later
	if d.job != nil {
		due = append([]jobs.Job{*d.job}, d.later...)
	}
	for _, j := range due {
		plan.Jobs = append(plan.Jobs, PlannedJob{Kind: j.Kind, Partitions: j.PartitionKeys(), Reasons: j.Reasons,
			InputFiles: j.InputFiles, InputBytes: j.InputBytes, job: j})
	}
	return plan
}

// sortedPartitions lists the partitions by key.
func (tc *tableCounters) sortedPartitions() []*partitionState {
	out := make([]*partitionState, 0, len(tc.partitions))
	for _, ps := range tc.partitions {
		out = append(out, ps)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out
}

// Tables lists the tables the planner holds state for, sorted.
func (p *Planner) Tables() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make([]string, 0, len(p.tables))
	for name := range p.tables {
		out = append(out, name)
	}
	slices.Sort(out)
	return out
}

// Outlook is the picker's decision (pick.go) over what the planner holds of
// a table — its counters, snapshot summary and settings, and the state
// reactor run decides from: the running job, cool-downs, settled kinds,
// quiet waits, pending deletions, tracked files — with no I/O and no
// change: what run decides at now, cheap enough for a status page to ask
// of every table on every view. ok is false for a table the planner does
// not hold or has not read yet.
func (p *Planner) Outlook(name string, now time.Time) (plan Plan, ok bool) {
	p.mu.Lock()
	st, ok := p.tables[name]
	p.mu.Unlock()
	if !ok {
		return Plan{}, false
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.counters.partitions == nil {
		return Plan{}, false
	}
	return explain(st.view(), st.environment(), now), true
}
