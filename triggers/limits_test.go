package triggers

import (
	"slices"
	"testing"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/icereactor/reactor/lease"
	"github.com/icereactor/reactor/metrics"
)

// The streams whose series start at zero are the ones reactor creates.
func TestDefaultStreamsAreMetrics(t *testing.T) {
	want := []string{DefaultCommitStream, DefaultNotificationStream, DefaultDeadLetterStream, DefaultShardStream, "KV_" + lease.DefaultBucket}
	if !slices.Equal(metrics.DefaultStreams, want) {
		t.Errorf("metrics.DefaultStreams = %v, want %v", metrics.DefaultStreams, want)
	}
}

// Zero fields take the kind's default; a discard policy given stays, even
// DiscardOld (jetstream's zero value).
func TestStreamLimitsDefaults(t *testing.T) {
	got := StreamLimits{MaxMsgs: 7}.orDefault(DefaultEventLimits)
	if got.MaxMsgs != 7 || got.MaxBytes != DefaultEventLimits.MaxBytes || got.Discard != jetstream.DiscardNew {
		t.Errorf("%+v", got)
	}
	old := StreamLimits{}.WithDiscard(jetstream.DiscardOld).orDefault(DefaultEventLimits)
	if old.Discard != jetstream.DiscardOld {
		t.Errorf("discard old given, got %v", old.Discard)
	}
	cfg := DefaultDeadLetterLimits.apply(jetstream.StreamConfig{Name: "x"})
	if cfg.MaxBytes != 64<<20 || cfg.Discard != jetstream.DiscardOld || cfg.MaxMsgs != 100_000 {
		t.Errorf("%+v", cfg)
	}
}
