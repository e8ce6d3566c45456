package planner

import (
	"context"
	"errors"
	"fmt"
	iofs "io/fs"

	"github.com/apache/iceberg-go/table"

	"github.com/icereactor/reactor/deletions"
)

// loadOffloadedLocked marks the snapshots reactor's jobs committed through
// Spark, as recorded in the table's storage (sparkrun writes the record
// after the Spark job returns), the first time the table is seen and
// before its state is built: a restarted or new owner then reads them as
// reactor's own, not as another writer's commits, and a sort's output as
// sorted, so it does not redo the sort. A failed read is retried at the
// next observation.
func (p *Planner) loadOffloadedLocked(ctx context.Context, st *tableState, tbl *table.Table) {
	fs, err := tbl.FS(ctx)
	if err == nil {
		var n int
		if n, err = p.markRecordedOffloaded(p.keys.Records(fs, deletions.RefOf(tbl)), st.table.String(), &st.counters); err == nil {
			st.offloadedLoaded = true
			if n > 0 {
				p.log.Info("snapshots reactor committed through Spark found", "table", st.table.String(), "snapshots", n)
			}
			return
		}
	}
	p.log.Warn("could not read which snapshots reactor committed through Spark; will retry", "table", st.table.String(), "error", err)
}

// markRecordedOffloaded marks in tc the snapshots of the table's
// own-snapshots records and returns how many. A record that is not
// reactor's own for this table is refused (logged once, its snapshots read
// as another writer's, the worst a forged record could cause otherwise too),
// and an unreadable one skipped.
func (p *Planner) markRecordedOffloaded(recs deletions.Records, name string, tc *tableCounters) (int, error) {
	refs, err := recs.ListOwnSnapshots()
	if err != nil {
		return 0, err
	}
	n := 0
	for _, ref := range refs {
		rec, err := recs.ReadOwnSnapshots(ref)
		if errors.Is(err, iofs.ErrNotExist) {
			continue
		}
		var refused *deletions.Refusal
		if errors.As(err, &refused) {
			p.met.RecordsRefused.WithLabelValues(name, refused.Reason).Inc()
			p.log.Error("reactor record refused: not acted on, left in place for an operator (docs/operations.md#refused-records)",
				"table", name, "record", ref.Location, "reason", refused.Reason, "detail", refused.Detail)
			continue
		}
		if err != nil {
			return n, fmt.Errorf("read %s: %w", ref.Location, err)
		}
		tc.markOffloaded(rec.SnapshotIDs, rec.Sort)
		n += len(rec.SnapshotIDs)
	}
	return n, nil
}
