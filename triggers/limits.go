package triggers

import (
	"fmt"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// StreamLimits bound what one stream reactor creates may hold, so that a
// publisher allowed on its subjects cannot fill the NATS server's disk.
// A zero field takes the default of the stream's kind.
type StreamLimits struct {
	// MaxBytes and MaxMsgs: the most the stream stores.
	MaxBytes int64
	MaxMsgs  int64
	// MaxAge: older messages are dropped.
	MaxAge time.Duration
	// Discard is what a full stream does: refuse what is published
	// (jetstream.DiscardNew: the publisher gets an error and nothing
	// stored is lost) or drop its oldest messages (DiscardOld).
	Discard jetstream.DiscardPolicy
	// discardSet: Discard was given (DiscardOld is jetstream's zero).
	discardSet bool
}

// WithDiscard returns l with its discard policy set.
func (l StreamLimits) WithDiscard(d jetstream.DiscardPolicy) StreamLimits {
	l.Discard, l.discardSet = d, true
	return l
}

// Default limits. Events are triggers, not data (a table's refresh reads
// its current state, and a restarted reactor reads every table it owns),
// but an event refused or dropped is a job started late, so the event
// streams refuse new messages when full and keep what they hold; dead
// letters are diagnostics, so that stream keeps the newest.
//
// JetStream reserves a stream's MaxBytes on the server when it creates it,
// so the defaults add up to what a small server holds: 3 x 256 MiB of
// events, 64 MiB of dead letters and the lease bucket's 8 MiB are 840 MiB,
// under the embedded server's 1 GiB.
var (
	// DefaultEventLimits bound the commit, notification and shard
	// streams: 256 MiB or 2 million events (a commit event is about 300
	// bytes: hours of a busy lake's commits with reactor down), a week.
	DefaultEventLimits = StreamLimits{MaxBytes: 256 << 20, MaxMsgs: 2_000_000, MaxAge: 7 * 24 * time.Hour,
		Discard: jetstream.DiscardNew, discardSet: true}
	// DefaultDeadLetterLimits bound the dead-letter stream: 64 MiB or
	// 100,000 dead letters, 14 days, the oldest dropped first.
	DefaultDeadLetterLimits = StreamLimits{MaxBytes: 64 << 20, MaxMsgs: 100_000, MaxAge: 14 * 24 * time.Hour,
		Discard: jetstream.DiscardOld, discardSet: true}
)

// insufficientStorage explains a stream the server would not create for
// want of storage: it reserves each stream's MaxBytes.
func insufficientStorage(err error) error {
	if err != nil && strings.Contains(err.Error(), "insufficient storage") {
		return fmt.Errorf("%w (the server reserves each stream's byte limit when it creates it: lower --stream-max-bytes or --dead-letter-max-bytes, or give the account more JetStream storage)", err)
	}
	return err
}

// orDefault fills l's zero fields from def.
func (l StreamLimits) orDefault(def StreamLimits) StreamLimits {
	if l.MaxBytes == 0 {
		l.MaxBytes = def.MaxBytes
	}
	if l.MaxMsgs == 0 {
		l.MaxMsgs = def.MaxMsgs
	}
	if l.MaxAge == 0 {
		l.MaxAge = def.MaxAge
	}
	if !l.discardSet {
		l.Discard, l.discardSet = def.Discard, true
	}
	return l
}

// apply sets l on a stream's configuration.
func (l StreamLimits) apply(cfg jetstream.StreamConfig) jetstream.StreamConfig {
	cfg.MaxBytes, cfg.MaxMsgs, cfg.MaxAge, cfg.Discard = l.MaxBytes, l.MaxMsgs, l.MaxAge, l.Discard
	return cfg
}
