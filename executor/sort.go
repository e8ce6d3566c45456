package executor

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"sync/atomic"
	"time"

	"github.com/apache/arrow-go/v18/arrow/compute"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/icereactor/reactor/executor/internal/datapath"
	"github.com/icereactor/reactor/executor/internal/extsort"
	"github.com/icereactor/reactor/jobs"
	"github.com/icereactor/reactor/sortorder"
	"github.com/icereactor/reactor/thresholds"
)

// ErrSortOrder: the job's sort order cannot be applied to the table (bad
// syntax, an unknown or unsupported column, no default order to fall back
// on). The message names the column.
var ErrSortOrder = errors.New("sort order")

// sortWriteBatchRows bounds how many sorted rows go to the writer at a
// time, and so the rows of one Parquet row group.
const sortWriteBatchRows = 1 << 20

// sort rewrites whole partitions with their rows in the job's sort or
// z-order: every data file of each partition, in groups of at most
// max_group_size input bytes (each group is read into memory, sorted and
// written as files of the target size, so the files' column bounds are
// tight and min/max pruning works). Commits, validation and retries are
// compaction's.
func (e *Executor) sort(ctx context.Context, log *slog.Logger, job jobs.Job) (jobs.Result, Report) {
	tbl, err := e.cat.LoadTable(ctx, job.Table.Ident())
	if err != nil {
		return jobs.Result{Outcome: jobs.Failed, Err: fmt.Errorf("load table: %w", err)}, Report{}
	}
	order, err := ResolveSortOrder(job.Settings, tbl)
	if err != nil {
		return jobs.Result{Outcome: jobs.Failed, Err: err}, Report{}
	}
	bound, err := order.Bind(tbl.Schema())
	if err != nil {
		return jobs.Result{Outcome: jobs.Failed, Err: fmt.Errorf("%w %q on %s: %w", ErrSortOrder, order, job.Table.String(), err)}, Report{}
	}
	log.Info("sorting partitions", "order", order.String(), "max_group_size", job.Settings.MaxGroupSize)
	sr := &sortRewrite{e: e, log: log, bound: bound, order: order, target: job.Settings.TargetFileSize}
	res, rep := e.rewrite(ctx, log, job, sr)
	res.NothingToDo = idlePartitions(job, sr.planned, "every file is already sorted in "+order.String()+" with nothing applying to it")
	rep.SpilledRuns = int(sr.spilled.Load())
	return res, rep
}

// sortRewrite is the sort and z-order rewriter; planned are the groups of
// its last plan, spilled the runs its groups spilled to disk.
type sortRewrite struct {
	e       *Executor
	log     *slog.Logger
	bound   sortorder.Bound
	order   sortorder.Order
	target  int64
	planned []table.CompactionTaskGroup
	spilled atomic.Int64
}

func (s *sortRewrite) plan(ctx context.Context, tbl *table.Table, job jobs.Job) ([]table.CompactionTaskGroup, int, error) {
	groups, skipped, err := planSortGroups(ctx, tbl, job)
	s.planned = groups
	return groups, skipped, err
}

func (s *sortRewrite) write(ctx context.Context, tbl *table.Table, g table.CompactionTaskGroup) (table.CompactionGroupResult, error) {
	gr, st, err := s.e.writeSortedGroup(ctx, tbl, g, s.bound, s.target)
	if err == nil {
		s.e.advance(int64(len(g.Tasks)), g.TotalSizeBytes)
	}
	if st.Spilled > 0 {
		s.spilled.Add(int64(st.Spilled))
		s.log.Info("group sorted in runs spilled to disk (larger than sort_memory)", "partition", g.PartitionKey,
			"runs", st.Spilled, "sort_memory", thresholds.Size(s.e.sortMemory()), "spill_dir", s.e.spillDir(),
			"read_and_spill", st.ReadTook.Round(time.Millisecond), "merge_and_write", st.MergeTook.Round(time.Millisecond))
	}
	return gr, err
}

func (s *sortRewrite) props() iceberg.Properties {
	return iceberg.Properties{jobs.SortSnapshotProperty: s.order.String()}
}

// ResolveSortOrder is the order a sort job of a table with settings set
// writes in: sort_order, else (strategy sort) the table's default order.
func ResolveSortOrder(set thresholds.Effective, tbl *table.Table) (sortorder.Order, error) {
	if set.SortOrder != "" {
		o, err := sortorder.Parse(set.SortOrder)
		if err != nil {
			return sortorder.Order{}, fmt.Errorf("%w: %w", ErrSortOrder, err)
		}
		return o, nil
	}
	if set.Strategy == thresholds.StrategyZOrder {
		return sortorder.Order{}, fmt.Errorf("%w: strategy zorder needs sort_order zorder(c1, c2[, c3, c4])", ErrSortOrder)
	}
	o, err := sortorder.FromTable(tbl.SortOrder(), tbl.Schema())
	if err != nil {
		return sortorder.Order{}, fmt.Errorf("%w: no sort_order configured and the table's default order is unusable: %w", ErrSortOrder, err)
	}
	return o, nil
}

// planSortGroups takes every data file of the job's partitions, whatever
// its size, and packs each partition's files into groups of at most
// max_group_size input bytes (a file larger than that is a group alone).
// Files are taken in the order of their smallest value of the first sort
// column where the statistics say, so consecutive groups overlap little.
func planSortGroups(ctx context.Context, tbl *table.Table, job jobs.Job) ([]table.CompactionTaskGroup, int, error) {
	tasks, err := tbl.Scan().PlanFiles(ctx)
	if err != nil {
		return nil, 0, fmt.Errorf("plan files: %w", err)
	}
	picked, err := selectPartitions(tasks, jobs.NewKeyer(tbl.Metadata()), job.Partitions)
	if err != nil {
		return nil, 0, err
	}
	byPartition := map[string][]table.FileScanTask{}
	var order []string
	for _, pt := range picked {
		if _, seen := byPartition[pt.key]; !seen {
			order = append(order, pt.key)
		}
		byPartition[pt.key] = append(byPartition[pt.key], pt.task)
	}
	leading := leadingSortColumn(tbl, job.Settings)
	var groups []table.CompactionTaskGroup
	for _, key := range order {
		files := byPartition[key]
		slices.SortStableFunc(files, func(a, b table.FileScanTask) int {
			if c := cmp.Compare(string(a.File.LowerBoundValues()[leading]), string(b.File.LowerBoundValues()[leading])); c != 0 && leading != 0 {
				return c
			}
			return cmp.Compare(a.File.FilePath(), b.File.FilePath())
		})
		var g table.CompactionTaskGroup
		for _, t := range files {
			if len(g.Tasks) > 0 && g.TotalSizeBytes+t.File.FileSizeBytes() > job.Settings.MaxGroupSize {
				groups = append(groups, g)
				g = table.CompactionTaskGroup{}
			}
			g.PartitionKey = key
			g.Tasks = append(g.Tasks, t)
			g.TotalSizeBytes += t.File.FileSizeBytes()
		}
		if len(g.Tasks) > 0 {
			groups = append(groups, g)
		}
	}
	return dropSortedAlone(ctx, tbl, job, groups)
}

// dropSortedAlone drops the groups whose rewrite would write the same file
// again: one file, already written by a sort in the job's order, that no
// delete applies to. It returns the groups kept and the files dropped.
func dropSortedAlone(ctx context.Context, tbl *table.Table, job jobs.Job, groups []table.CompactionTaskGroup) ([]table.CompactionTaskGroup, int, error) {
	alone := map[string]bool{}
	for _, g := range groups {
		if rewriteChangesNothing(g.Tasks) {
			alone[g.Tasks[0].File.FilePath()] = true
		}
	}
	if len(alone) == 0 {
		return groups, 0, nil
	}
	order, err := ResolveSortOrder(job.Settings, tbl)
	if err != nil {
		// sort() resolved the order before planning; keep every group.
		return groups, 0, nil
	}
	sorted, err := filesSortedBy(ctx, tbl, alone, order.String())
	if err != nil {
		return nil, 0, err
	}
	kept := groups[:0]
	skipped := 0
	for _, g := range groups {
		if len(g.Tasks) == 1 && sorted[g.Tasks[0].File.FilePath()] {
			skipped++
			continue
		}
		kept = append(kept, g)
	}
	return kept, skipped, nil
}

// filesSortedBy reports which of paths were added by a sort rewrite in
// order (the snapshot that added them says so; a file whose snapshot has
// expired counts as unsorted, as the planner counts it).
func filesSortedBy(ctx context.Context, tbl *table.Table, paths map[string]bool, order string) (map[string]bool, error) {
	fs, err := tbl.FS(ctx)
	if err != nil {
		return nil, fmt.Errorf("open table io: %w", err)
	}
	snap := tbl.CurrentSnapshot()
	manifests, err := snap.Manifests(fs)
	if err != nil {
		return nil, fmt.Errorf("read manifest list of snapshot %d: %w", snap.SnapshotID, err)
	}
	out := map[string]bool{}
	for _, m := range manifests {
		if m.ManifestContent() != iceberg.ManifestContentData {
			continue
		}
		for entry, err := range m.Entries(fs, true) {
			if err != nil {
				return nil, fmt.Errorf("read manifest %s: %w", m.FilePath(), err)
			}
			path := entry.DataFile().FilePath()
			if !paths[path] {
				continue
			}
			if s := tbl.Metadata().SnapshotByID(entry.SnapshotID()); s != nil && s.Summary != nil &&
				s.Summary.Properties[jobs.SortSnapshotProperty] == order {
				out[path] = true
			}
		}
	}
	return out, nil
}

// leadingSortColumn is the field id of the order's first column (0 if it
// cannot be resolved: files are then taken by path). Lower bounds are
// compared as bytes, which orders them for strings and big-endian values
// only; it only arranges groups, never the rows in them.
func leadingSortColumn(tbl *table.Table, set thresholds.Effective) int {
	o, err := ResolveSortOrder(set, tbl)
	if err != nil || len(o.Fields) == 0 {
		return 0
	}
	f, ok := tbl.Schema().FindFieldByName(o.Fields[0].Column)
	if !ok {
		return 0
	}
	return f.ID
}

// unsortedView is tbl with no default sort order, for writing.
func unsortedView(tbl *table.Table) (*table.Table, error) {
	meta := tbl.Metadata()
	if meta.DefaultSortOrder() == table.UnsortedSortOrderID {
		return tbl, nil
	}
	b, err := table.MetadataBuilderFromBase(meta, tbl.MetadataLocation())
	if err != nil {
		return nil, fmt.Errorf("metadata builder: %w", err)
	}
	if err := b.SetDefaultSortOrderID(table.UnsortedSortOrderID); err != nil {
		return nil, fmt.Errorf("unsorted view of %v: %w", tbl.Identifier(), err)
	}
	unsorted, err := b.Build()
	if err != nil {
		return nil, fmt.Errorf("unsorted view of %v: %w", tbl.Identifier(), err)
	}
	return table.New(tbl.Identifier(), unsorted, tbl.MetadataLocation(), tbl.FS, nil), nil
}

// writeSortedGroup reads a group's rows (deletes applied), sorts them and
// writes them as files of about the target size, each in row groups of an
// eighth of a file so the row groups' statistics are as tight as the
// files'. A group whose decoded rows fit in a third of sort_memory is
// sorted in memory; a larger one by the external merge sort (package extsort).
// One group is sorted at a time per executor, so sort_memory bounds what
// sorting holds. The writer sees the table as unsorted: iceberg-go's
// would otherwise re-sort each batch by the table's default order,
// undoing a z-order.
//
// It returns the group's result and what the sort did.
func (e *Executor) writeSortedGroup(ctx context.Context, tbl *table.Table, g table.CompactionTaskGroup, bound sortorder.Bound,
	target int64) (table.CompactionGroupResult, extsort.Stats, error) {
	res := table.CompactionGroupResult{PartitionKey: g.PartitionKey, BytesBefore: g.TotalSizeBytes,
		SafePosDeletes: table.CollectSafePositionDeletes(g.Tasks), SafeDeletionVectors: table.CollectSafeDeletionVectors(g.Tasks)}
	for _, t := range g.Tasks {
		res.OldDataFiles = append(res.OldDataFiles, t.File)
	}
	if err := e.sortSlot.acquire(ctx); err != nil {
		return res, extsort.Stats{}, err
	}
	defer e.sortSlot.release()
	writeTo, err := unsortedView(tbl)
	if err != nil {
		return res, extsort.Stats{}, err
	}
	var f *datapath.Format
	if !e.opts.icebergWriter {
		if f, err = datapath.OwnWriterFor(ctx, writeTo, g, target); err != nil && !errors.Is(err, datapath.ErrNotOwnWriter) {
			return res, extsort.Stats{}, err
		}
	}
	if f == nil {
		// iceberg-go's writer names its files itself: each is added to
		// the job's output intent before it is created.
		writeTo = recordingTable(ctx, writeTo)
	}
	mem := e.newJobPool()
	defer mem.Close()
	readCtx := ctx
	if !datapath.AnyDeletes(g.Tasks) {
		readCtx = compute.WithAllocator(ctx, mem)
	}
	schema, records, err := datapath.Scan(ctx, tbl).ReadTasks(readCtx, g.Tasks)
	if err != nil {
		return res, extsort.Stats{}, fmt.Errorf("read group %s: %w", g.PartitionKey, err)
	}
	budget := e.sortMemory()
	// Sorting's copies (take, concatenation) come from the pool too.
	poolCtx := compute.WithAllocator(ctx, mem)
	s := extsort.New(poolCtx, bound, mem, budget, schema)
	defer s.Close()
	acc, err := s.ReadRuns(ctx, records, e.spillDir())
	defer func() {
		for _, b := range acc {
			b.Release()
		}
	}()
	if err != nil {
		return res, s.Stats(), fmt.Errorf("read group %s: %w", g.PartitionKey, err)
	}
	rowsPerFile, rowGroupRows := sortOutputs(s.Rows(), g.TotalSizeBytes, target)
	sink := newSortSink(ctx, e, writeTo, f, schema, mem, rowsPerFile, rowGroupRows)
	fail := func(err error) (table.CompactionGroupResult, extsort.Stats, error) {
		for _, df := range sink.abort(err) {
			res.NewDataFiles = append(res.NewDataFiles, df)
		}
		return res, s.Stats(), err
	}
	if s.Spilled() == 0 {
		all, err := extsort.ConcatBatches(mem, schema, acc)
		if err != nil {
			return fail(fmt.Errorf("gather group %s: %w", g.PartitionKey, err))
		}
		sorted, err := bound.Sort(poolCtx, all)
		all.Release()
		if err != nil {
			return fail(fmt.Errorf("sort group %s: %w", g.PartitionKey, err))
		}
		err = sink.write(sorted)
		sorted.Release()
		if err != nil {
			return fail(fmt.Errorf("write sorted group %s: %w", g.PartitionKey, err))
		}
	} else {
		if err := s.SortRuns(); err != nil {
			return fail(fmt.Errorf("sort group %s: %w", g.PartitionKey, err))
		}
		// While merging, the two thirds of the budget that held the run
		// being read and the run being sorted are free: one of them holds
		// merged rows queued for the files being encoded.
		sink.boundQueue(budget / 3)
		if err := s.Merge(rowGroupRows, sink.write); err != nil {
			return fail(fmt.Errorf("merge sorted runs of group %s: %w", g.PartitionKey, err))
		}
	}
	files, err := sink.close()
	for _, df := range files {
		res.NewDataFiles = append(res.NewDataFiles, df)
		res.BytesAfter += df.FileSizeBytes()
	}
	if err != nil {
		return res, s.Stats(), fmt.Errorf("write sorted files for group %s: %w", g.PartitionKey, err)
	}
	return res, s.Stats(), nil
}

// sortMemory is the budget of one sort group.
func (e *Executor) sortMemory() int64 {
	if e.opts.SortMemory > 0 {
		return e.opts.SortMemory
	}
	return int64(thresholds.DefaultSortMemory)
}

// spillDir is where sorts spill.
func (e *Executor) spillDir() string {
	if e.opts.SpillDir != "" {
		return e.opts.SpillDir
	}
	return filepath.Join(os.TempDir(), "reactor-spill")
}
