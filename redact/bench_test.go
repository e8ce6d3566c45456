package redact

import (
	"errors"
	"io"
	"log/slog"
	"testing"
	"time"
)

// BenchmarkLogLine is the cost of one typical reactor log line (a job's
// end: a dozen attributes, an error quoting a URL) written by slog's JSON
// handler to io.Discard, with and without Handler: the redaction's cost
// per line, against the handler's own.
func BenchmarkLogLine(b *testing.B) {
	line := func(log *slog.Logger) {
		log.Info("job finished", "table", "db.events", "partition", "category=b/day=2026-01-01", "job_id", "c0ffee-1234",
			"kind", "compact", "outcome", "failed", "files_in", 8, "files_out", 1, "bytes_in", 1<<20, "duration", 3*time.Second,
			"error", errors.New(`commit db.events: Post "http://rest:8181/v1/namespaces/db/tables/events": dial tcp 10.0.0.7:8181: connect: connection refused`))
	}
	b.Run("plain", func(b *testing.B) {
		log := slog.New(slog.NewJSONHandler(io.Discard, nil))
		b.ReportAllocs()
		for b.Loop() {
			line(log)
		}
	})
	b.Run("redacted", func(b *testing.B) {
		log := slog.New(Handler(slog.NewJSONHandler(io.Discard, nil)))
		b.ReportAllocs()
		for b.Loop() {
			line(log)
		}
	})
}

// BenchmarkString is String alone on text with nothing to mask, and on
// text with a secret of each kind.
func BenchmarkString(b *testing.B) {
	for _, in := range []struct{ name, s string }{
		{"plain", "commit conflict; retrying table=db.events partition=category=b"},
		{"url", `Get "http://u:pw@rest:8181/v1/config?credential=C": dial tcp: refused`},
		{"json", `{"s3.secret-access-key": "x", "s3.region": "eu-west-1", "token": "t"}`},
	} {
		b.Run(in.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				String(in.s)
			}
		})
	}
}
