package catalogs

import (
	"context"
	"errors"
	"fmt"

	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"

	"github.com/icereactor/reactor/redact"
)

// allowUnsafeCommits is iceberg-go's Hadoop catalog property that lets it
// open a warehouse on an object store.
const allowUnsafeCommits = "allow-unsafe-commits"

// ErrHadoopObjectStore marks a Hadoop catalog on an object store refused
// for writing.
var ErrHadoopObjectStore = errors.New("hadoop catalog on an object store refused")

// checkHadoop refuses a Hadoop catalog whose warehouse is on an object
// store (s3, gs, abfs, ...) unless the command only reads or the user
// accepted the risk. iceberg-go's "rename unless it exists" is a hard link
// on a local file system, but on an object store it is check, copy,
// delete: two writers both see the version free and both copy. Tried with
// two writers over an S3 gateway: 2-7 of 120 commits reported as done
// were lost, and 2-6 reported as conflicts had landed. reactor deletes
// the files of an attempt that lost a conflict, so a landed one would
// point at deleted files. iceberg-go's own allow-unsafe-commits is not
// enough: it is often set to make a demo work.
func checkHadoop(cfg Config) error {
	if !isType(cfg.Props, TypeHadoop) {
		return nil
	}
	wh := cfg.Props["warehouse"]
	scheme := warehouseScheme(wh)
	if localScheme(scheme) || cfg.ReadOnly || cfg.AcceptHadoopObjectStoreRisk {
		return nil
	}
	return fmt.Errorf("%w: %w: the warehouse %s is on an object store (%s://), where iceberg-go's Hadoop catalog commits by check, copy and delete, "+
		"which is not atomic: a commit reported as done can be lost, one reported as a conflict can have landed, and reactor deletes "+
		"the files of an attempt that lost a conflict. allow-unsafe-commits does not change that. Use a catalog with atomic commits "+
		"(hive, glue, sql or rest), or the Hadoop catalog on a local or mounted file system; plan, health and dry runs may read it as it is; "+
		"to write anyway, set --accept-hadoop-object-store-risk as well (docs/operations.md#hadoop-on-an-object-store)",
		ErrConfig, ErrHadoopObjectStore, redact.String(wh), scheme)
}

// hadoopObjectStore serves a Hadoop catalog on an object store whose risk
// the user accepted: a conflict it reports may have landed, so it is
// reported as an unknown outcome (the executor then keeps the attempt's
// files, and orphan cleanup decides about them later) instead of as a
// conflict (whose files would be deleted).
type hadoopObjectStore struct{ catalog.Catalog }

// ErrUnknownOutcome marks a commit whose outcome the catalog cannot tell.
var ErrUnknownOutcome = errors.New("commit outcome unknown")

func (h hadoopObjectStore) CommitTable(ctx context.Context, ident table.Identifier, reqs []table.Requirement, updates []table.Update) (table.Metadata, string, error) {
	meta, loc, err := h.Catalog.CommitTable(ctx, ident, reqs, updates)
	if err != nil && errors.Is(err, table.ErrCommitFailed) {
		// The text stays; the conflict mark (table.ErrCommitFailed) goes.
		return nil, "", fmt.Errorf("%w: the hadoop catalog on an object store reported a conflict, which may have landed: %s", ErrUnknownOutcome, err.Error())
	}
	return meta, loc, err
}
