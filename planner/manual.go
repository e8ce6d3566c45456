package planner

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/apache/iceberg-go/table"
	"github.com/google/uuid"

	"github.com/icereactor/reactor/jobkind"
	"github.com/icereactor/reactor/jobs"
	"github.com/icereactor/reactor/tablename"
	"github.com/icereactor/reactor/thresholds"
)

// ManualOptions are what an operator chooses for a one-shot job instead of
// the thresholds.
type ManualOptions struct {
	// Partitions limits compaction to these partition keys
	// ("category=books"); empty means every partition.
	Partitions []string
	// OlderThan overrides the expiry horizon (expire_snapshots) or the
	// orphan margin (remove_orphans); 0 keeps the configured one.
	OlderThan time.Duration
	// RetainLast overrides retain_last for expiry; 0 keeps the configured one.
	RetainLast int
	// DryRun: plan and count only.
	DryRun bool
	// OrphanDelete lets remove_orphans delete (when not a dry run).
	OrphanDelete bool
	// Strategy and SortOrder override the thresholds' for a sort job
	// (empty: keep them).
	Strategy  thresholds.Strategy
	SortOrder string
}

// ManualJob builds the job a one-shot command runs on tbl: the job the
// scheduler would build, for what the operator asked instead of what the
// thresholds select. The executor applies every safety rule to it as to a
// scheduled job (min_reader_margin, orphan margins, commit validation).
func ManualJob(ctx context.Context, tbl *table.Table, cfg *thresholds.Config, kind jobkind.Kind, opts ManualOptions, now time.Time) (jobs.Job, error) {
	t := tablename.Of(tbl.Identifier())
	set := cfg.For(t.String(), tbl.Properties())
	job := jobs.Job{
		ID: uuid.NewString(), Kind: kind, Table: t, Settings: set,
		ScheduledAt: now, Priority: jobs.PriorityOf(kind, nil), DryRun: opts.DryRun,
	}
	if s := tbl.CurrentSnapshot(); s != nil {
		job.BaseSnapshotID = s.SnapshotID
	}
	if kind == jobkind.Compact {
		// Asked for now: the tier rule's count trigger is min_input_files.
		job.Settings.SmallFileCount = job.Settings.MinInputFiles
	}
	manual := jobs.Reason{Partition: jobs.TableWide, Threshold: jobs.Manual}
	switch kind {
	case jobkind.Compact, jobkind.RewritePositionDeletes, jobkind.ConvertEqualityDeletes, jobkind.Sort:
		if kind == jobkind.Sort {
			if opts.Strategy != "" {
				job.Settings.Strategy = opts.Strategy
			}
			if opts.SortOrder != "" {
				job.Settings.SortOrder = opts.SortOrder
			}
			job.SortOrder = job.Settings.SortOrder
		}
		var tc tableCounters
		if _, err := tc.advance(ctx, tbl, sizesOf(set)); err != nil {
			return jobs.Job{}, fmt.Errorf("read %s: %w", t, err)
		}
		want, missing := map[string]bool{}, map[string]bool{}
		for _, k := range opts.Partitions {
			want[k], missing[k] = true, true
		}
		var known []string
		for _, ps := range tc.sortedPartitions() {
			known = append(known, ps.Key)
			if len(want) > 0 && !want[ps.Key] {
				continue
			}
			delete(missing, ps.Key)
			reason := jobs.Reason{Partition: ps.Key, Threshold: jobs.Manual,
				Measured: int64(ps.SmallFiles), Limit: int64(set.MinInputFiles),
				Note: fmt.Sprintf("%s, rewritten in groups of at least min_input_files %d", plural(int64(ps.SmallFiles), "small file"), set.MinInputFiles)}
			if kind == jobkind.ConvertEqualityDeletes {
				if ps.EqualityDeleteFiles == 0 && len(opts.Partitions) == 0 {
					continue
				}
				reason.Measured, reason.Limit = int64(ps.EqualityDeleteFiles), 1
				reason.Note = plural(int64(ps.EqualityDeleteFiles), "equality delete file")
			}
			if kind == jobkind.RewritePositionDeletes {
				// Deletion vectors only exist on v3, where the rewrite
				// merges duplicates and drops dangling ones.
				if ps.PositionDeleteFiles == 0 && ps.DeletionVectors == 0 && len(opts.Partitions) == 0 {
					continue
				}
				reason.Measured, reason.Limit = int64(ps.PositionDeleteFiles), int64(set.DeleteMinInputFiles)
				reason.Note = fmt.Sprintf("%s, merged from delete_min_input_files %d", plural(int64(ps.PositionDeleteFiles), "position-delete file"), set.DeleteMinInputFiles)
			}
			job.Partitions = append(job.Partitions, ps.partition())
			job.Reasons = append(job.Reasons, reason)
		}
		for k := range missing {
			return jobs.Job{}, fmt.Errorf("%w: %s has no live files in partition %q (partitions: %s)",
				ErrUnknownPartition, t, k, strings.Join(known, ", "))
		}
	case jobkind.ExpireSnapshots:
		// Any horizon is safe here: files expiry unlinks wait out
		// min_reader_margin before they are deleted, however young the
		// snapshots were.
		job.ExpireOlderThan, job.ExpireRetainLast = set.SnapshotMaxAge, set.RetainLast
		if opts.OlderThan > 0 {
			job.ExpireOlderThan = opts.OlderThan
		}
		if opts.RetainLast > 0 {
			job.Settings.RetainLast, job.ExpireRetainLast = opts.RetainLast, opts.RetainLast
		}
		manual.Limit = int64(job.ExpireOlderThan / time.Second)
		manual.Note = fmt.Sprintf("snapshots older than %s beyond the newest %d", seconds(manual.Limit), job.ExpireRetainLast)
		job.Reasons = []jobs.Reason{manual}
	case jobkind.RemoveOrphans:
		if opts.OlderThan > 0 {
			// The built-in floor for a manual run, or the table's own
			// floor if the configuration raised it.
			if floor := max(thresholds.DefaultOrphanMarginFloor, set.OrphanMarginFloor); opts.OlderThan < floor {
				return jobs.Job{}, fmt.Errorf("%w: older than %s is below the orphan margin floor %s: a file that young may belong to a commit in progress",
					ErrUnsafeOption, opts.OlderThan, floor)
			}
			job.Settings.OrphanMargin = opts.OlderThan
		}
		job.Settings.OrphanDelete = opts.OrphanDelete && !opts.DryRun
		job.OrphanSource = jobs.OrphansFromListing
		manual.Limit = int64(job.Settings.OrphanMargin / time.Second)
		manual.Note = "files older than " + seconds(manual.Limit)
		job.Reasons = []jobs.Reason{manual}
	case jobkind.RewriteManifests:
		job.Reasons = []jobs.Reason{manual}
	default:
		return jobs.Job{}, fmt.Errorf("no one-shot form for job kind %q", kind)
	}
	return job, nil
}

// Errors ManualJob returns for what the operator asked.
var (
	ErrUnknownPartition = errors.New("unknown partition")
	ErrUnsafeOption     = errors.New("unsafe option")
)

// plural is "1 file", "2 files" (as jobs.Reason words them).
func plural(n int64, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}

// seconds is a count of seconds as a short duration: 45s, 1m12s, 72h.
func seconds(n int64) string {
	s := (time.Duration(n) * time.Second).String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}
