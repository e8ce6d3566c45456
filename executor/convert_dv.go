package executor

import (
	"context"
	"fmt"
	"maps"
	"slices"

	iceio "github.com/apache/iceberg-go/io"
)

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
