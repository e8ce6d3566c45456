package planner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	iofs "io/fs"

	iceio "github.com/apache/iceberg-go/io"
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
		if n, err = markRecordedOffloaded(fs, tbl.Location(), &st.counters); err == nil {
			st.offloadedLoaded = true
			if n > 0 {
				p.log.Info("snapshots reactor committed through Spark found", "table", st.name, "snapshots", n)
			}
			return
		}
	}
	p.log.Warn("could not read which snapshots reactor committed through Spark; will retry", "table", st.name, "error", err)
}

// markRecordedOffloaded marks in tc the snapshots of the table's
// own-snapshots records and returns how many. An unreadable record is
// skipped: at worst its snapshots read as another writer's.
func markRecordedOffloaded(fs iceio.IO, tableLocation string, tc *tableCounters) (int, error) {
	refs, err := deletions.ListOwnSnapshots(fs, tableLocation)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, ref := range refs {
		rec, err := deletions.ReadOwnSnapshots(fs, ref)
		if errors.Is(err, iofs.ErrNotExist) {
			continue
		}
		if err != nil {
			var syntax *json.SyntaxError
			var typ *json.UnmarshalTypeError
			if errors.As(err, &syntax) || errors.As(err, &typ) {
				continue
			}
			return n, fmt.Errorf("read %s: %w", ref.Location, err)
		}
		tc.markOffloaded(rec.SnapshotIDs, rec.Sort)
		n += len(rec.SnapshotIDs)
	}
	return n, nil
}
