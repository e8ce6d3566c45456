package sparkcall

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/apache/iceberg-go/table"

	"github.com/icereactor/reactor/jobkind"
	"github.com/icereactor/reactor/jobs"
	"github.com/icereactor/reactor/sortorder"
)

// Errors Render wraps.
var (
	// ErrNoSparkForm: the job kind has no Spark procedure
	// (delete_expired_files: Spark's expiry deletes at once).
	ErrNoSparkForm = errors.New("no Spark procedure for this job")
	// ErrNotExpressible: the job, or part of it, cannot be said faithfully
	// as a Spark procedure call.
	ErrNotExpressible = errors.New("not expressible as a Spark procedure call")
)

// Procedure names, as called under <catalog>.system.
const (
	RewriteDataFiles           = "rewrite_data_files"
	RewritePositionDeleteFiles = "rewrite_position_delete_files"
	ExpireSnapshots            = "expire_snapshots"
	RemoveOrphanFiles          = "remove_orphan_files"
	RewriteManifests           = "rewrite_manifests"
)

// ResultColumns returns the columns a procedure returns (as the seeds
// document them, docs/design.md#origins; checked against Iceberg 1.12's
// Spark runtime by interop/run), or nil for an unknown procedure.
func ResultColumns(procedure string) []string {
	return resultColumns()[procedure]
}

// resultColumns is built per call so that no caller can change the table.
func resultColumns() map[string][]string {
	return map[string][]string{
		RewriteDataFiles: {"rewritten_data_files_count", "added_data_files_count", "rewritten_bytes_count",
			"failed_data_files_count", "removed_delete_files_count"},
		RewritePositionDeleteFiles: {"rewritten_delete_files_count", "added_delete_files_count",
			"rewritten_bytes_count", "added_bytes_count"},
		ExpireSnapshots: {"deleted_data_files_count", "deleted_position_delete_files_count",
			"deleted_equality_delete_files_count", "deleted_manifest_files_count",
			"deleted_manifest_lists_count", "deleted_statistics_files_count"},
		RemoveOrphanFiles: {"orphan_file_location"},
		RewriteManifests:  {"rewritten_manifests_count", "added_manifests_count"},
	}
}

// Options say where and when the statement runs.
type Options struct {
	// Catalog is the Spark catalog the table is registered in
	// (spark.sql.catalog.<Catalog>); required.
	Catalog string
	// Now is the moment older_than horizons are counted back from; zero
	// means the job's ScheduledAt. Executing the statement later only makes
	// the horizon relatively older, never younger.
	Now time.Time
}

// Statement is one rendered procedure call.
type Statement struct {
	// Procedure is the procedure name (RewriteDataFiles, ...).
	Procedure string `json:"procedure"`
	// SQL is the whole CALL statement, without a trailing semicolon.
	SQL string `json:"sql"`
	// Columns are the result columns the procedure returns.
	Columns []string `json:"columns"`
	// Partitions are the job's partition keys the statement covers (a
	// compaction with delete-triggered partitions needs two statements).
	Partitions []string `json:"partitions,omitempty"`
}

// Render renders job as the Spark procedure calls that do the same work:
// one statement, or two for a compaction that mixes partitions whose
// deletes must all be applied with ordinary ones (the options differ and
// apply to a whole call), or none for a compaction or position-delete job
// that names no partition (nothing to do). meta is the table's metadata;
// compaction and position-delete jobs need it to turn partition values into
// a where predicate, the others accept nil.
func Render(job jobs.Job, meta table.Metadata, opts Options) ([]Statement, error) {
	if opts.Catalog == "" {
		return nil, errors.New("sparkcall: no Spark catalog name")
	}
	now := opts.Now
	if now.IsZero() {
		now = job.ScheduledAt
	}
	r := renderer{job: job, meta: meta, catalog: opts.Catalog, now: now}
	var (
		out []Statement
		err error
	)
	switch job.Kind {
	case jobkind.Compact, jobkind.Sort:
		out, err = r.compact()
	case jobkind.RewritePositionDeletes:
		out, err = r.rewritePositionDeletes()
	case jobkind.ExpireSnapshots:
		out, err = r.expireSnapshots()
	case jobkind.RemoveOrphans:
		out, err = r.removeOrphans()
	case jobkind.RewriteManifests:
		out, err = r.rewriteManifests()
	case jobkind.DeleteExpiredFiles:
		err = fmt.Errorf("%w: %s (Spark's expire_snapshots deletes the files it makes unreachable at once)", ErrNoSparkForm, job.Kind)
	default:
		err = fmt.Errorf("%w: no Spark form is rendered for job kind %q", ErrNoSparkForm, job.Kind)
	}
	if err != nil {
		return nil, fmt.Errorf("sparkcall: %s job on %s: %w", job.Kind, tableName(job), err)
	}
	return out, nil
}

func tableName(job jobs.Job) string {
	if job.Table.String() != "" {
		return job.Table.String()
	}
	return strings.Join(job.Table.Ident(), ".")
}

type renderer struct {
	job     jobs.Job
	meta    table.Metadata
	catalog string
	now     time.Time
}

// arg is one named procedure argument with its rendered value.
type arg struct{ name, value string }

// call renders CALL `catalog`.system.procedure(table => '...', args...).
func (r renderer) call(procedure string, args ...arg) (Statement, error) {
	cat, err := QuoteIdent(r.catalog)
	if err != nil {
		return Statement{}, err
	}
	if len(r.job.Table.Ident()) == 0 {
		return Statement{}, fmt.Errorf("%w: the job names no table", ErrNotExpressible)
	}
	// The table argument is a string Spark parses as a multipart
	// identifier; naming the catalog first keeps a namespace that happens
	// to be called like a catalog from being taken for one.
	ident, err := QuoteMultipart(append([]string{r.catalog}, r.job.Table.Ident()...)...)
	if err != nil {
		return Statement{}, err
	}
	var b strings.Builder
	fmt.Fprintf(&b, "CALL %s.system.%s(table => %s", cat, procedure, mustQuoteString(ident))
	for _, a := range args {
		fmt.Fprintf(&b, ", %s => %s", a.name, a.value)
	}
	b.WriteString(")")
	return Statement{Procedure: procedure, SQL: b.String(), Columns: ResultColumns(procedure)}, nil
}

// option is one entry of an options map.
type option struct{ key, value string }

func optionsArg(opts []option) arg {
	parts := make([]string, 0, 2*len(opts))
	for _, o := range opts {
		parts = append(parts, mustQuoteString(o.key), mustQuoteString(o.value))
	}
	return arg{"options", "map(" + strings.Join(parts, ", ") + ")"}
}

func itoa[T int | int64](n T) string { return strconv.FormatInt(int64(n), 10) }

// where renders the where argument selecting exactly partitions (OR of each
// partition's predicate); ok is false when they cover the whole table.
func (r renderer) where(partitions []jobs.Partition) (a arg, ok bool, err error) {
	if r.meta == nil {
		return arg{}, false, errors.New("sparkcall: the table metadata is needed to render partitions")
	}
	terms := make([]string, 0, len(partitions))
	for _, p := range partitions {
		pred, err := partitionPredicate(r.catalog, r.meta, p)
		if err != nil {
			return arg{}, false, err
		}
		if pred == "" {
			return arg{}, false, nil // this partition is the whole table
		}
		terms = append(terms, pred)
	}
	expr := terms[0]
	if len(terms) > 1 {
		expr = "(" + strings.Join(terms, ") OR (") + ")"
	}
	return arg{"where", mustQuoteString(expr)}, true, nil
}

func (r renderer) noDryRun(procedure string) error {
	if r.job.DryRun {
		return fmt.Errorf("%w: a dry run (Spark's %s has no dry_run argument)", ErrNotExpressible, procedure)
	}
	return nil
}

// compact renders rewrite_data_files with the bin-pack options reactor's
// executor plans with (executor.planGroups): the same target, small and
// large file bounds, min-input-files, delete thresholds and group size,
// committed with partial progress as reactor commits in batches.
// Partitions flagged ApplyDeletes are planned by reactor with every file
// that a delete applies to rewritten, alone if need be; in Spark that is
// delete-file-threshold=1 and min-input-files=1, in a call of their own.
func (r renderer) compact() ([]Statement, error) {
	if err := r.noDryRun(RewriteDataFiles); err != nil {
		return nil, err
	}
	if len(r.job.Partitions) == 0 {
		return nil, nil // nothing to compact: no call
	}
	s := r.job.Settings
	strategy, err := r.strategyArgs()
	if err != nil {
		return nil, err
	}
	base := []option{
		{"target-file-size-bytes", itoa(s.TargetFileSize)},
		{"min-file-size-bytes", itoa(s.SmallFileSize)},
		{"max-file-size-bytes", itoa(s.MaxFileSize)},
		{"min-input-files", itoa(max(s.MinInputFiles, 1))},
		{"delete-file-threshold", itoa(max(s.DeleteFileThreshold, 1))},
	}
	if s.DeletedRowRatio > 0 {
		base = append(base, option{"delete-ratio-threshold", strconv.FormatFloat(s.DeletedRowRatio, 'g', -1, 64)})
	}
	if s.MaxGroupSize > 0 {
		base = append(base, option{"max-file-group-size-bytes", itoa(s.MaxGroupSize)})
	}
	base = append(base,
		option{"partial-progress.enabled", "true"},
		option{"partial-progress.max-commits", itoa(max(s.PartialProgressCommits, 1))})
	if r.job.Kind == jobkind.Sort {
		// reactor's sort rewrites every file of the partition.
		base = append(base, option{"rewrite-all", "true"})
	}

	var plain, withDeletes []jobs.Partition
	for _, p := range r.job.Partitions {
		if p.ApplyDeletes {
			withDeletes = append(withDeletes, p)
		} else {
			plain = append(plain, p)
		}
	}
	var out []Statement
	for _, g := range []struct {
		parts []jobs.Partition
		opts  []option
	}{
		{plain, base},
		{withDeletes, withOptions(base, option{"min-input-files", "1"}, option{"delete-file-threshold", "1"})},
	} {
		if len(g.parts) == 0 {
			continue
		}
		args := append([]arg(nil), strategy...)
		args = append(args, optionsArg(g.opts))
		w, ok, err := r.where(g.parts)
		if err != nil {
			return nil, err
		}
		if ok {
			args = append(args, w)
		}
		st, err := r.call(RewriteDataFiles, args...)
		if err != nil {
			return nil, err
		}
		st.Partitions = keys(g.parts)
		out = append(out, st)
	}
	return out, nil
}

// strategyArgs renders the strategy (and sort_order) arguments of a
// compaction: binpack, or for a sort job strategy 'sort' with the job's
// order in Spark's syntax (a z-order too: Spark runs zorder(...) under
// strategy 'sort'). An empty order is left out, and Spark uses the table's
// sort order, as reactor does.
func (r renderer) strategyArgs() ([]arg, error) {
	if r.job.Kind != jobkind.Sort {
		return []arg{{"strategy", mustQuoteString("binpack")}}, nil
	}
	args := []arg{{"strategy", mustQuoteString("sort")}}
	order := r.job.SortOrder
	if order == "" {
		order = r.job.Settings.SortOrder
	}
	if order == "" {
		return args, nil
	}
	o, err := sortorder.Parse(order)
	if err != nil {
		return nil, fmt.Errorf("sort order: %w", err)
	}
	q, err := QuoteString(o.String())
	if err != nil {
		return nil, err
	}
	return append(args, arg{"sort_order", q}), nil
}

// withOptions returns base with the given keys replaced.
func withOptions(base []option, replace ...option) []option {
	out := append([]option(nil), base...)
	for _, rep := range replace {
		for i := range out {
			if out[i].key == rep.key {
				out[i].value = rep.value
			}
		}
	}
	return out
}

func keys(ps []jobs.Partition) []string {
	out := make([]string, len(ps))
	for i, p := range ps {
		out[i] = p.Key
	}
	return out
}

// rewritePositionDeletes renders rewrite_position_delete_files over the
// job's partitions with reactor's delete target size and
// delete_min_input_files.
func (r renderer) rewritePositionDeletes() ([]Statement, error) {
	if err := r.noDryRun(RewritePositionDeleteFiles); err != nil {
		return nil, err
	}
	if len(r.job.Partitions) == 0 {
		return nil, nil // nothing to rewrite: no call
	}
	s := r.job.Settings
	opts := []option{{"min-input-files", itoa(max(s.DeleteMinInputFiles, 1))}}
	if s.DeleteTargetFileSize > 0 {
		opts = append([]option{{"target-file-size-bytes", itoa(s.DeleteTargetFileSize)}}, opts...)
	}
	// reactor commits a position-delete rewrite at once: Spark's default
	// (partial-progress.enabled=false) is the same.
	args := []arg{optionsArg(opts)}
	w, ok, err := r.where(r.job.Partitions)
	if err != nil {
		return nil, err
	}
	if ok {
		args = append(args, w)
	}
	st, err := r.call(RewritePositionDeleteFiles, args...)
	if err != nil {
		return nil, err
	}
	st.Partitions = keys(r.job.Partitions)
	return []Statement{st}, nil
}

// timestampLiteral renders the instant now-age as a TIMESTAMP literal with
// an explicit UTC offset, truncated to the microsecond towards the past.
func (r renderer) timestampLiteral(age time.Duration) (string, error) {
	if r.now.IsZero() {
		return "", errors.New("sparkcall: no time to count older_than back from (Options.Now and the job's ScheduledAt are zero)")
	}
	if age <= 0 {
		return "", fmt.Errorf("%w: a horizon of %s (must be positive)", ErrNotExpressible, age)
	}
	t := r.now.Add(-age).UTC().Truncate(time.Microsecond)
	if y := t.Year(); y < 1 || y > 9999 {
		return "", fmt.Errorf("%w: horizon %s is outside the years Spark timestamps cover", ErrNotExpressible, t)
	}
	return "TIMESTAMP " + mustQuoteString(t.Format("2006-01-02 15:04:05.000000")+"Z"), nil
}

// expireSnapshots renders expire_snapshots(older_than, retain_last).
// Spark deletes the unreachable files at once, where reactor unlinks them
// and deletes them min_reader_margin later; so the horizon rendered is at
// least min_reader_margin (the seeds' rule for an immediate delete: older
// than the longest reader), and a deletion delay beyond it cannot be
// expressed. Spark, like reactor, never expires a branch or tag head.
func (r renderer) expireSnapshots() ([]Statement, error) {
	if err := r.noDryRun(ExpireSnapshots); err != nil {
		return nil, err
	}
	s := r.job.Settings
	if s.ExpireDeletionDelay > s.MinReaderMargin {
		return nil, fmt.Errorf("%w: expire_deletion_delay=%s keeps unreachable files for a later pass; Spark's expire_snapshots deletes them at once",
			ErrNotExpressible, s.ExpireDeletionDelay)
	}
	if r.job.ExpireOlderThan <= 0 && r.job.ExpireRetainLast <= 0 {
		return nil, fmt.Errorf("%w: the expiry job names no retention", ErrNotExpressible)
	}
	olderThan, err := r.timestampLiteral(max(r.job.ExpireOlderThan, s.MinReaderMargin))
	if err != nil {
		return nil, err
	}
	args := []arg{{"older_than", olderThan}}
	if retain := max(s.RetainLast, r.job.ExpireRetainLast); retain > 0 {
		args = append(args, arg{"retain_last", itoa(retain)})
	}
	st, err := r.call(ExpireSnapshots, args...)
	if err != nil {
		return nil, err
	}
	return []Statement{st}, nil
}

// removeOrphans renders remove_orphan_files(older_than, dry_run) for a job
// that lists the table's location. dry_run is true unless the job may
// delete (orphan_delete and not a dry run).
func (r renderer) removeOrphans() ([]Statement, error) {
	switch r.job.OrphanSource {
	case jobs.OrphansFromListing, "":
	default:
		return nil, fmt.Errorf("%w: orphan candidates from %q (remove_orphan_files lists the location itself; a file list needs a file_list_view)",
			ErrNotExpressible, r.job.OrphanSource)
	}
	olderThan, err := r.timestampLiteral(r.job.Settings.OrphanMargin)
	if err != nil {
		return nil, err
	}
	dryRun := r.job.DryRun || !r.job.Settings.OrphanDelete
	st, err := r.call(RemoveOrphanFiles,
		arg{"older_than", olderThan},
		arg{"dry_run", strconv.FormatBool(dryRun)})
	if err != nil {
		return nil, err
	}
	return []Statement{st}, nil
}

// rewriteManifests renders rewrite_manifests (Spark clusters by partition,
// as reactor does).
func (r renderer) rewriteManifests() ([]Statement, error) {
	if err := r.noDryRun(RewriteManifests); err != nil {
		return nil, err
	}
	st, err := r.call(RewriteManifests)
	if err != nil {
		return nil, err
	}
	return []Statement{st}, nil
}
