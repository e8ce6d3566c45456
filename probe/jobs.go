package probe

import (
	"encoding/json"
	"fmt"
	"maps"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/icereactor/reactor/events"
	"github.com/icereactor/reactor/jobkind"
)

// JobOutcome is a (kind, outcome) pair of finished jobs.
type JobOutcome struct{ Kind, Outcome string }

// JobTally adds up reactor's job events.
type JobTally struct {
	Scheduled map[string]int     // by kind
	Started   map[string]int     // by kind
	Finished  map[JobOutcome]int // by kind and outcome
	// RewrittenBytes is the size of the data files compaction and sort
	// rewrites replaced (rewritten_bytes_count): write amplification's
	// numerator.
	RewrittenBytes int64
	RewrittenFiles int64 // data files replaced
	AddedFiles     int64 // data files written by rewrites
	// ExpiredSnapshots counts snapshots expiry removed.
	ExpiredSnapshots int64
	// The files expiry took out of the table's history (data and delete
	// files, manifests, manifest lists, statistics files): ExpiryDeletedFiles
	// were deleted when it committed (its deleted_*_count), ExpiryDeferredFiles
	// wait for min_reader_margin (deletion_deferred_files_count).
	ExpiryDeletedFiles  int64
	ExpiryDeferredFiles int64
	// DeferredDeletedFiles counts the files the later deletion passes
	// (delete_expired_files) deleted; DeferredKeptFiles those they found
	// referenced again and kept (still_referenced_files_count).
	DeferredDeletedFiles int64
	DeferredKeptFiles    int64
	// LastFinished is when the latest job of each kind finished.
	LastFinished map[string]time.Time
	// LastError is the error of the latest job of each kind that gave up
	// or failed.
	LastError map[string]string
	// Malformed counts job events that did not decode.
	Malformed int
}

// Count returns the finished jobs of kind with outcome.
func (t JobTally) Count(kind, outcome string) int { return t.Finished[JobOutcome{kind, outcome}] }

// Outcome returns the finished jobs of every kind with outcome.
func (t JobTally) Outcome(outcome string) int {
	n := 0
	for k, v := range t.Finished {
		if k.Outcome == outcome {
			n += v
		}
	}
	return n
}

// Running is the number of jobs scheduled and not yet finished (queued or
// running).
func (t JobTally) Running() int {
	n := 0
	for _, v := range t.Scheduled {
		n += v
	}
	for _, v := range t.Finished {
		n -= v
	}
	return max(n, 0)
}

func (t *JobTally) add(ev events.JobEvent) {
	switch ev.Phase {
	case events.JobScheduled:
		t.Scheduled[ev.Kind]++
		return
	case events.JobStarted:
		t.Started[ev.Kind]++
		return
	}
	if !ev.Terminal() {
		return
	}
	t.Finished[JobOutcome{ev.Kind, ev.Outcome}]++
	if ev.Time.After(t.LastFinished[ev.Kind]) {
		t.LastFinished[ev.Kind] = ev.Time
	}
	if ev.Error != "" {
		t.LastError[ev.Kind] = ev.Error
	}
	c := ev.Counts
	// An event's kind is read as the wire spells it; an unknown one (a newer
	// reactor's) only misses these sums.
	kind, _ := jobkind.Parse(ev.Kind)
	switch kind {
	case jobkind.Compact, jobkind.Sort:
		t.RewrittenBytes += c["rewritten_bytes_count"]
		t.RewrittenFiles += c["rewritten_data_files_count"]
		t.AddedFiles += c["added_data_files_count"]
	case jobkind.ExpireSnapshots:
		t.ExpiredSnapshots += c["expired_snapshots_count"]
		t.ExpiryDeletedFiles += deletedFiles(c)
		t.ExpiryDeferredFiles += c["deletion_deferred_files_count"]
	case jobkind.DeleteExpiredFiles:
		t.DeferredDeletedFiles += deletedFiles(c)
		t.DeferredKeptFiles += c["still_referenced_files_count"]
	}
}

// PendingDeletion is the number of files expiry left for a later pass that
// no pass has dealt with yet.
func (t JobTally) PendingDeletion() int64 {
	return max(t.ExpiryDeferredFiles-t.DeferredDeletedFiles-t.DeferredKeptFiles, 0)
}

// deletedFiles adds up a job's deleted_*_count figures (data, position and
// equality delete files, manifests, manifest lists, statistics files: Spark's
// expire_snapshots columns).
func deletedFiles(counts map[string]int64) int64 {
	var n int64
	for k, v := range counts {
		if strings.HasPrefix(k, "deleted_") && strings.HasSuffix(k, "_count") {
			n += v
		}
	}
	return n
}

func (t JobTally) clone() JobTally {
	t.Scheduled = maps.Clone(t.Scheduled)
	t.Started = maps.Clone(t.Started)
	t.Finished = maps.Clone(t.Finished)
	t.LastError = maps.Clone(t.LastError)
	t.LastFinished = maps.Clone(t.LastFinished)
	return t
}

// Jobs follows reactor's job events on NATS.
type Jobs struct {
	conn  *nats.Conn
	sub   *nats.Subscription
	mu    sync.Mutex
	tally JobTally
}

// WatchJobs subscribes to every job event under prefix (reactor's
// --job-subject-prefix; "" for events.DefaultJobSubjectPrefix).
func WatchJobs(conn *nats.Conn, prefix string) (*Jobs, error) {
	if prefix == "" {
		prefix = events.DefaultJobSubjectPrefix
	}
	j := &Jobs{conn: conn, tally: JobTally{
		Scheduled: map[string]int{}, Started: map[string]int{},
		Finished: map[JobOutcome]int{}, LastError: map[string]string{}, LastFinished: map[string]time.Time{},
	}}
	sub, err := conn.Subscribe(prefix+".>", func(m *nats.Msg) {
		var ev events.JobEvent
		err := json.Unmarshal(m.Data, &ev)
		j.mu.Lock()
		defer j.mu.Unlock()
		if err != nil {
			j.tally.Malformed++
			return
		}
		j.tally.add(ev)
	})
	if err != nil {
		return nil, fmt.Errorf("probe: subscribe to job events: %w", err)
	}
	// The subscription is live once the server has it: flush, so no event
	// published after WatchJobs returns is missed.
	if err := conn.Flush(); err != nil {
		_ = sub.Unsubscribe()
		return nil, fmt.Errorf("probe: subscribe to job events: %w", err)
	}
	j.sub = sub
	return j, nil
}

// Tally returns a copy of the counts so far.
func (j *Jobs) Tally() JobTally {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.tally.clone()
}

// Stop delivers the events already received and unsubscribes.
func (j *Jobs) Stop() error {
	if err := j.sub.Drain(); err != nil && err != nats.ErrConnectionClosed {
		return fmt.Errorf("probe: stop watching job events: %w", err)
	}
	return nil
}
