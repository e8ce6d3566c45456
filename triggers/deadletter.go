package triggers

import (
	"context"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/icereactor/reactor/events"
)

// deadLetter publishes msg's dead letter and waits for JetStream to store
// it. Only then may the caller acknowledge msg: if storing fails, msg must
// come back rather than be lost.
func deadLetter(ctx context.Context, js jetstream.JetStream, subject string, msg jetstream.Msg, reason string, cause error) error {
	data, err := events.NewDeadLetter(msg.Subject(), reason, cause, msg.Data(), time.Now()).Encode()
	if err != nil {
		return err
	}
	_, err = js.Publish(ctx, subject, data)
	return err
}
