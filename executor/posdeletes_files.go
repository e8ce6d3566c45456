package executor

import (
	"context"
	"fmt"

	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/iceberg-go"
	iceio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"
	"github.com/google/uuid"

	"github.com/icereactor/reactor/executor/internal/datapath"
)

// writeDeleteMerge writes m's rows as position-delete files of m's
// partition, rolling to a new file every rowsPerFile rows.
func writeDeleteMerge(ctx context.Context, tbl *table.Table, wfs iceio.WriteFileIO, m *deleteMerge, writeID uuid.UUID) error {
	meta := tbl.Metadata()
	spec := meta.PartitionSpecByID(int(m.specID))
	if spec == nil {
		return fmt.Errorf("unknown partition spec %d", m.specID)
	}
	locate, err := datapath.PartitionLocation(tbl, spec, m.sample)
	if err != nil {
		return err
	}
	sc, err := table.SchemaToArrowSchema(iceberg.PositionalDeleteSchema, nil, true, false)
	if err != nil {
		return fmt.Errorf("arrow schema: %w", err)
	}
	props := parquet.NewWriterProperties(parquet.WithStats(true), parquet.WithCompression(datapath.DeleteCodec(meta.Properties())))
	for start := 0; start < len(m.rows); start += m.rowsPerFile {
		if err := ctx.Err(); err != nil {
			return err
		}
		rows := m.rows[start:min(start+m.rowsPerFile, len(m.rows))]
		path := locate(fmt.Sprintf("%s-%05d%s", writeID, len(m.written), mergedDeleteSuffix))
		m.written = append(m.written, path)
		size, fmeta, err := datapath.WritePositionDeleteFile(wfs, path, sc, props, len(rows), func(i int) (string, int64) {
			return m.paths[rows[i].file], rows[i].pos
		})
		if err != nil {
			return fmt.Errorf("write %s: %w", path, err)
		}
		df, err := table.DataFileFromMetadata(table.DataFileArgs{
			Schema:          iceberg.PositionalDeleteSchema,
			Spec:            *spec,
			Format:          iceberg.ParquetFile,
			Metadata:        fmeta,
			FilePath:        path,
			FileSize:        size,
			Content:         iceberg.EntryContentPosDeletes,
			PartitionValues: m.values,
			// Exact file_path bounds: with the default truncate(16) every
			// merged file would look partition-scoped and scan planning
			// would try it against every data file of the partition.
			Properties:    iceberg.Properties{table.MetricsModeColumnConfPrefix + ".file_path": "full"},
			FormatVersion: meta.Version(),
		})
		if err != nil {
			return fmt.Errorf("describe %s: %w", path, err)
		}
		m.outputs = append(m.outputs, df)
	}
	return nil
}
