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
//	  "received_at": "2026-11-29T12:00:00Z",
//	  "payload_bytes": 29,
//	  "payload_truncated": false  // true: payload holds the first 64 KiB only
//	}
type DeadLetter struct {
	Subject    string    `json:"subject"`
	Reason     string    `json:"reason"`
	Error      string    `json:"error"`
	Payload    string    `json:"payload"`
	ReceivedAt time.Time `json:"received_at"`
	// PayloadBytes is the original payload's size; PayloadTruncated says
	// Payload holds only its first MaxDeadLetterPayload bytes.
	PayloadBytes     int  `json:"payload_bytes"`
	PayloadTruncated bool `json:"payload_truncated,omitempty"`
}

// MaxDeadLetterPayload bounds the payload copied into a dead letter. The
// dead letter escapes the payload as a JSON string, so a message near the
// NATS maximum payload would not fit once wrapped: it could be neither
// applied nor dead-lettered and would come back forever.
const MaxDeadLetterPayload = 64 << 10

// NewDeadLetter builds the dead letter for payload received on subject.
func NewDeadLetter(subject, reason string, cause error, payload []byte, at time.Time) DeadLetter {
	dl := DeadLetter{Subject: subject, Reason: reason, Error: cause.Error(), ReceivedAt: at.UTC(), PayloadBytes: len(payload)}
	if len(payload) > MaxDeadLetterPayload {
		payload = payload[:MaxDeadLetterPayload]
		dl.PayloadTruncated = true
	}
	dl.Payload = string(payload)
	return dl
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
