package history

import (
	"fmt"

	"github.com/apache/iceberg-go"
)

// Kind is what a file of a table is: the one file-kind enum of reactor, for
// the history's references, the pending deletions (package deletions),
// expiry's counts and the delete-file metrics.
type Kind uint8

const (
	ManifestList Kind = iota + 1
	Manifest
	Data
	PositionDelete
	EqualityDelete
	// Statistics: a table's statistics (Puffin) files, which no manifest
	// references.
	Statistics
)

// String is the kind's name as Spark's expire_snapshots counts it, and as
// the pending-deletion batches on a table's storage spell it (their JSON
// "kind"): the names must stay as they are.
func (k Kind) String() string {
	switch k {
	case ManifestList:
		return "manifest_list"
	case Manifest:
		return "manifest"
	case Data:
		return "data"
	case PositionDelete:
		return "position_delete"
	case EqualityDelete:
		return "equality_delete"
	case Statistics:
		return "statistics"
	}
	return fmt.Sprintf("kind(%d)", uint8(k))
}

// MetricLabel is the kind's value of the delete-file metrics' kind label
// (reactor_delete_files): "position" and "equality", as the metric has
// always named them; "" for the kinds the metric does not count.
func (k Kind) MetricLabel() string {
	switch k {
	case PositionDelete:
		return "position"
	case EqualityDelete:
		return "equality"
	}
	return ""
}

// MarshalText spells k as String does.
func (k Kind) MarshalText() ([]byte, error) {
	if k < ManifestList || k > Statistics {
		return nil, fmt.Errorf("history: no file kind %d", uint8(k))
	}
	return []byte(k.String()), nil
}

// UnmarshalText reads a kind String spelled.
func (k *Kind) UnmarshalText(b []byte) error {
	for c := ManifestList; c <= Statistics; c++ {
		if c.String() == string(b) {
			*k = c
			return nil
		}
	}
	return fmt.Errorf("history: unknown file kind %q", b)
}

// KindOf is the kind of a file a manifest lists.
func KindOf(df iceberg.DataFile) Kind {
	switch df.ContentType() {
	case iceberg.EntryContentPosDeletes:
		return PositionDelete
	case iceberg.EntryContentEqDeletes:
		return EqualityDelete
	}
	return Data
}
