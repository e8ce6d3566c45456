package triggers

import (
	"context"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/icereactor/reactor/events"
	"github.com/icereactor/reactor/excerpt"
	"github.com/icereactor/reactor/redact"
)

// deadLetter publishes msg's dead letter (events.DeadLetter: the original
// payload as the body, what happened in headers) and waits for JetStream to
// store it. Only then may the caller acknowledge msg: if storing fails, msg
// must come back rather than be lost.
//
// The dead letter is sized to the server's max_payload, read from the
// connection: a message that could be neither applied nor dead-lettered
// would be redelivered forever. Its message id is the original's stream,
// sequence and store time, so a redelivery after a lost acknowledgement
// stores nothing new, and a stream created again cannot make a new event's
// dead letter look like an old one's.
func deadLetter(ctx context.Context, js jetstream.JetStream, subject string, msg jetstream.Msg, reason string, cause error) error {
	dl := events.NewDeadLetter(msg.Subject(), reason, deadLetterCause(cause), msg.Data(), time.Now())
	if md, err := msg.Metadata(); err == nil {
		dl.Stream, dl.Sequence, dl.StoredAt = md.Stream, md.Sequence.Stream, md.Timestamp
	}
	if err := dl.FitTo(int(js.Conn().MaxPayload())); err != nil {
		return err
	}
	out := &nats.Msg{Subject: subject, Header: nats.Header(dl.Headers()), Data: dl.Payload}
	if _, err := js.PublishMsg(ctx, out); err != nil {
		return fmt.Errorf("publish the dead letter on %s: %w", subject, err)
	}
	return nil
}

// deadLetterCause is the cause as a dead letter and its log line carry it:
// credentials masked (a catalog error may quote a URL) and cut to
// excerpt.MaxError bytes, whatever produced it.
func deadLetterCause(cause error) error {
	return excerpt.Error(redact.Error(cause))
}
