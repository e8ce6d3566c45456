package main

import (
	"io"
	"log/slog"

	"github.com/icereactor/reactor/redact"
)

// newJSONLogger is reactor run's logger: JSON lines on w, credentials
// masked (package redact), durations as Go duration strings ("30s",
// "8.3ms") rather than slog's nanosecond integers ("grace":30000000000).
func newJSONLogger(w io.Writer, level slog.Level) *slog.Logger {
	return slog.New(redact.Handler(slog.NewJSONHandler(w, &slog.HandlerOptions{Level: level, ReplaceAttr: durationText})))
}

// durationText writes a time.Duration attribute as its String form.
func durationText(_ []string, a slog.Attr) slog.Attr {
	if a.Value.Kind() == slog.KindDuration {
		return slog.String(a.Key, a.Value.Duration().String())
	}
	return a
}
