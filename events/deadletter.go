package events

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/icereactor/reactor/excerpt"
	"github.com/icereactor/reactor/redact"
)

// DeadLetter is what reactor publishes on the dead-letter subject for a
// message it acknowledged without applying. The message body is the
// original payload, byte for byte (invalid UTF-8 included), so an operator
// can fix and republish it; what happened travels in headers:
//
//	Reactor-Subject:        iceberg.commits.analytics.events   (where it arrived)
//	Reactor-Reason:         malformed       (malformed | unknown_table | namespace_not_watched)
//	Reactor-Error:          malformed event: field table is required
//	Reactor-Received-At:    2026-11-29T12:00:00.123456789Z
//	Reactor-Stream:         REACTOR_COMMITS (where it was stored, if known)
//	Reactor-Sequence:       42
//	Reactor-Payload-Bytes:  29              (the original payload's size)
//	Reactor-Payload-Sha256: 9f86d081...     (of the original payload)
//	Reactor-Payload-Truncated: true         (only when the body is a prefix)
//	Nats-Msg-Id:            reactor-dead-letter.REACTOR_COMMITS.42.1795953600100000000
//
// The body is cut only when the original payload and these headers do not
// fit the server's max_payload together, which needs an original within a
// few KiB of that limit; Payload-Bytes and Payload-Sha256 still describe
// the whole original. The error is one ASCII line of at most
// excerpt.MaxError bytes. Nats-Msg-Id lets JetStream drop the copy a
// redelivery would store if reactor's acknowledgement was lost.
type DeadLetter struct {
	Subject    string
	Reason     string
	Error      string
	ReceivedAt time.Time
	Stream     string // "" if unknown
	Sequence   uint64 // 0 if unknown
	// StoredAt is when Stream stored the original (zero if unknown). It
	// is part of the message id only: a stream deleted and created again
	// numbers its messages from 1 again, and the id must not take a new
	// event's dead letter for an old one's.
	StoredAt time.Time
	// Payload is the original payload, or its first bytes when
	// PayloadTruncated.
	Payload          []byte
	PayloadBytes     int
	PayloadSHA256    string
	PayloadTruncated bool
}

// Dead-letter header names.
const (
	HeaderSubject          = "Reactor-Subject"
	HeaderReason           = "Reactor-Reason"
	HeaderError            = "Reactor-Error"
	HeaderReceivedAt       = "Reactor-Received-At"
	HeaderStream           = "Reactor-Stream"
	HeaderSequence         = "Reactor-Sequence"
	HeaderPayloadBytes     = "Reactor-Payload-Bytes"
	HeaderPayloadSHA256    = "Reactor-Payload-Sha256"
	HeaderPayloadTruncated = "Reactor-Payload-Truncated"
	// HeaderMsgID is JetStream's de-duplication header.
	HeaderMsgID = "Nats-Msg-Id"
)

// Dead-letter reasons.
const (
	ReasonMalformed           = "malformed"
	ReasonUnknownTable        = "unknown_table"
	ReasonNamespaceNotWatched = "namespace_not_watched"
)

// NewDeadLetter builds the dead letter for payload received on subject,
// carrying all of it. Stream, Sequence and StoredAt, when the caller knows
// them, make the message id; set them before Headers.
func NewDeadLetter(subject, reason string, cause error, payload []byte, at time.Time) DeadLetter {
	sum := sha256.Sum256(payload)
	msg := ""
	if cause != nil {
		msg = cause.Error()
	}
	return DeadLetter{
		Subject:       subject,
		Reason:        reason,
		Error:         headerText(excerpt.String(redact.String(msg), excerpt.MaxError)),
		ReceivedAt:    at.UTC(),
		Payload:       payload,
		PayloadBytes:  len(payload),
		PayloadSHA256: hex.EncodeToString(sum[:]),
	}
}

// Headers are the dead letter's NATS headers (a nats.Header).
func (d DeadLetter) Headers() map[string][]string {
	h := map[string][]string{
		HeaderSubject:       {headerText(d.Subject)},
		HeaderReason:        {headerText(d.Reason)},
		HeaderError:         {d.Error},
		HeaderReceivedAt:    {d.ReceivedAt.UTC().Format(time.RFC3339Nano)},
		HeaderPayloadBytes:  {strconv.Itoa(d.PayloadBytes)},
		HeaderPayloadSHA256: {d.PayloadSHA256},
	}
	if d.PayloadTruncated {
		h[HeaderPayloadTruncated] = []string{"true"}
	}
	if d.Stream != "" && d.Sequence > 0 {
		h[HeaderStream] = []string{headerText(d.Stream)}
		h[HeaderSequence] = []string{strconv.FormatUint(d.Sequence, 10)}
		id := "reactor-dead-letter." + headerText(d.Stream) + "." + strconv.FormatUint(d.Sequence, 10)
		if !d.StoredAt.IsZero() {
			id += "." + strconv.FormatInt(d.StoredAt.UnixNano(), 10)
		}
		h[HeaderMsgID] = []string{id}
	}
	return h
}

// HeaderSize is the size of the headers on the wire: NATS/1.0, one
// "Key: Value" line each and a blank line, every line ending in CRLF.
func (d DeadLetter) HeaderSize() int {
	n := len("NATS/1.0\r\n\r\n")
	for k, vs := range d.Headers() {
		for _, v := range vs {
			n += len(k) + len(": ") + len(v) + len("\r\n")
		}
	}
	return n
}

// FitTo cuts the payload so that headers and payload together take at most
// maxMessage bytes (the server's max_payload), marking it truncated. It
// fails only if the headers alone do not fit.
func (d *DeadLetter) FitTo(maxMessage int) error {
	if d.HeaderSize()+len(d.Payload) <= maxMessage {
		return nil
	}
	d.PayloadTruncated = true
	room := maxMessage - d.HeaderSize()
	if room < 0 {
		return fmt.Errorf("dead-letter headers (%d bytes) exceed the server's max payload of %d bytes", d.HeaderSize(), maxMessage)
	}
	d.Payload = d.Payload[:room]
	return nil
}

// DecodeDeadLetter reads a dead letter back from a NATS message's headers
// and body (tests and tooling).
func DecodeDeadLetter(headers map[string][]string, body []byte) (DeadLetter, error) {
	get := func(k string) string {
		if v := headers[k]; len(v) > 0 {
			return v[0]
		}
		return ""
	}
	d := DeadLetter{
		Subject:          get(HeaderSubject),
		Reason:           get(HeaderReason),
		Error:            get(HeaderError),
		Stream:           get(HeaderStream),
		Payload:          body,
		PayloadSHA256:    get(HeaderPayloadSHA256),
		PayloadTruncated: get(HeaderPayloadTruncated) == "true",
	}
	if d.Reason == "" {
		return DeadLetter{}, errors.New("not a dead letter: no " + HeaderReason + " header")
	}
	var err error
	if d.ReceivedAt, err = time.Parse(time.RFC3339Nano, get(HeaderReceivedAt)); err != nil {
		return DeadLetter{}, fmt.Errorf("dead letter: %s: %w", HeaderReceivedAt, err)
	}
	if d.PayloadBytes, err = strconv.Atoi(get(HeaderPayloadBytes)); err != nil {
		return DeadLetter{}, fmt.Errorf("dead letter: %s: %w", HeaderPayloadBytes, err)
	}
	if s := get(HeaderSequence); s != "" {
		if d.Sequence, err = strconv.ParseUint(s, 10, 64); err != nil {
			return DeadLetter{}, fmt.Errorf("dead letter: %s: %w", HeaderSequence, err)
		}
	}
	return d, nil
}

// headerText makes s a valid NATS header value: one line of printable
// ASCII (ADR-4). Control characters become spaces, other characters are
// escaped as Go does (\u00e9, \xff), so nothing is lost from view.
func headerText(s string) string {
	ascii := true
	for i := 0; i < len(s) && ascii; i++ {
		ascii = s[i] >= 0x20 && s[i] < 0x7f
	}
	if ascii {
		return strings.TrimSpace(s)
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case r < 0x20 || r == 0x7f:
			b.WriteByte(' ')
		case r < 0x7f:
			b.WriteRune(r)
		case r <= 0xffff:
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			fmt.Fprintf(&b, `\U%08x`, r)
		}
		i += size
	}
	return strings.TrimSpace(b.String())
}
