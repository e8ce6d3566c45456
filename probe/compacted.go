package probe

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"

	"github.com/icereactor/reactor/embedded"
	"github.com/icereactor/reactor/tablename"
)

// ScanSample compares a full scan of a table with a full scan of the same
// rows fully compacted. Both times include what a reader pays: loading the
// table (parsing its metadata), planning (reading its manifests) and reading
// every row.
type ScanSample struct {
	Rows      int64
	Live      time.Duration
	Compacted time.Duration
	// CompactedFiles is the copy's data file count (its ideal count, as
	// iceberg-go's writer rolls files at the target size).
	CompactedFiles int
	// Build is the time spent writing the copy, part of neither scan.
	Build time.Duration
}

// Ratio is the live scan's time over the compacted copy's: read
// amplification as a reader feels it.
func (s ScanSample) Ratio() float64 {
	if s.Compacted <= 0 {
		return 0
	}
	return float64(s.Live) / float64(s.Compacted)
}

// Compacted builds the compacted copies full scans are compared against, in
// an embedded SQLite catalog of its own (reactor never sees them, and they
// never contend for the live catalog's lock).
//
// A copy holds exactly the rows of the live snapshot it is compared with:
// the rows the live scan just read are appended in one commit to a fresh
// table with the same schema, partition spec and target file size, which
// leaves one snapshot, one manifest and ceil(bytes/target) files per
// partition. Rebuilding it per sample costs one write of the table's rows
// (reported as Build); keeping one copy up to date instead would need the
// same rewrite of its last file per partition on every sample.
type Compacted struct {
	// MaxRuns and RunBudget bound how often each full scan is repeated
	// (the fastest run is kept): up to MaxRuns runs while the runs so far
	// took less than RunBudget. Zero: 5 runs, 1 s.
	MaxRuns   int
	RunBudget time.Duration

	mu  sync.Mutex
	cat catalog.Catalog
	seq int
}

// compactedNamespace holds the copies.
const compactedNamespace = "compacted"

// NewCompacted opens (creating) the copies' catalog under dir.
func NewCompacted(ctx context.Context, dir string) (*Compacted, error) {
	cat, err := embedded.OpenCatalog(ctx, dir)
	if err != nil {
		return nil, fmt.Errorf("probe: compacted copies: %w", err)
	}
	if err := cat.CreateNamespace(ctx, table.Identifier{compactedNamespace}, nil); err != nil &&
		!errors.Is(err, catalog.ErrNamespaceAlreadyExists) {
		return nil, fmt.Errorf("probe: compacted copies: %w", err)
	}
	return &Compacted{cat: cat}, nil
}

// Close closes the copies' catalog.
func (c *Compacted) Close() error {
	if cl, ok := c.cat.(interface{ Close() error }); ok {
		return cl.Close()
	}
	return nil
}

// A full scan is repeated, up to MaxRuns times while the runs so far took
// less than RunBudget, and the fastest run is kept, for the live table and
// the copy alike: on a shared machine one run can be slowed several-fold by
// a neighbour's burst, and the fastest of a few is the scan's own cost. A
// slow (fragmented) live scan runs once.
const (
	defaultRuns      = 5
	defaultRunBudget = time.Second
)

// Compare times a full scan of the table load returns, builds its
// compacted copy from the rows read, times a full scan of the copy, and
// drops the copy. targetFileSize is the live table's effective target.
func (c *Compacted) Compare(ctx context.Context, load func(context.Context) (*table.Table, error), targetFileSize int64) (ScanSample, error) {
	var s ScanSample
	var (
		live *table.Table
		sc   *arrow.Schema
		recs []arrow.RecordBatch
	)
	defer func() {
		for _, r := range recs {
			r.Release()
		}
	}()
	// Later runs reload the table, as a reader would, but read the
	// snapshot the first run read: the writer commits meanwhile.
	first, pinned := true, int64(-1)
	liveScan := func(ctx context.Context) (int64, error) {
		tbl, err := load(ctx)
		if err != nil {
			return 0, fmt.Errorf("probe: load the live table: %w", err)
		}
		if first && tbl.CurrentSnapshot() != nil {
			pinned = tbl.CurrentSnapshot().SnapshotID
		}
		schema, batches, rows, err := readAll(ctx, tbl, pinned, first)
		if first {
			live, sc, recs, first = tbl, schema, batches, false
		}
		return rows, err
	}
	var err error
	if s.Live, s.Rows, err = c.fastest(ctx, liveScan); err != nil {
		return s, err
	}

	build := time.Now()
	c.mu.Lock()
	c.seq++
	ident := table.Identifier{compactedNamespace, "copy_" + strconv.Itoa(c.seq)}
	c.mu.Unlock()
	spec := live.Spec()
	props := map[string]string{
		table.PropertyFormatVersion:         strconv.Itoa(live.Metadata().Version()),
		table.WriteTargetFileSizeBytesKey:   strconv.FormatInt(targetFileSize, 10),
		"reactor.probe.compacted-copy-of":   tablename.Format(live.Identifier()),
		"reactor.probe.compacted-copy-rows": strconv.FormatInt(s.Rows, 10),
	}
	cp, err := c.cat.CreateTable(ctx, ident, live.Schema(), catalog.WithPartitionSpec(&spec), catalog.WithProperties(props))
	if err != nil {
		return s, fmt.Errorf("probe: create compacted copy: %w", err)
	}
	defer c.drop(ident, cp.Location())
	if len(recs) > 0 {
		rdr, err := array.NewRecordReader(sc, recs)
		if err != nil {
			return s, fmt.Errorf("probe: compacted copy: %w", err)
		}
		_, err = cp.Append(ctx, rdr, nil)
		rdr.Release()
		if err != nil {
			return s, fmt.Errorf("probe: write compacted copy: %w", err)
		}
	}
	s.Build = time.Since(build)

	copyScan := func(ctx context.Context) (int64, error) {
		tbl, err := c.cat.LoadTable(ctx, ident)
		if err != nil {
			return 0, fmt.Errorf("probe: load compacted copy: %w", err)
		}
		cp = tbl
		_, _, rows, err := readAll(ctx, tbl, -1, false)
		return rows, err
	}
	copyRows := int64(0)
	if s.Compacted, copyRows, err = c.fastest(ctx, copyScan); err != nil {
		return s, err
	}
	if copyRows != s.Rows {
		return s, fmt.Errorf("probe: compacted copy holds %d rows, the live scan read %d", copyRows, s.Rows)
	}
	if snap := cp.CurrentSnapshot(); snap != nil && snap.Summary != nil {
		s.CompactedFiles, _ = strconv.Atoi(snap.Summary.Properties["total-data-files"])
	}
	return s, nil
}

// fastest runs scan as MaxRuns and RunBudget allow and returns
// the fastest run's time and the rows it read. A run that read another
// number of rows than the first is not counted (it cannot happen on a
// pinned snapshot; the check keeps the figure honest if it did).
func (c *Compacted) fastest(ctx context.Context, scan func(context.Context) (int64, error)) (time.Duration, int64, error) {
	runs, budget := c.MaxRuns, c.RunBudget
	if runs <= 0 {
		runs = defaultRuns
	}
	if budget <= 0 {
		budget = defaultRunBudget
	}
	var (
		best  time.Duration
		rows  int64
		spent time.Duration
	)
	for i := 0; i < runs && (i == 0 || spent < budget); i++ {
		t0 := time.Now()
		n, err := scan(ctx)
		took := time.Since(t0)
		if err != nil {
			return 0, 0, err
		}
		spent += took
		if i == 0 {
			best, rows = took, n
		} else if n == rows && took < best {
			best = took
		}
	}
	return best, rows, nil
}

// readAll reads every row of tbl's snapshot (the current one when
// snapshotID is negative), keeping the records if keep is set.
func readAll(ctx context.Context, tbl *table.Table, snapshotID int64, keep bool) (*arrow.Schema, []arrow.RecordBatch, int64, error) {
	if tbl.CurrentSnapshot() == nil {
		sc, err := table.SchemaToArrowSchema(tbl.Schema(), nil, false, false)
		return sc, nil, 0, err
	}
	var opts []table.ScanOption
	if snapshotID >= 0 {
		opts = append(opts, table.WithSnapshotID(snapshotID))
	}
	sc, it, err := tbl.Scan(opts...).ToArrowRecords(ctx)
	if err != nil {
		return nil, nil, 0, fmt.Errorf("probe: scan %v: %w", tbl.Identifier(), err)
	}
	var (
		recs []arrow.RecordBatch
		rows int64
	)
	for rec, err := range it {
		if err != nil {
			for _, r := range recs {
				r.Release()
			}
			return nil, nil, 0, fmt.Errorf("probe: read %v: %w", tbl.Identifier(), err)
		}
		rows += rec.NumRows()
		if keep {
			recs = append(recs, rec)
		} else {
			rec.Release()
		}
	}
	return sc, recs, rows, nil
}

// drop removes a copy from the catalog and its files from disk. Best
// effort: a copy left behind costs disk space, never a measurement.
func (c *Compacted) drop(ident table.Identifier, location string) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_ = c.cat.DropTable(ctx, ident)
	if u, err := url.Parse(location); err == nil && u.Scheme == "file" && filepath.IsAbs(u.Path) {
		_ = os.RemoveAll(filepath.FromSlash(u.Path))
	}
}
