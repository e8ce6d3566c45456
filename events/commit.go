package events

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
)

// ErrMalformed marks input that can never be applied, however often it is
// redelivered: broken JSON, a missing table name, a negative snapshot id.
// Callers dead-letter it instead of retrying.
var ErrMalformed = errors.New("malformed event")

// CommitEvent is what a streaming writer publishes after each Iceberg commit.
//
// Wire form (JSON, unknown fields ignored):
//
//	{
//	  "catalog":     "default",              // optional; events for another catalog are skipped
//	  "namespace":   "analytics",            // required; nested namespaces dot-joined ("a.b")
//	  "table":       "events",               // required
//	  "snapshot_id": 3051729675574597004,    // required, > 0
//	  "operation":   "append",               // optional: append | overwrite | delete | replace
//	  "summary":     {"added-data-files": "1"},         // optional, the snapshot summary
//	  "partitions":  ["category=books"],     // optional, touched partitions (informational)
//	  "committed_at": "2026-11-29T12:00:00Z" // optional, RFC 3339
//	}
//
// The snapshot id is what makes the event idempotent: an event for a
// snapshot reactor has already applied is acknowledged and changes nothing.
type CommitEvent struct {
	Catalog     string            `json:"catalog,omitempty"`
	Namespace   string            `json:"namespace"`
	Table       string            `json:"table"`
	SnapshotID  int64             `json:"snapshot_id"`
	Operation   string            `json:"operation,omitempty"`
	Summary     map[string]string `json:"summary,omitempty"`
	Partitions  []string          `json:"partitions,omitempty"`
	CommittedAt *time.Time        `json:"committed_at,omitempty"`
}

// QualifiedName is "namespace.table", the name thresholds and logs use.
func (e CommitEvent) QualifiedName() string { return e.Namespace + "." + e.Table }

// NamespaceLevels splits the dot-joined namespace into its levels.
func (e CommitEvent) NamespaceLevels() []string { return strings.Split(e.Namespace, ".") }

// DecodeCommit parses and validates one commit event. Every error wraps
// ErrMalformed and names the offending field.
func DecodeCommit(data []byte) (CommitEvent, error) {
	var ev CommitEvent
	if err := json.Unmarshal(data, &ev); err != nil {
		return CommitEvent{}, fmt.Errorf("%w: invalid JSON: %w", ErrMalformed, err)
	}
	if err := ev.Validate(); err != nil {
		return CommitEvent{}, err
	}
	return ev, nil
}

// Validate checks the required fields.
func (e CommitEvent) Validate() error {
	switch {
	case strings.TrimSpace(e.Namespace) == "":
		return fmt.Errorf("%w: field namespace is required", ErrMalformed)
	case strings.Contains(e.Namespace, ".."), strings.HasPrefix(e.Namespace, "."), strings.HasSuffix(e.Namespace, "."):
		return fmt.Errorf("%w: field namespace %q has an empty level", ErrMalformed, e.Namespace)
	case strings.TrimSpace(e.Table) == "":
		return fmt.Errorf("%w: field table is required", ErrMalformed)
	case strings.Contains(e.Table, "."):
		return fmt.Errorf("%w: field table %q must not contain '.'; put the namespace in namespace", ErrMalformed, e.Table)
	case e.SnapshotID <= 0:
		return fmt.Errorf("%w: field snapshot_id must be a positive integer, got %d", ErrMalformed, e.SnapshotID)
	}
	return nil
}

// Encode renders the event in its wire form.
func (e CommitEvent) Encode() ([]byte, error) { return json.Marshal(e) }
