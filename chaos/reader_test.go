package chaos

// A reader of its own, so the row check does not trust the code it
// checks: the current snapshot's manifests (iceberg-go only decodes the
// Avro), every live data and delete file read with arrow-go's Parquet
// reader, position deletes and equality deletes applied here by the
// spec's sequence-number rules.

import (
	"context"
	"fmt"
	"net/url"
	"path/filepath"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/icereactor/reactor/streamwriter"
)

type liveFile struct {
	path     string // local
	seq      int64  // data sequence number
	category string
}

type posDelete struct {
	liveFile
}

type eqKey struct {
	id       int64
	category string
}

// readTable tallies the rows of tbl's current snapshot, deletes applied,
// and counts what it read.
func readTable(ctx context.Context, tbl *table.Table) (streamwriter.Tally, readStats, error) {
	var tally streamwriter.Tally
	var st readStats
	snap := tbl.CurrentSnapshot()
	if snap == nil {
		return tally, st, nil
	}
	fs, err := tbl.FS(ctx)
	if err != nil {
		return tally, st, err
	}
	manifests, err := snap.Manifests(fs)
	if err != nil {
		return tally, st, fmt.Errorf("manifest list of %d: %w", snap.SnapshotID, err)
	}
	var data, pos, eq []liveFile
	for _, m := range manifests {
		entries, err := m.FetchEntries(fs, true)
		if err != nil {
			return tally, st, fmt.Errorf("manifest %s: %w", m.FilePath(), err)
		}
		for _, e := range entries {
			if e.Status() == iceberg.EntryStatusDELETED {
				continue
			}
			df := e.DataFile()
			f := liveFile{path: localPath(df.FilePath()), seq: e.SequenceNum(), category: fmt.Sprint(df.Partition()[1000])}
			switch df.ContentType() {
			case iceberg.EntryContentData:
				data = append(data, f)
			case iceberg.EntryContentPosDeletes:
				pos = append(pos, f)
			case iceberg.EntryContentEqDeletes:
				if ids := df.EqualityFieldIDs(); len(ids) != 1 || ids[0] != 1 {
					return tally, st, fmt.Errorf("equality delete %s on fields %v, want [1] (id)", df.FilePath(), ids)
				}
				eq = append(eq, f)
			}
		}
	}
	st.data, st.pos, st.eq = len(data), len(pos), len(eq)

	// Position deletes apply to data files of a sequence number at most
	// theirs (of the same partition; the path names the file anyway).
	deletedAt := map[string]map[int64]bool{}
	for _, d := range pos {
		rec, err := readParquet(ctx, d.path)
		if err != nil {
			return tally, st, err
		}
		paths, ok1 := column(rec, "file_path").(stringArray)
		rows, ok2 := column(rec, "pos").(*array.Int64)
		if !ok1 || !ok2 {
			rec.Release()
			return tally, st, fmt.Errorf("position delete %s: columns %s", d.path, rec.Schema())
		}
		for i := range int(rec.NumRows()) {
			target := localPath(paths.Value(i))
			if seqOf(data, target) > d.seq {
				continue
			}
			if deletedAt[target] == nil {
				deletedAt[target] = map[int64]bool{}
			}
			deletedAt[target][rows.Value(i)] = true
		}
		rec.Release()
	}
	// Equality deletes apply to data files of the same partition with a
	// sequence number strictly below theirs.
	eqSeq := map[eqKey][]int64{}
	for _, d := range eq {
		rec, err := readParquet(ctx, d.path)
		if err != nil {
			return tally, st, err
		}
		ids, ok := column(rec, "id").(*array.Int64)
		if !ok {
			rec.Release()
			return tally, st, fmt.Errorf("equality delete %s: columns %s", d.path, rec.Schema())
		}
		for i := range int(rec.NumRows()) {
			k := eqKey{ids.Value(i), d.category}
			eqSeq[k] = append(eqSeq[k], d.seq)
		}
		rec.Release()
	}
	for _, f := range data {
		rec, err := readParquet(ctx, f.path)
		if err != nil {
			return tally, st, err
		}
		ids, ok1 := column(rec, "id").(*array.Int64)
		cats, ok2 := column(rec, "category").(stringArray)
		pays, ok3 := column(rec, "payload").(stringArray)
		if !ok1 || !ok2 || !ok3 {
			rec.Release()
			return tally, st, fmt.Errorf("data file %s: columns %s", f.path, rec.Schema())
		}
	rows:
		for i := range int(rec.NumRows()) {
			if deletedAt[f.path][int64(i)] {
				st.posDeleted++
				continue
			}
			for _, s := range eqSeq[eqKey{ids.Value(i), cats.Value(i)}] {
				if s > f.seq {
					st.eqDeleted++
					continue rows
				}
			}
			payload := ""
			if pays.IsValid(i) {
				payload = pays.Value(i)
			}
			tally.Add(ids.Value(i), cats.Value(i), payload)
		}
		rec.Release()
	}
	return tally, st, nil
}

type readStats struct {
	data, pos, eq         int
	posDeleted, eqDeleted int
}

func seqOf(files []liveFile, path string) int64 {
	for _, f := range files {
		if f.path == path {
			return f.seq
		}
	}
	return -1 // not live: nothing to delete
}

// readParquet reads a whole file into one record.
func readParquet(ctx context.Context, path string) (arrow.RecordBatch, error) {
	r, err := file.OpenParquetFile(path, false)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	defer r.Close()
	fr, err := pqarrow.NewFileReader(r, pqarrow.ArrowReadProperties{}, memory.DefaultAllocator)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	tbl, err := fr.ReadTable(ctx)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	defer tbl.Release()
	tr := array.NewTableReader(tbl, -1)
	defer tr.Release()
	var recs []arrow.RecordBatch
	for tr.Next() {
		rec := tr.RecordBatch()
		rec.Retain()
		recs = append(recs, rec)
	}
	if len(recs) == 1 {
		return recs[0], nil
	}
	return concat(tbl.Schema(), recs)
}

func concat(sc *arrow.Schema, recs []arrow.RecordBatch) (arrow.RecordBatch, error) {
	defer func() {
		for _, r := range recs {
			r.Release()
		}
	}()
	cols := make([]arrow.Array, sc.NumFields())
	var n int64
	for _, r := range recs {
		n += r.NumRows()
	}
	for c := range cols {
		parts := make([]arrow.Array, len(recs))
		for i, r := range recs {
			parts[i] = r.Column(c)
		}
		a, err := array.Concatenate(parts, memory.DefaultAllocator)
		if err != nil {
			return nil, err
		}
		defer a.Release()
		cols[c] = a
	}
	return array.NewRecordBatch(sc, cols, n), nil
}

// stringArray is a string, large string or string view column.
type stringArray interface {
	Value(int) string
	IsValid(int) bool
}

func column(rec arrow.RecordBatch, name string) arrow.Array {
	idx := rec.Schema().FieldIndices(name)
	if len(idx) != 1 {
		return nil
	}
	return rec.Column(idx[0])
}

// localPath turns file:///x into /x.
func localPath(location string) string {
	if u, err := url.Parse(location); err == nil && u.Scheme == "file" {
		return filepath.Clean(filepath.FromSlash(u.Path))
	}
	return filepath.Clean(location)
}
