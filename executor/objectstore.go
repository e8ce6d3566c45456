package executor

// Tables on s3:// are read and written through objectio's FileIO, which
// registers itself for those schemes in place of iceberg-go's: one GET
// per small file, a connection pool shared across the FileIOs iceberg-go
// builds per scan and commit, and a read concurrency of its own
// (datapath.Scan).
import _ "github.com/icereactor/reactor/objectio"
