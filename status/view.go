package status

import (
	"fmt"
	"maps"
	"net/url"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/icereactor/reactor/events"
	"github.com/icereactor/reactor/jobs"
	"github.com/icereactor/reactor/planner"
	"github.com/icereactor/reactor/redact"
	"github.com/icereactor/reactor/thresholds"
)

// Bounds on what one page lists: a page stays readable and cheap with
// tables of many partitions and long partition lists.
const (
	maxPartitions    = 500
	maxJobPartitions = 6
	maxChecks        = 1500
)

// frame is what every page shows around its content.
type frame struct {
	Nav     string
	Refresh int // seconds; 0: none
	Replica string
	Now     string
	Content any
}

type failure struct{ Title, Message string }

// overview is /.
type overview struct {
	Tables                               []tableRow
	Unhealthy, Running, Queued, Failures int
}

// tableRow is one table on /. Its figures are formatted here: a page of
// 1,000 rows is mostly template actions, and a string is the cheapest
// value to escape.
type tableRow struct {
	Name, Href string
	Loaded     bool
	Healthy    bool
	Problems   []string
	// Files is "live / ideal".
	Files, Small, Tiny, Deletes, Snapshots, Oldest, Manifests string
	Owner                                                     string
	Last                                                      *lastJob
	Next                                                      []jobView
	// Due are the jobs the planner finds due while none is queued or
	// running (a cool-down or a job just finished holds them); Why says
	// why nothing is due when nothing is.
	Due []string
	Why string
}

// lastJob is a table's last finished job on /.
type lastJob struct {
	Kind, State, When, Error string
	Failed                   bool
}

// jobView is one job, rendered.
type jobView struct {
	ID, Kind, Table, Href string
	// State is queued, running, or the outcome of a finished job.
	State      string
	Failed     bool
	Partitions string
	Reasons    []string
	Scheduled  string
	Started    string
	Finished   string
	Duration   string
	Counts     []string
	// Refused: what the deletion rule kept and the records it refused.
	Refused   []string
	Attempts  int
	Conflicts int
	Backend   string
	Error     string
}

func tableHref(name string) string { return "/tables/" + url.PathEscape(name) }

// ago renders an instant as UTC time and age.
func ago(t, now time.Time) string {
	if t.IsZero() {
		return ""
	}
	d := now.Sub(t)
	switch {
	case d < 0:
		return t.UTC().Format("15:04:05") + " (in " + roundDur(-d) + ")"
	case d > 24*time.Hour:
		return t.UTC().Format("2006-01-02 15:04:05")
	}
	return t.UTC().Format("15:04:05") + " (" + roundDur(d) + " ago)"
}

func roundDur(d time.Duration) string {
	switch {
	case d < time.Second:
		return d.Round(time.Millisecond).String()
	case d < time.Minute:
		return d.Round(100 * time.Millisecond).String()
	}
	return d.Round(time.Second).String()
}

func size(n int64) string { return thresholds.Size(n).String() }

// ideal is the data files the partitions would hold at the target size:
// ceil(bytes/target) per partition, as `reactor demo` counts them.
func ideal(parts []planner.PartitionCounters, target int64) int {
	if target <= 0 {
		return 0
	}
	n := 0
	for _, p := range parts {
		n += int((p.Bytes + target - 1) / target)
	}
	return n
}

func reasonText(r events.JobReason) string {
	return jobs.Reason{Partition: r.Partition, Threshold: jobs.Threshold(r.Threshold), Measured: r.Measured, Limit: r.Limit, Note: r.Note}.String()
}

func viewJob(j Job, now time.Time) jobView {
	v := jobView{ID: j.JobID, Kind: j.Kind, Table: j.Table, Href: tableHref(j.Table), Backend: j.Backend,
		Attempts: j.Attempts, Conflicts: j.Conflicts, Scheduled: ago(j.ScheduledAt, now), Started: ago(j.StartedAt, now)}
	parts := j.Partitions
	if len(parts) > maxJobPartitions {
		v.Partitions = strings.Join(parts[:maxJobPartitions], ", ") + fmt.Sprintf(" and %d more", len(parts)-maxJobPartitions)
	} else {
		v.Partitions = strings.Join(parts, ", ")
	}
	for i, r := range j.Reasons {
		if i == maxJobPartitions {
			v.Reasons = append(v.Reasons, fmt.Sprintf("and %d more", len(j.Reasons)-i))
			break
		}
		v.Reasons = append(v.Reasons, reasonText(r))
	}
	switch {
	case j.Terminal():
		v.State, v.Failed = j.Outcome, j.Phase == events.JobFailed
		v.Finished = ago(j.Time, now)
		v.Duration = roundDur(time.Duration(j.DurationSeconds * float64(time.Second)))
		// Job errors quote what failed: URLs, paths, catalog replies.
		v.Error = redact.String(j.Error)
		keys := make([]string, 0, len(j.Counts))
		for k := range j.Counts {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			if j.Counts[k] != 0 {
				v.Counts = append(v.Counts, fmt.Sprintf("%s %d", k, j.Counts[k]))
			}
		}
		for _, rule := range slices.Sorted(maps.Keys(j.RefusedDeletions)) {
			v.Refused = append(v.Refused, fmt.Sprintf("deletions refused (%s) %d", rule, j.RefusedDeletions[rule]))
		}
		for _, reason := range slices.Sorted(maps.Keys(j.RefusedRecords)) {
			v.Refused = append(v.Refused, fmt.Sprintf("records refused (%s) %d", reason, j.RefusedRecords[reason]))
		}
	case j.Running():
		v.State, v.Duration = "running", roundDur(now.Sub(j.StartedAt))
	default:
		v.State = "queued"
	}
	return v
}

func buildOverview(src Source, now time.Time) overview {
	names := src.Tables()
	queued := src.Jobs()
	owner := src.Owners()
	active := map[string][]jobView{}
	var out overview
	for _, j := range queued.Active {
		v := viewJob(j, now)
		active[j.Table] = append(active[j.Table], v)
		if j.Running() {
			out.Running++
		} else {
			out.Queued++
		}
	}
	out.Failures = len(queued.Failures)
	out.Tables = make([]tableRow, 0, len(names))
	for _, name := range names {
		row := tableRow{Name: name, Href: tableHref(name), Owner: owner(name), Next: active[name]}
		if h, ok := src.Health(name); ok {
			_, parts := src.TableCounters(name)
			row.Loaded, row.Healthy, row.Problems = true, h.Healthy, h.Problems
			row.Files = strconv.Itoa(h.DataFiles) + " / " + strconv.Itoa(ideal(parts, h.TargetFileSize))
			row.Small, row.Tiny, row.Deletes = strconv.Itoa(h.SmallFiles), strconv.Itoa(h.TinyFiles), strconv.Itoa(h.DeleteFiles)
			row.Snapshots, row.Manifests = strconv.Itoa(h.Snapshots), strconv.Itoa(h.DataManifests)
			if h.Snapshots > 0 {
				row.Oldest = roundDur(h.OldestSnapshotAge)
			}
			if !h.Healthy {
				out.Unhealthy++
			}
		}
		if len(row.Next) == 0 {
			if plan, ok := src.Outlook(name); ok {
				row.Due, row.Why = outlook(plan)
			}
		}
		if j, ok := queued.Last[name]; ok {
			row.Last = &lastJob{Kind: j.Kind, State: j.Outcome, Failed: j.Phase == events.JobFailed,
				When:  ago(j.Time, now) + ", took " + roundDur(time.Duration(j.DurationSeconds*float64(time.Second))),
				Error: redact.String(j.Error)}
		}
		out.Tables = append(out.Tables, row)
	}
	return out
}

// jobsPage is /jobs.
type jobsPage struct {
	Running, Queued, Recent, Failures []jobView
}

func buildJobs(src Source, now time.Time) jobsPage {
	queued := src.Jobs()
	var out jobsPage
	for _, j := range queued.Active {
		if j.Running() {
			out.Running = append(out.Running, viewJob(j, now))
		} else {
			out.Queued = append(out.Queued, viewJob(j, now))
		}
	}
	for _, j := range queued.Recent {
		out.Recent = append(out.Recent, viewJob(j, now))
	}
	for _, j := range queued.Failures {
		out.Failures = append(out.Failures, viewJob(j, now))
	}
	return out
}

// tablePage is /tables/<name>.
type tablePage struct {
	// Polled is the polling safety net's last check: outcome and when.
	Polled         string
	Name, Owner    string
	Loaded         bool
	SnapshotID     int64
	Health         planner.Health
	OldestAge      string
	Ideal          int
	Partitions     []partitionRow
	MorePartitions int
	Active, Recent []jobView
	// LastOfKind is the last finished job of each kind.
	LastOfKind []jobView
	Plan       *planView
	PlanErr    string
	Pending    []pendingRow
	PendingErr string
}

type partitionRow struct {
	Key                                    string
	Files, Ideal, Small, Tiny, Sorted      int
	PosDeletes, EqDeletes, DeletionVectors int
	Bytes, LastWrite                       string
	Rows, DeleteRows                       int64
}

type planView struct {
	SnapshotID                       int64
	Target, TargetSource, SmallBelow string
	Checks                           []checkRow
	MoreChecks                       int
	TableWide                        []checkRow
	Jobs                             []plannedRow
}

type checkRow struct {
	Partition, Threshold, Unit, Status, Note string
	Measured, Limit                          int64
	Over, Due                                bool
}

type plannedRow struct {
	Kind, Partitions, Input, Backend, BackendWhy string
	Reasons                                      []string
}

type pendingRow struct {
	Location, Due, JobID string
	Files                int
	IsDue, Intent        bool
	// Refused: why the batch is not reactor's own (never acted on).
	Refused string
}

func buildTable(src Source, name string, in Inspection, inspectErr error, now time.Time) tablePage {
	p := tablePage{Name: name, Owner: src.Owners()(name)}
	if at, outcome, ok := src.LastPoll(name); ok {
		p.Polled = outcome + ", " + ago(at, now)
	}
	snap, parts := src.TableCounters(name)
	p.SnapshotID = snap
	if h, ok := src.Health(name); ok {
		p.Loaded, p.Health = true, h
		p.Ideal = ideal(parts, h.TargetFileSize)
		if h.Snapshots > 0 {
			p.OldestAge = roundDur(h.OldestSnapshotAge)
		}
	}
	for i, c := range parts {
		if i == maxPartitions {
			p.MorePartitions = len(parts) - i
			break
		}
		p.Partitions = append(p.Partitions, partitionRow{Key: c.Key, Files: c.DataFiles,
			Ideal: ideal(parts[i:i+1], p.Health.TargetFileSize), Small: c.SmallFiles, Tiny: c.TinyFiles, Sorted: c.SortedFiles,
			PosDeletes: c.PositionDeleteFiles, EqDeletes: c.EqualityDeleteFiles, DeletionVectors: c.DeletionVectors,
			Bytes: size(c.Bytes), Rows: c.Rows, DeleteRows: c.DeleteRows(), LastWrite: ago(c.LastWrite, now)})
	}
	for _, j := range src.Jobs().Active {
		if j.Table == name {
			p.Active = append(p.Active, viewJob(j, now))
		}
	}
	for _, j := range src.TableJobs(name) {
		p.Recent = append(p.Recent, viewJob(j, now))
	}
	for _, j := range src.TableLastJobs(name) {
		p.LastOfKind = append(p.LastOfKind, viewJob(j, now))
	}
	if inspectErr != nil {
		p.PlanErr = redact.Error(inspectErr).Error()
		return p
	}
	p.Plan = viewPlan(in.Plan)
	if in.PendingErr != nil {
		p.PendingErr = redact.Error(in.PendingErr).Error()
	}
	for _, b := range in.Pending {
		p.Pending = append(p.Pending, pendingRow{Location: redact.String(b.Location), Due: ago(b.Due, now), JobID: b.JobID,
			Files: b.Files, IsDue: b.Intent || !now.Before(b.Due), Intent: b.Intent, Refused: b.Refused})
	}
	return p
}

// viewPlan lays out planner.Explain's plan as `reactor plan` prints it.
func viewPlan(pl planner.Plan) *planView {
	v := &planView{SnapshotID: pl.SnapshotID, Target: size(pl.Settings.TargetFileSize),
		TargetSource: pl.Settings.TargetFileSizeSource, SmallBelow: size(pl.Settings.SmallFileSize)}
	n := 0
	for _, pp := range pl.Partitions {
		for _, c := range pp.Checks {
			if n == maxChecks {
				v.MoreChecks++
				continue
			}
			n++
			st := "ok"
			switch {
			case c.Over && pp.Due:
				st = "DUE"
			case c.Over:
				st = "over, waiting: " + pp.Wait
			}
			v.Checks = append(v.Checks, checkRow{Partition: pp.Key, Threshold: string(c.Threshold), Unit: c.Unit, Status: st,
				Note: c.Note, Measured: c.Measured, Limit: c.Limit, Over: c.Over, Due: c.Over && pp.Due})
		}
	}
	for _, c := range pl.TableWide {
		st := "ok"
		if c.Over {
			st = "DUE"
		}
		v.TableWide = append(v.TableWide, checkRow{Threshold: string(c.Threshold), Unit: c.Unit, Status: st, Note: c.Note,
			Measured: c.Measured, Limit: c.Limit, Over: c.Over, Due: c.Over})
	}
	for _, j := range pl.Jobs {
		r := plannedRow{Kind: j.Kind.String(), Partitions: strings.Join(j.Partitions, ", "),
			Input: fmt.Sprintf("%d files, %s", j.InputFiles, size(j.InputBytes)), Backend: j.Backend, BackendWhy: j.BackendWhy}
		for _, reason := range j.Reasons {
			r.Reasons = append(r.Reasons, reason.String())
		}
		v.Jobs = append(v.Jobs, r)
	}
	return v
}
