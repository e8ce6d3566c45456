package worker

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"time"

	"github.com/icereactor/reactor/excerpt"
	"github.com/icereactor/reactor/thresholds"
)

// Results of a thresholds reload, the values of the result label of
// reactor_config_reloads_total.
const (
	reloadApplied = "applied"
	reloadError   = "error"
	// reloadInternalError: reading, parsing or applying the file panicked
	// (a bug, in reactor or a library, that the file triggers). The file
	// is rejected like any other bad file and the stack is logged once.
	reloadInternalError = "internal_error"
)

// thresholdsWatch is the state of the reload loop: the content last seen
// (applied or rejected) and the last read error, so that a file that stays
// broken is reported once, not every few seconds.
type thresholdsWatch struct {
	path     string
	last     []byte
	lastRead string
	// parse is thresholds.Parse; tests replace it to prove the guard.
	parse func([]byte) (*thresholds.Config, error)
}

// watchThresholds reloads the thresholds file when its content changes.
// It compares content, not modification times or inotify events, because
// Kubernetes updates a mounted ConfigMap by swapping a symlink (the file
// itself never changes, a new one appears under the old name). A file that
// cannot be read, is over a size or depth limit, or fails to parse or
// validate is rejected with the reason, counted, and the last good
// configuration stays in force; running jobs are untouched. Nothing in the
// file can stop the loop or the process: see reload.
func (w *Worker) watchThresholds(ctx context.Context, path string, every time.Duration, last []byte) {
	defer w.bg.Done()
	t := time.NewTicker(every)
	defer t.Stop()
	watch := &thresholdsWatch{path: path, last: last, parse: w.parseThresholds}
	if watch.parse == nil {
		watch.parse = thresholds.Parse
	}
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		w.reload(watch)
	}
}

// reload reads, parses, validates and applies the file once. It is the
// boundary between the file and the process: a panic anywhere in it is
// recovered, counted as internal_error and logged with its stack, and the
// last good configuration stays.
func (w *Worker) reload(watch *thresholdsWatch) {
	defer func() {
		if r := recover(); r != nil {
			w.rejectReload(watch.path, reloadInternalError, fmt.Errorf("internal error: %s", excerpt.String(fmt.Sprint(r), excerpt.Max)), debug.Stack())
		}
	}()
	data, err := thresholds.ReadFile(watch.path)
	if err != nil {
		if msg := err.Error(); msg != watch.lastRead {
			watch.lastRead = msg
			w.rejectReload(watch.path, reloadError, err, nil)
		}
		return
	}
	watch.lastRead = ""
	if bytes.Equal(data, watch.last) {
		return
	}
	watch.last = data
	cfg, err := watch.parse(data)
	if err != nil {
		var ie *thresholds.InternalError
		if errors.As(err, &ie) {
			w.rejectReload(watch.path, reloadInternalError, err, ie.Stack)
			return
		}
		w.rejectReload(watch.path, reloadError, err, nil)
		return
	}
	w.Planner.SetConfig(cfg)
	w.spark.SetConfig(cfg)
	w.status.cfg.Store(cfg)
	if n := cfg.SparkSettings().Concurrency; n != w.sparkConcurrency {
		w.log.Warn("spark.concurrency in the thresholds file changed; it takes effect when reactor restarts",
			"path", watch.path, "running", w.sparkConcurrency, "configured", n)
	}
	w.log.Info("thresholds reloaded", "path", watch.path)
	if n := cfg.Concurrency; n != nil && *n != w.concurrency {
		w.log.Warn("concurrency in the thresholds file changed; it takes effect when reactor restarts",
			"path", watch.path, "running", w.concurrency, "configured", *n)
	}
	w.Metrics.ConfigReloads.WithLabelValues(reloadApplied).Inc()
}

// rejectReload counts and logs a rejected reload. The error is bounded
// (thresholds errors already are; this holds for any other); a limit is
// logged with its name, maximum and the value found.
func (w *Worker) rejectReload(path, result string, err error, stack []byte) {
	// Logged before it is counted: whoever sees the count (an alert, a
	// test) finds the reason already in the log.
	defer w.Metrics.ConfigReloads.WithLabelValues(result).Inc()
	attrs := []any{"path", path, "result", result, "error", excerpt.Error(err)}
	var le *thresholds.LimitError
	if errors.As(err, &le) {
		attrs = append(attrs, "limit", le.Limit, "max", le.Max, "found", le.Found)
	}
	if stack != nil {
		attrs = append(attrs, "stack", string(stack))
	}
	w.log.Error("thresholds file rejected; keeping the last good configuration", attrs...)
}
