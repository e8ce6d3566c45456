package executor

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"

	"github.com/apache/iceberg-go"
	iceio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"

	"github.com/icereactor/reactor/conflict"
	"github.com/icereactor/reactor/executor/internal/eqkeys"
	"github.com/icereactor/reactor/jobs"
)

// Reasons an equality delete cannot be converted. The job is refused
// before anything is written: the table is left as it was.
var (
	// ErrEqualityFieldMissing: an equality delete names a field id that a
	// data file it applies to (or the delete file itself) has no top-level
	// column for.
	ErrEqualityFieldMissing = eqkeys.ErrFieldMissing
	// ErrEqualityTypeMismatch: an equality field's column has another
	// type in the delete file than in a data file it applies to, or a type
	// the conversion cannot compare.
	ErrEqualityTypeMismatch = errors.New("equality field type mismatch")
)

// ConversionCounts are what a convert_equality_deletes job did (or, in a
// dry run, would do).
type ConversionCounts struct {
	EqualityDeleteFilesRemoved int
	PositionDeleteFilesAdded   int
	RowsMatched                int64
	DataFilesScanned           int
	// BytesRead are the bytes of the column chunks read: the equality
	// columns of the data files scanned, and the delete files.
	BytesRead int64
	// Skipped are equality delete files left as they are (another format,
	// a data file they apply to that is not Parquet).
	Skipped int
	// Replans: how often a concurrent rewrite of what the job read made it
	// plan again (BytesRead and DataFilesScanned include every plan).
	Replans int
}

// eqDelete is one live equality delete file of the job's partitions.
type eqDelete struct {
	file   iceberg.DataFile
	seq    int64
	scope  string // its (spec, partition), "" for a global delete (unpartitioned spec)
	ids    []int  // equality field ids, sorted
	setKey string // ids joined
}

// eqDataFile is one live data file.
type eqDataFile struct {
	file  iceberg.DataFile
	seq   int64
	scope string
}

// eqKeySet is the keys of the converted deletes of one scope over one
// equality field set, each with the highest sequence number of a delete
// holding it: a row matches when that is above its data file's.
type eqKeySet struct {
	ids  []int
	keys map[string]int64
}

// conversion is the plan of one convert_equality_deletes job.
type conversion struct {
	deletes []eqDelete        // converted
	data    []eqDataFile      // every live data file of the table
	scopes  map[string]string // scope -> partition key, for logs
	counts  ConversionCounts
	// outputs by the scope of the data files the rows name.
	groups map[string]*posGroup
	maxSeq int64 // highest sequence number of a converted delete

	// Format v3 (convert_commit.go): the live deletion vectors by the data
	// file they name (each output vector replaces its file's), and the
	// groups' (spec, scope)s holding Parquet position deletes.
	v3         bool
	dvs        map[string][]posDeleteSource
	parquetPos map[string]int
}

// posGroup is the matched rows of one (spec, partition) of data files.
type posGroup struct {
	sample iceberg.DataFile
	rows   map[string][]int64 // data file path -> positions, ascending
	// outs are the files written for it at outSeqs: one position-delete
	// file (v2), or a deletion vector per data file (v3).
	outs    []iceberg.DataFile
	outSeqs []int64
	path    string
	dv      *deleteMerge // v3: the vectors' plan
}

func scopeKey(keys *jobs.Keyer, meta table.Metadata, df iceberg.DataFile) string {
	spec := meta.PartitionSpecByID(int(df.SpecID()))
	if len(df.Partition()) == 0 || (spec != nil && spec.IsUnpartitioned()) {
		return ""
	}
	return strconv.Itoa(int(df.SpecID())) + "|" + keys.Key(df.SpecID(), df.Partition())
}

// convertEqualityDeletes replaces each job partition's equality delete
// files by position deletes naming the rows they delete, without rewriting
// a data file (Amoro's minor optimizing). An equality delete applies to the
// data files of its partition (every partition for an unpartitioned spec)
// with a lower data sequence number; those are read, only their equality
// columns, and each row whose key a delete applying to it holds becomes a
// (file_path, pos) row. The deletes go and the position deletes come in one
// snapshot, validated against everything committed since the read.
//
// A commit that removed a file the conversion read (a compaction rewrote a
// scanned data file, or applied and removed a delete) makes the outputs
// stale: they are deleted and the conversion plans again on the new files,
// up to maxConversionReplans times within the job's commit budget
// (replans).
func (e *Executor) convertEqualityDeletes(ctx context.Context, log *slog.Logger, job jobs.Job) (jobs.Result, Report) {
	rp := newReplans(job, maxConversionReplans)
	for {
		res, rep := e.convertOnce(ctx, log, job)
		if rp.allowed(ctx) && res.Outcome == jobs.Failed && errors.Is(res.Err, ErrInputsGone) {
			log.Info("a file the conversion read was removed meanwhile; planning it again on the new files", "replan", rp.n+1, "why", res.Err)
			rp.abandon(rep)
			continue
		}
		rep = rp.last(rep)
		rep.Conversion.Replans = rp.n
		return res, rep
	}
}

// maxConversionReplans bounds how often one job plans again after a
// concurrent rewrite removed what it read: a partition compacted that busily
// is better served by those compactions.
const maxConversionReplans = 2

// convertOnce is one conversion: plan on the current snapshot, match,
// write, commit.
func (e *Executor) convertOnce(ctx context.Context, log *slog.Logger, job jobs.Job) (jobs.Result, Report) {
	var rep Report
	fail := func(outcome jobs.Outcome, err error) (jobs.Result, Report) {
		return jobs.Result{Outcome: outcome, Err: err}, rep
	}
	tbl, err := e.cat.LoadTable(ctx, job.Table.Ident())
	if err != nil {
		return fail(jobs.Failed, fmt.Errorf("load table: %w", err))
	}
	snap := tbl.CurrentSnapshot()
	if snap == nil {
		log.Info("no equality deletes to convert", "why", "table has no snapshot")
		return jobs.Result{Outcome: jobs.Noop}, rep
	}
	if v := tbl.Metadata().Version(); v < 2 {
		log.Info("no equality deletes converted", "why", fmt.Sprintf("format v%d has no row-level deletes", v))
		return jobs.Result{Outcome: jobs.Noop}, rep
	}
	rep.PlannedFromSnapshotID = snap.SnapshotID
	fs, err := tbl.FS(ctx)
	if err != nil {
		return fail(jobs.Failed, fmt.Errorf("open table io: %w", err))
	}
	cv, err := planConversion(fs, tbl.Metadata(), snap, job.Partitions)
	if err != nil {
		return fail(jobs.Failed, err)
	}
	if cv.counts.Skipped > 0 {
		log.Info("equality delete files left as they are", "files", cv.counts.Skipped,
			"why", "not Parquet, or a data file they apply to is not Parquet")
	}
	if len(cv.deletes) == 0 {
		rep.Conversion = cv.counts
		return jobs.Result{Outcome: jobs.Noop}, rep
	}
	if err := cv.match(ctx, fs); err != nil {
		rep.Conversion = cv.counts
		return fail(jobs.Failed, err)
	}
	if cv.v3 {
		if why := cv.parquetBlocks(); why != "" {
			log.Info("no equality deletes converted", "why", why)
			rep.Conversion = cv.counts
			return jobs.Result{Outcome: jobs.Noop}, rep
		}
		if err := cv.planDVs(ctx, fs); err != nil {
			rep.Conversion = cv.counts
			return fail(jobs.Failed, err)
		}
	}
	log.Info("equality deletes matched", "equality_delete_files", len(cv.deletes), "rows_matched", cv.counts.RowsMatched,
		"data_files_scanned", cv.counts.DataFilesScanned, "bytes_read", cv.counts.BytesRead, "position_delete_files", len(cv.groups))
	if job.DryRun {
		rep.DryRun = true
		cv.counts.EqualityDeleteFilesRemoved = len(cv.deletes)
		cv.counts.PositionDeleteFilesAdded = len(cv.groups)
		rep.Conversion = cv.counts
		return jobs.Result{Outcome: jobs.Succeeded}, rep
	}
	wfs, ok := fs.(iceio.WriteFileIO)
	if !ok {
		return fail(jobs.Failed, errors.New("table io cannot write files"))
	}
	if err := cv.write(ctx, tbl, wfs); err != nil {
		rep.OutputFilesCleanedUp += e.removePaths(tbl, fs, cv.written(), log)
		rep.Conversion = cv.counts
		return fail(jobs.Failed, fmt.Errorf("write position deletes: %w", err))
	}
	committed, err := e.commitConversion(ctx, log, job, tbl, fs, cv, &rep)
	if err != nil {
		rep.Conversion = cv.counts
		if errors.Is(err, errUnknownCommitState) {
			log.Error("commit outcome unknown; position-delete files left in place for orphan cleanup", "error", err)
			return fail(jobs.Failed, err)
		}
		rep.OutputFilesCleanedUp += e.removePaths(tbl, fs, cv.written(), log)
		log.Warn("equality-delete conversion abandoned; its output files were deleted", "error", err)
		if conflict.IsRetryable(err) {
			return fail(jobs.GaveUp, fmt.Errorf("gave up after %d attempts in %s: %w", rep.Attempts, job.Settings.CommitRetryTime, err))
		}
		return fail(jobs.Failed, fmt.Errorf("equality-delete conversion abandoned: %w", err))
	}
	cv.counts.EqualityDeleteFilesRemoved = len(cv.deletes)
	rep.RemovedDeleteFiles = len(cv.deletes)
	for _, g := range cv.groups {
		cv.counts.PositionDeleteFilesAdded += len(g.outs)
		for _, out := range g.outs {
			if table.IsDeletionVector(out) {
				rep.AddedDeleteBytes += *out.ContentSizeInBytes()
			} else {
				rep.AddedDeleteBytes += out.FileSizeBytes()
			}
		}
		if g.dv != nil {
			rep.RemovedDeleteFiles += len(g.dv.remove)
		}
	}
	rep.Conversion = cv.counts
	rep.Commits = 1
	rep.CommittedSnapshotID = committed.CurrentSnapshot().SnapshotID
	rep.AddedDeleteFiles = cv.counts.PositionDeleteFilesAdded
	log.Info("equality deletes converted", "snapshot_id", rep.CommittedSnapshotID,
		"equality_delete_files_removed", len(cv.deletes), "position_delete_files_added", len(cv.groups),
		"rows_matched", cv.counts.RowsMatched, "attempts", rep.Attempts, "conflicts", rep.Conflicts)
	return jobs.Result{Outcome: jobs.Succeeded, Table: committed}, rep
}

// planConversion reads the snapshot's manifests once: every live data file
// (a global delete applies to all of them) and the live equality deletes
// of the job's partitions, less those it cannot convert.
func planConversion(fs iceio.IO, meta table.Metadata, snap *table.Snapshot, parts []jobs.Partition) (*conversion, error) {
	want := map[string]bool{}
	for _, p := range parts {
		want[strconv.Itoa(int(p.SpecID))+"|"+p.Key] = true
	}
	keys := jobs.NewKeyer(meta)
	cv := &conversion{scopes: map[string]string{}, groups: map[string]*posGroup{}, v3: meta.Version() >= 3,
		dvs: map[string][]posDeleteSource{}, parquetPos: map[string]int{}}
	var candidates []eqDelete
	manifests, err := snap.Manifests(fs)
	if err != nil {
		return nil, fmt.Errorf("read manifest list of snapshot %d: %w", snap.SnapshotID, err)
	}
	for _, m := range manifests {
		for entry, err := range m.Entries(fs, true) {
			if err != nil {
				return nil, fmt.Errorf("read manifest %s: %w", m.FilePath(), err)
			}
			df := entry.DataFile()
			switch df.ContentType() {
			case iceberg.EntryContentData:
				cv.data = append(cv.data, eqDataFile{file: df, seq: entry.SequenceNum(), scope: scopeKey(keys, meta, df)})
			case iceberg.EntryContentPosDeletes:
				switch {
				case !cv.v3:
				case table.IsDeletionVector(df) && df.ReferencedDataFile() != nil:
					ref := *df.ReferencedDataFile()
					cv.dvs[ref] = append(cv.dvs[ref], posDeleteSource{file: df, seq: entry.SequenceNum()})
				default:
					// Keyed as the groups are (convert_commit.go).
					cv.parquetPos[strconv.Itoa(int(df.SpecID()))+"#"+scopeKey(keys, meta, df)]++
				}
			case iceberg.EntryContentEqDeletes:
				full := strconv.Itoa(int(df.SpecID())) + "|" + keys.Key(df.SpecID(), df.Partition())
				if !want[full] {
					continue
				}
				if df.FileFormat() != iceberg.ParquetFile {
					cv.counts.Skipped++
					continue
				}
				if entry.SequenceNum() < 0 {
					return nil, fmt.Errorf("delete file %s has no data sequence number", df.FilePath())
				}
				ids := slices.Sorted(slices.Values(df.EqualityFieldIDs()))
				if len(ids) == 0 {
					return nil, fmt.Errorf("%w: equality delete %s has no equality field ids", ErrEqualityFieldMissing, df.FilePath())
				}
				parts := make([]string, len(ids))
				for i, id := range ids {
					parts[i] = strconv.Itoa(id)
				}
				candidates = append(candidates, eqDelete{file: df, seq: entry.SequenceNum(), scope: scopeKey(keys, meta, df),
					ids: ids, setKey: strings.Join(parts, ",")})
			}
		}
	}
	// A delete applying to a data file this job cannot read stays, and so
	// does every row it deletes: nothing it applies to is converted.
	for _, d := range candidates {
		blocked := false
		for _, df := range cv.data {
			if d.applies(df) && df.file.FileFormat() != iceberg.ParquetFile {
				blocked = true
				break
			}
		}
		if blocked {
			cv.counts.Skipped++
			continue
		}
		cv.deletes = append(cv.deletes, d)
		cv.maxSeq = max(cv.maxSeq, d.seq)
	}
	return cv, nil
}

// applies reports whether the delete applies to df under the spec's
// sequence-number rule: same (spec, partition) or a global delete, and a
// data sequence number strictly below the delete's.
func (d eqDelete) applies(df eqDataFile) bool {
	return df.seq < d.seq && (d.scope == "" || d.scope == df.scope)
}

// written lists every output path created.
func (cv *conversion) written() []string {
	var out []string
	for _, g := range cv.groups {
		if g.path != "" {
			out = append(out, g.path)
		}
		if g.dv != nil {
			out = append(out, g.dv.written...)
		}
	}
	return out
}
