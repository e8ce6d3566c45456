package sparkrun

import (
	"context"
	"log/slog"

	"github.com/apache/iceberg-go/table"

	"github.com/icereactor/reactor/deletions"
	"github.com/icereactor/reactor/jobkind"
	"github.com/icereactor/reactor/jobs"
)

// recordOwnSnapshots writes, in the table's storage, the snapshots Spark
// committed for job (res.OwnSnapshots), so that a restarted planner reads
// them as reactor's own and not as another writer's commits (a sort's
// output as unsorted): Spark's procedures take no snapshot property that
// could say so. Records whose snapshots are all gone from the table are
// removed. A failure costs only a possible redo after a restart: logged.
func (r *Runner) recordOwnSnapshots(ctx context.Context, log *slog.Logger, job jobs.Job, after *table.Table, ids []int64) {
	fs, err := after.FS(ctx)
	if err != nil {
		log.Warn("could not record the snapshots Spark committed for the job", "error", err)
		return
	}
	recs := r.keys.Records(fs, deletions.RefOf(after))
	if len(ids) > 0 {
		rec := deletions.OwnSnapshots{Table: job.Table.String(), JobID: job.ID, Kind: job.Kind.String(), Sort: job.Kind == jobkind.Sort,
			SnapshotIDs: ids}
		if _, err := recs.WriteOwnSnapshots(rec); err != nil {
			log.Warn("could not record the snapshots Spark committed for the job; after a restart they may read as another writer's",
				"snapshots", ids, "error", err)
		}
	}
	refs, err := recs.ListOwnSnapshots()
	if err != nil {
		return
	}
	for _, ref := range refs {
		rec, err := recs.ReadOwnSnapshots(ref)
		if err != nil {
			continue // a refused record stays for an operator
		}
		live := false
		for _, id := range rec.SnapshotIDs {
			if after.Metadata().SnapshotByID(id) != nil {
				live = true
				break
			}
		}
		if !live {
			if err := recs.Remove(ref); err != nil {
				log.Debug("could not remove a stale own-snapshots record", "record", ref.Location, "error", err)
			}
		}
	}
}
