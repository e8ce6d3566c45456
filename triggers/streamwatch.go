package triggers

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/icereactor/reactor/metrics"
)

// DefaultStreamWatchEvery is how often WatchStreams reads the streams.
const DefaultStreamWatchEvery = 15 * time.Second

// Fill levels WatchStreams speaks at: near (a warning, once per crossing)
// and full (an error: NATS refuses or drops messages).
const (
	streamNear = 0.8
	streamFull = 0.99
)

// refusedByLimit reports whether a publish failed because its stream was
// at a limit (a discard-new stream refuses what does not fit).
func refusedByLimit(err error) bool {
	if err == nil {
		return false
	}
	msg := err.Error()
	return strings.Contains(msg, "maximum bytes exceeded") || strings.Contains(msg, "maximum messages exceeded")
}

// WatchStreams reads the state of the named streams every period until
// ctx ends: their sizes and limits become gauges, and a stream crossing
// 80 % of a limit, reaching it, or going back below it is a log line; a
// stream reaching it is counted (reactor_stream_full_total). Reading a
// stream is one JetStream API request; a stream that cannot be read is
// skipped until the next period (logged at debug: NATS being away is
// said elsewhere).
func WatchStreams(ctx context.Context, js jetstream.JetStream, names []string, every time.Duration, log *slog.Logger, met *metrics.Metrics) {
	if every <= 0 {
		every = DefaultStreamWatchEvery
	}
	level := map[string]int{} // 0 below, 1 near, 2 full
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		for _, name := range names {
			watchStream(ctx, js, name, level, log, met)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

func watchStream(ctx context.Context, js jetstream.JetStream, name string, level map[string]int, log *slog.Logger, met *metrics.Metrics) {
	rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	s, err := js.Stream(rctx, name)
	var info *jetstream.StreamInfo
	if err == nil {
		info, err = s.Info(rctx)
	}
	if err != nil {
		if ctx.Err() == nil && !errors.Is(err, jetstream.ErrStreamNotFound) {
			log.Debug("could not read a stream's state", "stream", name, "error", err)
		}
		return
	}
	cfg, st := info.Config, info.State
	met.StreamBytes.WithLabelValues(name).Set(float64(st.Bytes))
	met.StreamMessages.WithLabelValues(name).Set(float64(st.Msgs))
	met.StreamLimitBytes.WithLabelValues(name).Set(float64(max(cfg.MaxBytes, 0)))
	met.StreamLimitMessages.WithLabelValues(name).Set(float64(max(cfg.MaxMsgs, 0)))
	fill := 0.0
	if cfg.MaxBytes > 0 {
		fill = float64(st.Bytes) / float64(cfg.MaxBytes)
	}
	if cfg.MaxMsgs > 0 {
		fill = max(fill, float64(st.Msgs)/float64(cfg.MaxMsgs))
	}
	met.StreamFill.WithLabelValues(name).Set(fill)
	now := 0
	switch {
	case fill >= streamFull:
		now = 2
	case fill >= streamNear:
		now = 1
	}
	was := level[name]
	level[name] = now
	if now == was {
		return
	}
	attrs := []any{"stream", name, "bytes", st.Bytes, "max_bytes", cfg.MaxBytes, "messages", st.Msgs,
		"max_messages", cfg.MaxMsgs, "discard", cfg.Discard.String()}
	switch {
	case now == 2:
		met.StreamFull.WithLabelValues(name).Inc()
		what := "NATS refuses what is published to it until reactor catches up (discard new)"
		if cfg.Discard == jetstream.DiscardOld {
			what = "NATS drops its oldest messages to store new ones (discard old)"
		}
		log.Error("stream full: "+what, attrs...)
	case now == 1 && was == 0:
		log.Warn("stream above 80% of its limit", attrs...)
	case now < was:
		log.Info("stream below its limit again", attrs...)
	}
}
