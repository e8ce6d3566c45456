package deletions

import (
	"errors"
	"path"
	"regexp"
	"time"
)

// OwnSnapshots records snapshots a reactor job committed through Spark.
// Spark's procedures cannot add reactor.job-id to their snapshots'
// summaries, so without this record a restarted planner would read them
// as another writer's commits (and a sort's output as unsorted). One
// immutable file per job, written after the Spark job returned, beside the
// intents; the planner reads them when it first sees the table.
type OwnSnapshots struct {
	Table string `json:"table"`
	JobID string `json:"job_id"`
	Kind  string `json:"kind"`
	// Sort: the snapshots were written by a sort or z-order rewrite.
	Sort        bool      `json:"sort,omitempty"`
	SnapshotIDs []int64   `json:"snapshot_ids"`
	Written     time.Time `json:"written_at"`
}

var ownSnapshotsRE = regexp.MustCompile(`^spark-([A-Za-z0-9_-]{1,64})\.json$`)

// WriteOwnSnapshots stores rec.
func (r Records) WriteOwnSnapshots(rec OwnSnapshots) (Ref, error) {
	id := sanitize(rec.JobID)
	if id == "" {
		return Ref{}, errors.New("deletions: an own-snapshots record needs a job id")
	}
	loc := r.dir() + "/spark-" + id + ".json"
	return Ref{Location: loc}, r.write(loc, KindOwnSnapshots, rec)
}

// ListOwnSnapshots returns the table's own-snapshots records (none: an
// empty list).
func (r Records) ListOwnSnapshots() ([]Ref, error) {
	var refs []Ref
	err := r.walkFiles(func(p string) {
		if ownSnapshotsRE.MatchString(path.Base(p)) {
			refs = append(refs, Ref{Location: p})
		}
	})
	return refs, err
}

// ReadOwnSnapshots loads and verifies a stored own-snapshots record.
func (r Records) ReadOwnSnapshots(ref Ref) (OwnSnapshots, error) {
	var rec OwnSnapshots
	return rec, r.read(ref.Location, KindOwnSnapshots, &rec)
}
