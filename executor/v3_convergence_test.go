package executor_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"
)

// Convergence on tables upgraded from v2 to v3 after a random number of
// writes (TestConvergence's random tables and thresholds otherwise): the
// Parquet position deletes from before the upgrade and the deletion
// vectors after it settle within maxJobsPerKind jobs per partition and
// kind, rows exact, a second look and a fresh reactor schedule nothing,
// and the settled table keeps the v3 rules (v3RuleBreaks).
func TestConvergenceV3(t *testing.T) {
	n := *convergenceSeeds
	if n == 0 {
		n = 6
		if testing.Short() {
			n = 2
		}
	}
	for seed := range uint64(n) {
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) { convergenceRunOn(t, 100+seed, true) })
	}
}

// upgradeToV3 upgrades the table to format v3 in a commit of its own, as
// ALTER TABLE ... SET TBLPROPERTIES ('format-version'='3') does.
func upgradeToV3(ctx context.Context, cat catalog.Catalog, ident table.Identifier) error {
	tbl, err := cat.LoadTable(ctx, ident)
	if err != nil {
		return err
	}
	txn := tbl.NewTransaction()
	if err := txn.UpgradeFormatVersion(3); err != nil {
		return fmt.Errorf("upgrade to v3: %w", err)
	}
	if _, err := txn.Commit(ctx); err != nil {
		return fmt.Errorf("upgrade to v3: %w", err)
	}
	return nil
}
