package events

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/icereactor/reactor/excerpt"
	"github.com/icereactor/reactor/tablename"
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
//	  "committed_at": "2026-11-29T12:00:00Z", // optional, RFC 3339
//	  "metadata_location": "s3://lake/db/t/metadata/00042-....metadata.json" // optional
//	}
//
// metadata_location, when the writer knows it (the committed table's
// metadata file), lets reactor see that it already applied the commit
// without asking the catalog.
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
	// MetadataLocation is the metadata file the commit wrote (optional).
	MetadataLocation string `json:"metadata_location,omitempty"`
}

// QualifiedName is "namespace.table", the name thresholds and logs use:
// the spelling of Name (package tablename), without its allocations for
// the names that need no quoting.
func (e CommitEvent) QualifiedName() string {
	if strings.Contains(e.Namespace, "`") || strings.Contains(e.Table, "`") {
		return e.Name().String()
	}
	return e.Namespace + "." + e.Table
}

// Name is the event's table: its namespace levels and table name. It
// spells as QualifiedName does for every table an event can name (a level
// holding a dot is one it cannot: the namespace is dot-joined).
func (e CommitEvent) Name() tablename.Name { return tablename.Of(append(e.NamespaceLevels(), e.Table)) }

// NamespaceLevels splits the dot-joined namespace into its levels.
func (e CommitEvent) NamespaceLevels() []string { return strings.Split(e.Namespace, ".") }

// Bounds on input, checked before it is used. Anything a producer writes
// ends up in logs, metrics and dead letters; a bound keeps each of those
// small whatever the producer sends, and the NATS server's max_payload
// (1 MiB by default) is too generous to be one.
const (
	// MaxPayloadBytes bounds a commit event or a bucket notification. A
	// commit event is a few hundred bytes, a notification record about
	// one KiB; a larger message is malformed.
	MaxPayloadBytes = 256 << 10
	// MaxNameBytes bounds the catalog, namespace, table and operation of
	// a commit event (Iceberg sets no limit; catalogs allow 128 to 255
	// characters).
	MaxNameBytes = 1024
	// MaxLocationBytes bounds metadata_location: a scheme, a bucket name
	// (at most 255 bytes) and an S3 key (at most 1,024).
	MaxLocationBytes = 1536
)

// DecodeCommit parses and validates one commit event. Every error wraps
// ErrMalformed, names the offending field, and quotes at most
// excerpt.Max bytes of any value.
func DecodeCommit(data []byte) (CommitEvent, error) {
	if err := checkPayload(data); err != nil {
		return CommitEvent{}, err
	}
	var ev CommitEvent
	if err := json.Unmarshal(data, &ev); err != nil {
		// encoding/json quotes the offending value (a bad committed_at
		// twice, through time.Parse): the message is cut, the error kept.
		return CommitEvent{}, fmt.Errorf("%w: invalid JSON: %w", ErrMalformed, excerpt.Error(err))
	}
	if err := ev.Validate(); err != nil {
		return CommitEvent{}, err
	}
	return ev, nil
}

// checkPayload refuses a message over MaxPayloadBytes or not valid UTF-8
// (JSON must be UTF-8, and encoding/json would silently turn invalid bytes
// in a name into U+FFFD, naming another table).
func checkPayload(data []byte) error {
	if len(data) > MaxPayloadBytes {
		return fmt.Errorf("%w: payload is %d bytes, more than the %d a message may have", ErrMalformed, len(data), MaxPayloadBytes)
	}
	if !utf8.Valid(data) {
		at := 0
		for at < len(data) {
			r, size := utf8.DecodeRune(data[at:])
			if r == utf8.RuneError && size == 1 {
				break
			}
			at += size
		}
		return fmt.Errorf("%w: payload is not valid UTF-8 (invalid byte 0x%02x at offset %d)", ErrMalformed, data[at], at)
	}
	return nil
}

// Validate checks the required fields and the length of every name.
func (e CommitEvent) Validate() error {
	for _, f := range []struct{ name, value string }{
		{"catalog", e.Catalog}, {"namespace", e.Namespace}, {"table", e.Table}, {"operation", e.Operation},
	} {
		if len(f.value) > MaxNameBytes {
			return fmt.Errorf("%w: field %s is %d bytes long, more than %d: %s", ErrMalformed, f.name, len(f.value), MaxNameBytes, excerpt.Quote(f.value))
		}
	}
	if len(e.MetadataLocation) > MaxLocationBytes {
		return fmt.Errorf("%w: field metadata_location is %d bytes long, more than %d: %s", ErrMalformed,
			len(e.MetadataLocation), MaxLocationBytes, excerpt.Quote(e.MetadataLocation))
	}
	switch {
	case strings.TrimSpace(e.Namespace) == "":
		return fmt.Errorf("%w: field namespace is required", ErrMalformed)
	case strings.Contains(e.Namespace, ".."), strings.HasPrefix(e.Namespace, "."), strings.HasSuffix(e.Namespace, "."):
		return fmt.Errorf("%w: field namespace %s has an empty level", ErrMalformed, excerpt.Quote(e.Namespace))
	case strings.TrimSpace(e.Table) == "":
		return fmt.Errorf("%w: field table is required", ErrMalformed)
	case strings.Contains(e.Table, "."):
		return fmt.Errorf("%w: field table %s must not contain '.'; put the namespace in namespace", ErrMalformed, excerpt.Quote(e.Table))
	case e.SnapshotID <= 0:
		return fmt.Errorf("%w: field snapshot_id must be a positive integer, got %d", ErrMalformed, e.SnapshotID)
	}
	return nil
}

// Encode renders the event in its wire form.
func (e CommitEvent) Encode() ([]byte, error) { return json.Marshal(e) }
