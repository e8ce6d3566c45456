package commit

import (
	"strconv"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
)

// FileKey names one live file of a snapshot in a staged rewrite: its path,
// except for a deletion vector, which is one blob of a Puffin file that may
// hold the deletion vectors of many data files (Spark writes one Puffin file
// per task): the path and the blob's offset. Keys of Always and Optional
// are FileKeys, so removing one deletion vector never removes its
// neighbours in the same Puffin file.
func FileKey(df iceberg.DataFile) string {
	if table.IsDeletionVector(df) {
		if off := df.ContentOffset(); off != nil {
			return df.FilePath() + "#" + strconv.FormatInt(*off, 10)
		}
	}
	return df.FilePath()
}
