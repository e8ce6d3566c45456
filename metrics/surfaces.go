package metrics

import "github.com/prometheus/client_golang/prometheus"

// Surfaces are the collectors of reactor's hardened surfaces: the status
// pages' credential, NATS streams at their limits, unknown table names,
// object-store timeouts and size limits.
type Surfaces struct {
	// StatusRefused counts status page requests refused for their
	// credentials, by reason (no_credentials, wrong_token).
	StatusRefused *prometheus.CounterVec
	// UnknownTablesRemembered counts commit events for a table the
	// catalog said lately it does not know, dead-lettered without asking
	// it again.
	UnknownTablesRemembered prometheus.Counter
	// Streams: each of reactor's streams' size and limits, as last read
	// (bytes, messages; limits 0 when none), the times each was found
	// full, and reactor's own publishes a full stream refused.
	StreamBytes, StreamMessages, StreamLimitBytes, StreamLimitMessages *prometheus.GaugeVec
	// StreamFill is the larger of bytes/limit and messages/limit.
	StreamFill                       *prometheus.GaugeVec
	StreamFull, StreamPublishRefused *prometheus.CounterVec
	// SizeLimitRefusals counts reads refused for a file over its size
	// limit, by kind (metadata_json, manifest_list, manifest,
	// parquet_footer): as jobs failed and table refreshes that failed.
	SizeLimitRefusals *prometheus.CounterVec
	// CredentialRenewals counts the renewals of a table's vended storage
	// credentials by the executor's FileIOs, by reason (before_expiry,
	// refused).
	CredentialRenewals *prometheus.CounterVec
}

func newSurfaces() Surfaces {
	return Surfaces{
		StatusRefused: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "reactor_status_requests_refused_total",
			Help: "Status page requests refused for their credentials (--status-token-file), by reason: no_credentials, wrong_token.",
		}, []string{"reason"}),
		UnknownTablesRemembered: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "reactor_unknown_table_events_remembered_total",
			Help: "Commit events for a table the catalog said lately it does not know (within --unknown-table-ttl), dead-lettered without a catalog call.",
		}),
		StreamBytes: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "reactor_stream_bytes",
			Help: "Bytes stored in each of reactor's NATS streams, as last read (every 15s).",
		}, []string{"stream"}),
		StreamMessages: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "reactor_stream_messages",
			Help: "Messages stored in each of reactor's NATS streams, as last read (every 15s).",
		}, []string{"stream"}),
		StreamLimitBytes: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "reactor_stream_limit_bytes",
			Help: "The stream's byte limit (MaxBytes; 0: none).",
		}, []string{"stream"}),
		StreamLimitMessages: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "reactor_stream_limit_messages",
			Help: "The stream's message limit (MaxMsgs; 0: none).",
		}, []string{"stream"}),
		StreamFill: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "reactor_stream_fill_ratio",
			Help: "How full each of reactor's NATS streams is: the larger of bytes and messages against their limits (1: full).",
		}, []string{"stream"}),
		StreamFull: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "reactor_stream_full_total",
			Help: "Times a stream of reactor's was found at its limit: NATS refuses what is published to it (discard new) or drops its oldest messages (discard old).",
		}, []string{"stream"}),
		SizeLimitRefusals: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "reactor_size_limit_refusals_total",
			Help: "Jobs and table refreshes that failed because a file was over reactor's size limit (--max-*-bytes), by kind of file.",
		}, []string{"kind"}),
		CredentialRenewals: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "reactor_credential_renewals_total",
			Help: "Renewals of a table's vended storage credentials during a job (a reload of the table from the catalog), by reason: before_expiry, refused (the store refused them: expired or revoked).",
		}, []string{"reason"}),
		StreamPublishRefused: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "reactor_stream_publish_refused_total",
			Help: "Messages reactor published (dead letters, events forwarded to a shard) that NATS refused because the stream was full.",
		}, []string{"stream"}),
	}
}

func (s Surfaces) collectors() []prometheus.Collector {
	return []prometheus.Collector{s.StatusRefused, s.UnknownTablesRemembered, s.StreamBytes, s.StreamMessages,
		s.StreamLimitBytes, s.StreamLimitMessages, s.StreamFill, s.StreamFull, s.StreamPublishRefused, s.SizeLimitRefusals, s.CredentialRenewals}
}

// DefaultStreams are the names of the streams reactor creates by default
// (triggers' and lease's; triggers/limits_test.go keeps them equal): their
// series exist from the start, at 0 until the streams are first read.
var DefaultStreams = []string{"REACTOR_COMMITS", "REACTOR_NOTIFICATIONS", "REACTOR_DEADLETTER", "REACTOR_SHARDS", "KV_REACTOR_LEASES"}

// SizeLimitKinds are sizelimit.Kinds (sizelimit/limits_test.go keeps them
// equal).
var SizeLimitKinds = []string{"metadata_json", "manifest_list", "manifest", "parquet_footer"}

func (s Surfaces) startAtZero() {
	for _, reason := range []string{"no_credentials", "wrong_token"} {
		s.StatusRefused.WithLabelValues(reason)
	}
	for _, kind := range SizeLimitKinds {
		s.SizeLimitRefusals.WithLabelValues(kind)
	}
	for _, name := range DefaultStreams {
		for _, v := range []*prometheus.GaugeVec{s.StreamBytes, s.StreamMessages, s.StreamLimitBytes, s.StreamLimitMessages, s.StreamFill} {
			v.WithLabelValues(name)
		}
		s.StreamFull.WithLabelValues(name)
		s.StreamPublishRefused.WithLabelValues(name)
	}
}
