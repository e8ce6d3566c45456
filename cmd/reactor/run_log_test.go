package main

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
	"time"
)

// reactor run's JSON lines give durations as Go duration strings, not as
// nanoseconds ("grace":30000000000), nested groups included.
func TestJSONLogDurations(t *testing.T) {
	var buf bytes.Buffer
	log := newJSONLogger(&buf, slog.LevelInfo)
	log.Info("shutting down", "grace", 30*time.Second, slog.Group("job", "duration", 8300*time.Microsecond), "count", 3)
	got := buf.String()
	for _, want := range []string{`"grace":"30s"`, `"job":{"duration":"8.3ms"}`, `"count":3`} {
		if !strings.Contains(got, want) {
			t.Errorf("log line lacks %s: %s", want, got)
		}
	}
}
