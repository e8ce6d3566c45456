package worker

import (
	"bytes"
	"context"
	"os"
	"time"

	"github.com/icereactor/reactor/thresholds"
)

// watchThresholds reloads the thresholds file when its content changes.
// It compares content, not modification times or inotify events, because
// Kubernetes updates a mounted ConfigMap by swapping a symlink (the file
// itself never changes, a new one appears under the old name). A file that
// fails to parse or validate is rejected with the field path, counted, and
// the last good configuration stays in force; running jobs are untouched.
func (w *Worker) watchThresholds(ctx context.Context, path string, every time.Duration, last []byte) {
	defer w.bg.Done()
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		data, err := os.ReadFile(path)
		if err != nil {
			w.Metrics.ConfigReloads.WithLabelValues("error").Inc()
			w.log.Error("thresholds file unreadable; keeping the last good configuration", "path", path, "error", err)
			continue
		}
		if bytes.Equal(data, last) {
			continue
		}
		last = data
		cfg, err := thresholds.Parse(data)
		if err != nil {
			w.Metrics.ConfigReloads.WithLabelValues("error").Inc()
			w.log.Error("thresholds file rejected; keeping the last good configuration", "path", path, "error", err)
			continue
		}
		w.Planner.SetConfig(cfg)
		w.Metrics.ConfigReloads.WithLabelValues("applied").Inc()
		w.log.Info("thresholds reloaded", "path", path)
		if n := cfg.Concurrency; n != nil && *n != w.concurrency {
			w.log.Warn("concurrency in the thresholds file changed; it takes effect when reactor restarts",
				"path", path, "running", w.concurrency, "configured", *n)
		}
	}
}
