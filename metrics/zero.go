package metrics

import "github.com/icereactor/reactor/jobkind"

// ObjectOutcomes are the values of reactor_objects_total's outcome label,
// planner's object outcomes (exported_test.go keeps them equal).
var ObjectOutcomes = []string{"commit", "tracked", "confirmed", "removed", "ignored", "refused", "held", "outside",
	"tracking_full"}

// Event sources, the values of the source label of reactor_events_total.
const (
	SourceCommit       = "commit"
	SourceNotification = "notification"
)

// startAtZero creates every series whose label values are known in advance,
// at 0. A counter that first appears at 1 hides that first increment from
// increase() and rate(), and an alert on it cannot tell "never happened"
// from "not exported": the first rejected config reload or failed job would
// go unnoticed.
func (m *Metrics) startAtZero() {
	for _, source := range []string{SourceCommit, SourceNotification} {
		for _, outcome := range []string{OutcomeApplied, OutcomeMalformed, OutcomeRetry, OutcomeDeadLetterErr} {
			m.Events.WithLabelValues(source, outcome)
		}
	}
	// Only commit events name a table and a catalog.
	for _, outcome := range []string{OutcomeUnknownTable, OutcomeNotWatched, OutcomeOtherCatalog} {
		m.Events.WithLabelValues(SourceCommit, outcome)
	}
	m.Events.WithLabelValues(SourceNotification, OutcomeTestEvent)
	for _, source := range []string{SourceCommit, SourceNotification} {
		m.EventsForwarded.WithLabelValues(source)
	}
	for _, outcome := range ObjectOutcomes {
		m.Objects.WithLabelValues(outcome)
	}
	// The kind label's values are the job kinds (jobkind.All).
	for _, k := range jobkind.All() {
		kind := k.String()
		m.JobsScheduled.WithLabelValues(kind)
		for _, outcome := range []string{JobSucceeded, JobNoop, JobGaveUp, JobFailed} {
			m.Jobs.WithLabelValues(kind, outcome)
		}
	}
	for _, result := range []string{"applied", "error", "internal_error"} {
		m.ConfigReloads.WithLabelValues(result)
	}
	for _, outcome := range []string{"urgent", "covered"} {
		m.FastLaneLooks.WithLabelValues(outcome)
	}
	for _, result := range []string{"applied", "error"} {
		m.Refreshes.WithLabelValues(result)
	}
	for _, outcome := range []string{"unchanged", "changed", "loaded", "error"} {
		m.Polls.WithLabelValues(outcome)
	}
	for _, event := range []string{"acquired", "released", "lost"} {
		m.LeaseHandovers.WithLabelValues(event)
	}
	// objectio.RenewBeforeExpiry and objectio.RenewRefused.
	for _, reason := range []string{"before_expiry", "refused"} {
		m.CredentialRenewals.WithLabelValues(reason)
	}
	for _, reason := range []string{"not_expressible", "spark_failed"} {
		m.SparkLocalRuns.WithLabelValues(reason)
	}
	for _, why := range []string{"timeout", "shutdown"} {
		m.SparkInterrupts.WithLabelValues(why)
	}
}
