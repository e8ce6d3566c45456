package events

import (
	"encoding/json"
	"time"
)

// DeadLetter is what reactor publishes on the dead-letter subject for a
// message it acknowledged without applying. The original payload travels
// with it so nothing is lost: an operator can fix and republish it.
//
//	{
//	  "subject":     "iceberg.commits.analytics.events",
//	  "reason":      "malformed",   // malformed | unknown_table | namespace_not_watched
//	  "error":       "malformed event: field table is required",
//	  "payload":     "{\"namespace\":\"analytics\"}",
//	  "received_at": "2026-11-29T12:00:00Z"
//	}
type DeadLetter struct {
	Subject    string    `json:"subject"`
	Reason     string    `json:"reason"`
	Error      string    `json:"error"`
	Payload    string    `json:"payload"`
	ReceivedAt time.Time `json:"received_at"`
}

// Dead-letter reasons.
const (
	ReasonMalformed           = "malformed"
	ReasonUnknownTable        = "unknown_table"
	ReasonNamespaceNotWatched = "namespace_not_watched"
)

// Encode renders the dead letter in its wire form.
func (d DeadLetter) Encode() ([]byte, error) { return json.Marshal(d) }

// DecodeDeadLetter parses a dead letter (used by tests and tooling).
func DecodeDeadLetter(data []byte) (DeadLetter, error) {
	var d DeadLetter
	err := json.Unmarshal(data, &d)
	return d, err
}
