package executor

import (
	iceio "github.com/apache/iceberg-go/io"

	// Tables on s3:// are read and written through objectio's FileIO,
	// which registers itself for those schemes in place of iceberg-go's:
	// one GET per small file, a connection pool shared across the
	// FileIOs iceberg-go builds per scan and commit, and a read
	// concurrency of its own (datapath.Scan, storeConcurrency).
	"github.com/icereactor/reactor/objectio"
)

// storeConcurrency is how many manifests a history sync reads, or files
// expiry deletes, at once on fs: the object store's read concurrency
// (each is a round trip), or 0 on a local warehouse (the history index's
// default of 4 readers; deletions one at a time).
func storeConcurrency(fs iceio.IO) int { return objectio.ReadConcurrency(fs) }
