package executor

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strconv"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/iceberg-go"
	iceio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"
	"github.com/google/uuid"

	"github.com/icereactor/reactor/executor/internal/commit"
	"github.com/icereactor/reactor/executor/internal/datapath"
	"github.com/icereactor/reactor/executor/internal/eqkeys"
	"github.com/icereactor/reactor/jobs"
)

// match reads the converted deletes' keys, then the equality columns of
// every data file one of them applies to, and records the rows they hold.
func (cv *conversion) match(ctx context.Context, fs iceio.IO) error {
	sets := map[string]map[string]*eqKeySet{} // scope -> field set -> keys
	classes := map[int]byte{}                 // field id -> value class, from the delete files
	for _, d := range cv.deletes {
		if err := ctx.Err(); err != nil {
			return err
		}
		bySet := sets[d.scope]
		if bySet == nil {
			bySet = map[string]*eqKeySet{}
			sets[d.scope] = bySet
		}
		ks := bySet[d.setKey]
		if ks == nil {
			ks = &eqKeySet{ids: d.ids, keys: map[string]int64{}}
			bySet[d.setKey] = ks
		}
		var key []byte
		n, err := eqkeys.ReadColumns(ctx, fs, d.file.FilePath(), d.ids, func(cols []arrow.Array, rows int) error {
			for _, id := range d.ids {
				dt := cols[slices.Index(d.ids, id)].DataType()
				c, ok := eqkeys.Class(dt)
				if !ok {
					return fmt.Errorf("%w: field %d is %s in %s, a type the conversion does not compare", ErrEqualityTypeMismatch, id, dt, d.file.FilePath())
				}
				if prev, ok := classes[id]; ok && prev != c {
					return fmt.Errorf("%w: field %d has two types among the equality delete files (%s)", ErrEqualityTypeMismatch, id, d.file.FilePath())
				}
				classes[id] = c
			}
			for r := range rows {
				key = key[:0]
				for _, col := range cols {
					key = eqkeys.AppendValue(key, col, r)
				}
				if seq, ok := ks.keys[string(key)]; !ok || seq < d.seq {
					ks.keys[string(key)] = d.seq
				}
			}
			return nil
		})
		cv.counts.BytesRead += n
		if err != nil {
			return fmt.Errorf("read equality delete %s: %w", d.file.FilePath(), err)
		}
	}

	for _, df := range cv.data {
		if err := ctx.Err(); err != nil {
			return err
		}
		var (
			apply  []*eqKeySet
			fields []int
		)
		for _, scope := range []string{df.scope, ""} {
			for setKey, ks := range sets[scope] {
				if !cv.anyApplies(scope, setKey, df) {
					continue
				}
				apply = append(apply, ks)
				for _, id := range ks.ids {
					if !slices.Contains(fields, id) {
						fields = append(fields, id)
					}
				}
			}
			if df.scope == "" {
				break
			}
		}
		if len(apply) == 0 {
			continue
		}
		slices.Sort(fields)
		cv.counts.DataFilesScanned++
		path := df.file.FilePath()
		var (
			pos     int64
			matched []int64
			key     []byte
		)
		n, err := eqkeys.ReadColumns(ctx, fs, path, fields, func(cols []arrow.Array, rows int) error {
			for i, id := range fields {
				c, ok := eqkeys.Class(cols[i].DataType())
				if !ok || c != classes[id] {
					return fmt.Errorf("%w: field %d is %s in data file %s, not the type of the equality deletes' column",
						ErrEqualityTypeMismatch, id, cols[i].DataType(), path)
				}
			}
			idx := make([][]int, len(apply))
			for i, ks := range apply {
				for _, id := range ks.ids {
					idx[i] = append(idx[i], slices.Index(fields, id))
				}
			}
			for r := range rows {
				for i, ks := range apply {
					key = key[:0]
					for _, c := range idx[i] {
						key = eqkeys.AppendValue(key, cols[c], r)
					}
					if seq, ok := ks.keys[string(key)]; ok && seq > df.seq {
						matched = append(matched, pos+int64(r))
						break
					}
				}
			}
			pos += int64(rows)
			return nil
		})
		cv.counts.BytesRead += n
		if err != nil {
			return fmt.Errorf("read data file %s: %w", path, err)
		}
		if len(matched) == 0 {
			continue
		}
		cv.counts.RowsMatched += int64(len(matched))
		// Position deletes are bound to their data file's (spec,
		// partition); unpartitioned specs share the scope "".
		group := strconv.Itoa(int(df.file.SpecID())) + "#" + df.scope
		g := cv.groups[group]
		if g == nil {
			g = &posGroup{sample: df.file, rows: map[string][]int64{}}
			cv.groups[group] = g
		}
		g.rows[path] = matched
	}
	return nil
}

// anyApplies reports whether a converted delete of scope and field set
// applies to df: only then is its key set asked about df's rows (a key
// set's sequence numbers are those of the deletes holding each key).
func (cv *conversion) anyApplies(scope, setKey string, df eqDataFile) bool {
	for _, d := range cv.deletes {
		if d.scope == scope && d.setKey == setKey && d.applies(df) {
			return true
		}
	}
	return false
}

// convertedDeleteSuffix ends the name of every position-delete file the
// conversion writes.
const convertedDeleteSuffix = "-converted-deletes.parquet"

// write writes one position-delete file per (spec, partition) of matched
// rows, sorted by (file_path, pos) as the spec requires.
func (cv *conversion) write(ctx context.Context, tbl *table.Table, wfs iceio.WriteFileIO) error {
	meta := tbl.Metadata()
	sc, err := table.SchemaToArrowSchema(iceberg.PositionalDeleteSchema, nil, true, false)
	if err != nil {
		return fmt.Errorf("arrow schema: %w", err)
	}
	props := parquet.NewWriterProperties(parquet.WithStats(true), parquet.WithCompression(datapath.DeleteCodec(meta.Properties())))
	writeID := uuid.New()
	for n, name := range slices.Sorted(maps.Keys(cv.groups)) {
		if err := ctx.Err(); err != nil {
			return err
		}
		g := cv.groups[name]
		if g.dv != nil {
			if err := writeDVMerge(ctx, tbl, wfs, g.dv, writeID); err != nil {
				return err
			}
			g.outs, g.outSeqs = g.dv.outputs, g.dv.outSeqs
			continue
		}
		spec := meta.PartitionSpecByID(int(g.sample.SpecID()))
		if spec == nil {
			return fmt.Errorf("unknown partition spec %d", g.sample.SpecID())
		}
		locate, err := datapath.PartitionLocation(tbl, spec, g.sample)
		if err != nil {
			return err
		}
		type row struct {
			path string
			pos  int64
		}
		var rows []row
		for path, positions := range g.rows {
			for _, p := range positions {
				rows = append(rows, row{path, p})
			}
		}
		slices.SortFunc(rows, func(a, b row) int {
			if c := cmp.Compare(a.path, b.path); c != 0 {
				return c
			}
			return cmp.Compare(a.pos, b.pos)
		})
		g.path = locate(fmt.Sprintf("%s-%05d%s", writeID, n, convertedDeleteSuffix))
		size, fmeta, err := datapath.WritePositionDeleteFile(wfs, g.path, sc, props, len(rows), func(i int) (string, int64) {
			return rows[i].path, rows[i].pos
		})
		if err != nil {
			return fmt.Errorf("write %s: %w", g.path, err)
		}
		df, err := table.DataFileFromMetadata(table.DataFileArgs{
			Schema:          iceberg.PositionalDeleteSchema,
			Spec:            *spec,
			Format:          iceberg.ParquetFile,
			Metadata:        fmeta,
			FilePath:        g.path,
			FileSize:        size,
			Content:         iceberg.EntryContentPosDeletes,
			PartitionValues: g.sample.Partition(),
			// Exact file_path bounds: a file naming one data file is then
			// file-scoped, and scan planning tries it against that file only.
			Properties:    iceberg.Properties{table.MetricsModeColumnConfPrefix + ".file_path": "full"},
			FormatVersion: meta.Version(),
		})
		if err != nil {
			return fmt.Errorf("describe %s: %w", g.path, err)
		}
		g.outs, g.outSeqs = []iceberg.DataFile{df}, []int64{cv.maxSeq}
	}
	return nil
}

// commitConversion removes the converted equality deletes and adds the
// position deletes in one snapshot through the staged commit (format v2;
// on v3 the deletion vectors, with the vectors they replace removed),
// retrying lost races within the job's budget. Every attempt validates
// what was committed since the conversion read its snapshot:
//
//   - a converted delete removed meanwhile (another conversion, a
//     compaction that found it dead) ends the attempt: ErrInputsGone, on
//     which convertEqualityDeletes plans again;
//   - a scanned data file removed meanwhile (a compaction rewrote it) ends
//     it too: its rows may live on in a file the positions do not name;
//   - a data file added at a sequence number below a converted delete's in
//     its scope (a rewrite keeping old sequence numbers) would lose that
//     delete with nothing in its place: ErrInputsGone as well.
//
// Data files writers add meanwhile carry a higher sequence number than any
// converted delete, which never applied to them; deletes writers add are
// other files and stay.
//
// The position deletes get the highest sequence number of the converted
// deletes: every file they name is below it (a position delete applies at
// or below its own), and a low number lets a later compaction find them
// dead sooner than the commit's own would.
func (e *Executor) commitConversion(ctx context.Context, log *slog.Logger, job jobs.Job, planned *table.Table, fs iceio.IO,
	cv *conversion, rep *Report) (*table.Table, error) {
	scanned := map[string]bool{}
	for _, g := range cv.groups {
		for path := range g.rows {
			scanned[path] = true
		}
	}
	// Files read but without a match are inputs too: a delete went because
	// none of their rows matched.
	for _, df := range cv.data {
		for _, d := range cv.deletes {
			if d.applies(df) {
				scanned[df.file.FilePath()] = true
				break
			}
		}
	}
	floor := map[string]int64{} // scope -> highest converted sequence number
	for _, d := range cv.deletes {
		floor[d.scope] = max(floor[d.scope], d.seq)
	}
	keys := jobs.NewKeyer(planned.Metadata())
	meta := planned.Metadata()
	st := &commit.Staged{
		FS: fs, Op: table.OpReplace,
		Props:       iceberg.Properties{jobs.SnapshotJobProperty: job.ID},
		Always:      map[string]iceberg.DataFile{},
		DataTracked: true,
		Validate: func(snapID int64, entry iceberg.ManifestEntry) error {
			df := entry.DataFile()
			if df.ContentType() != iceberg.EntryContentData {
				return nil
			}
			switch entry.Status() {
			case iceberg.EntryStatusDELETED:
				if scanned[df.FilePath()] {
					return fmt.Errorf("%w: snapshot %d removed data file %s the conversion read", commit.ErrInputsGone, snapID, df.FilePath())
				}
			case iceberg.EntryStatusADDED:
				seq := entry.SequenceNum()
				scope := scopeKey(keys, meta, df)
				below := func(s string) bool { f, ok := floor[s]; return ok && (seq < 0 || seq < f) }
				if below(scope) || below("") {
					return fmt.Errorf("%w: snapshot %d added data file %s at sequence number %d, below converted equality deletes",
						commit.ErrInputsGone, snapID, df.FilePath(), seq)
				}
			}
			return nil
		},
	}
	for _, d := range cv.deletes {
		st.Always[d.file.FilePath()] = d.file
	}
	for _, name := range slices.Sorted(maps.Keys(cv.groups)) {
		g := cv.groups[name]
		for i, out := range g.outs {
			st.AddDeletes = append(st.AddDeletes, commit.DeleteAddition{File: out, Seq: g.outSeqs[i]})
		}
		if g.dv != nil {
			// Each vector replaces its data file's vectors, removed in
			// the same snapshot (at most one per data file).
			for _, src := range g.dv.remove {
				st.Always[commit.FileKey(src.file)] = src.file
			}
		}
	}
	if cv.v3 {
		validate := st.Validate
		st.Validate = func(snapID int64, entry iceberg.ManifestEntry) error {
			df := entry.DataFile()
			if entry.Status() == iceberg.EntryStatusADDED && df.ContentType() == iceberg.EntryContentPosDeletes {
				// A writer's vector for a file the conversion writes one
				// for would be a second: plan again and merge it.
				if ref := commit.ReferencedDataFile(df); ref != "" && scanned[ref] {
					return fmt.Errorf("%w: snapshot %d added position deletes %s for %s, which the conversion writes a deletion vector for",
						commit.ErrInputsGone, snapID, commit.FileKey(df), ref)
				}
			}
			return validate(snapID, entry)
		}
	}
	return e.commitStaged(ctx, log, job, planned, fs, st, rep, "equality-delete conversion")
}

// parquetBlocks says why a v3 conversion must wait: a scope it writes
// deletion vectors for holds Parquet position deletes, which a new vector
// would have to replace (the planner's deletion_vector_rules has the
// position-delete rewrite turn them into vectors first).
func (cv *conversion) parquetBlocks() string {
	for _, name := range slices.Sorted(maps.Keys(cv.groups)) {
		if n := cv.parquetPos[name]; n > 0 {
			return fmt.Sprintf("format v3: %d Parquet position-delete files in spec#partition %s must become deletion vectors first (rewrite_position_deletes)",
				n, name)
		}
	}
	return ""
}

// planDVs turns each group's matched rows into one deletion vector per data
// file (format v3), merged with the file's live vectors, which the commit
// removes. A vector's data sequence number is the highest of the converted
// deletes and the vectors it replaces: every row it deletes was deleted at
// or below it, and its data file is below the delete that matched it.
func (cv *conversion) planDVs(ctx context.Context, fs iceio.IO) error {
	rows := map[string]int64{}
	for _, df := range cv.data {
		rows[df.file.FilePath()] = df.file.Count()
	}
	for _, name := range slices.Sorted(maps.Keys(cv.groups)) {
		g := cv.groups[name]
		m := &deleteMerge{dv: true, specID: g.sample.SpecID(), values: g.sample.Partition(), sample: g.sample}
		for _, path := range slices.Sorted(maps.Keys(g.rows)) {
			t := &dvTarget{path: path, seq: cv.maxSeq, rows: rows[path], dvs: cv.dvs[path], parq: g.rows[path]}
			for _, d := range t.dvs {
				t.seq = max(t.seq, d.seq)
			}
			if err := t.merge(ctx, fs); err != nil {
				return err
			}
			m.targets = append(m.targets, t)
			m.remove = append(m.remove, t.dvs...)
		}
		g.dv = m
	}
	return nil
}
