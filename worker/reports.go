package worker

// Health reports and other best-effort publications.

import "encoding/json"

// DefaultHealthSubjectPrefix is where health reports go by default.
const DefaultHealthSubjectPrefix = "reactor.health"

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
