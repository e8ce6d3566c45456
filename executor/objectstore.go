package executor

import (
	iceio "github.com/apache/iceberg-go/io"

	// Tables on s3:// are read and written through objectio's FileIO,
	// which registers itself for those schemes in place of iceberg-go's:
	// one GET per small file, a connection pool shared across the
	// FileIOs iceberg-go builds per scan and commit, and a read
	// concurrency of its own (datapath.Scan, manifestReaders).
	"github.com/icereactor/reactor/objectio"
)

// manifestReaders is how many manifests a history sync reads at once
// from fs: the object store's read concurrency, or the history index's
// default (0) on a local warehouse.
func manifestReaders(fs iceio.IO) int { return objectio.ReadConcurrency(fs) }
