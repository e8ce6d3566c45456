package streamwriter

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/cenkalti/backoff/v4"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/icereactor/reactor/events"
)

// JetStreamPublisher publishes every commit event on subject through
// JetStream, so it is stored until reactor acknowledges it, as a streaming
// pipeline's notifier would. log (optional) hears about retries.
//
// It retries for up to a minute: the commit has landed, and its event is the
// only way reactor hears of it without bucket notifications. The message id
// (table and snapshot) lets JetStream drop the copy a retry after a lost
// acknowledgement would store.
func JetStreamPublisher(js jetstream.JetStream, subject string, log *slog.Logger) Publisher {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return func(ctx context.Context, ev events.CommitEvent) error {
		data, err := ev.Encode()
		if err != nil {
			return fmt.Errorf("encode commit event: %w", err)
		}
		msgID := fmt.Sprintf("%s.%d", ev.QualifiedName(), ev.SnapshotID)
		op := func() error {
			_, err := js.Publish(ctx, subject, data, jetstream.WithMsgID(msgID))
			return err
		}
		bo := backoff.NewExponentialBackOff()
		bo.InitialInterval = 250 * time.Millisecond
		bo.MaxInterval = 5 * time.Second
		bo.MaxElapsedTime = time.Minute
		notify := func(err error, wait time.Duration) {
			log.Warn("commit event not stored yet; retrying", "subject", subject, "snapshot_id", ev.SnapshotID,
				"wait", wait, "error", err)
		}
		if err := backoff.RetryNotify(op, backoff.WithContext(bo, ctx), notify); err != nil {
			return fmt.Errorf("publish on %s: %w", subject, err)
		}
		return nil
	}
}
