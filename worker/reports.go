package worker

// Health reports and other best-effort publications.

import (
	"encoding/json"
	"time"
)

// DefaultHealthSubjectPrefix is where health reports go by default.
const DefaultHealthSubjectPrefix = "reactor.health"

// reportHealth logs the table's health and publishes it (best effort: a
// report is a snapshot in time; the next job sends another).
func (w *Worker) reportHealth(prefix, table string) {
	h, ok := w.Planner.Health(table)
	if !ok {
		return
	}
	attrs := []any{"table", table, "healthy", h.Healthy, "data_files", h.DataFiles, "avg_file_size", h.AvgFileSize,
		"target_file_size", h.TargetFileSize, "tiny_files", h.TinyFiles, "snapshots", h.Snapshots,
		"oldest_snapshot_age", h.OldestSnapshotAge.Round(time.Second), "data_manifests", h.DataManifests}
	if h.Healthy {
		w.log.Info("table health", attrs...)
	} else {
		w.log.Warn("table health", append(attrs, "problems", h.Problems)...)
	}
	w.publish(prefix+"."+table, h)
}

// DefaultOrphanSubjectPrefix is where orphan-cleanup reports (dry runs
// included: the candidate paths and sizes) are published, per table.
const DefaultOrphanSubjectPrefix = "reactor.orphans"

// publish sends a report as JSON, best effort: reports are also logged.
func (w *Worker) publish(subject string, v any) {
	w.mu.Lock()
	conn := w.reports
	w.mu.Unlock()
	if conn == nil {
		w.log.Debug("not connected to NATS yet; report not published", "subject", subject)
		return
	}
	data, err := json.Marshal(v)
	if err == nil {
		err = conn.Publish(subject, data)
	}
	if err != nil {
		w.log.Warn("could not publish a report", "subject", subject, "error", err)
	}
}
