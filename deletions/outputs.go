package deletions

import (
	"errors"
	"path"
	"regexp"
	"slices"
	"strings"
	"time"
)

// OutputIntent records a rewriting job (compaction, sort, position-delete
// rewrite) about to write output files, before it writes the first. A job
// killed between its outputs and its commit leaves the intent behind, and
// the table's next owner deletes the outputs the table does not reference
// instead of leaving them to orphan cleanup's margin. The job removes the
// intent itself after it committed, or after it deleted its outputs; an
// unknown commit outcome leaves it for the next owner, who can tell.
type OutputIntent struct {
	Table string `json:"table"`
	JobID string `json:"job_id"`
	Kind  string `json:"kind"`
	// Token is in the name of every output file reactor's own writers
	// name for the job: a later owner finds the outputs by listing Dirs.
	Token string `json:"token"`
	// BaseMetadata is the metadata file the job planned from.
	BaseMetadata string `json:"base_metadata"`
	// Dirs are where the outputs go: the table's data directories, as
	// the metadata the job loaded named them.
	Dirs []string `json:"dirs"`
	// Planned are outputs of a writer reactor does not name (iceberg-go's
	// fallback writer), each added here before its file is created.
	Planned []string `json:"planned,omitempty"`
	// Leased: the job ran under a table lease (a replica's commit guard).
	// Only such a job's outputs may be deleted by a later owner: a
	// one-shot command holds no lease and may still be running beside a
	// replica, about to commit them.
	Leased  bool      `json:"leased"`
	Written time.Time `json:"written_at"`
}

var outputIntentRE = regexp.MustCompile(`^outputs-([A-Za-z0-9_-]{1,64})\.json$`)

// WriteOutputIntent stores in (again, replacing it, when Planned grew).
func (r Records) WriteOutputIntent(in OutputIntent) (Ref, error) {
	id := sanitize(in.JobID)
	if id == "" {
		return Ref{}, errors.New("deletions: an output intent needs a job id")
	}
	loc := r.dir() + "/outputs-" + id + ".json"
	if err := r.write(loc, KindOutputIntent, in); err != nil {
		return Ref{}, err
	}
	return Ref{Location: loc, Intent: true}, nil
}

// ListOutputIntents returns the table's output intents in name order; none
// (no directory at all) is an empty list. List never returns them: they
// are not deletion batches.
func (r Records) ListOutputIntents() ([]Ref, error) {
	var refs []Ref
	err := r.walkFiles(func(p string) {
		if outputIntentRE.MatchString(path.Base(p)) {
			refs = append(refs, Ref{Location: p, Intent: true})
		}
	})
	if err != nil {
		return nil, err
	}
	slices.SortFunc(refs, func(a, b Ref) int { return strings.Compare(a.Location, b.Location) })
	return refs, nil
}

// ReadOutputIntent loads and verifies a stored output intent.
func (r Records) ReadOutputIntent(ref Ref) (OutputIntent, error) {
	var in OutputIntent
	return in, r.read(ref.Location, KindOutputIntent, &in)
}
