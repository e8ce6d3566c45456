// Package worker assembles a running reactor from its parts and takes it
// apart again in the right order. `reactor run`, `reactor demo` and the
// end-to-end tests start reactor through it, so they run the same wiring.
//
// Its parts, and the file implementing each:
//
//   - Wiring (worker.go): Config and Start build the executor, the job
//     loop and the background loops from one Config (starting the embedded
//     servers when asked), and hand every layer the same two things: one
//     ownership.Tables (replicas.go) and one commitwatch.Watch; Shutdown and
//     Close stop them in order.
//   - The job loop (loop.go): jobLoop owns dispatch and finish. It is
//     built before the planner and the job pool and handed to both: the
//     planner's jobs go to its dispatch (the scheduled event, the pool's
//     queue), the pool's ends to its finish (counts, the finished event,
//     the orphan report, Planner.Finished, the table's health report).
//   - NATS (nats.go): connecting to the server, waiting and retrying while
//     it is unreachable, then the lease manager and the commit-event and
//     bucket-notification consumers (package triggers) started on the
//     connection and stopped with it; Connected reports the link, Conn and
//     JetStream hand it out (nil until connected).
//   - Replicas (replicas.go): LeaseConfig and the lease manager (package
//     lease) by which replicas share the tables, and leaseOwnership, the
//     one ownership.Tables over it that the planner, the triggers, the job
//     pool and the executor (before every commit) are handed.
//   - NATS credentials and TLS (natsauth.go): NATSSecurity (creds file,
//     nkey seed, CA, client certificate) for every connection, and
//     ExplainNATSError, which says what to fix when the server's
//     certificate or the client's is refused.
//   - HTTP (http.go): /metrics for Prometheus, /healthz and /readyz on
//     HTTPAddr, the status pages (package status) beside them or on a
//     listener of their own (StatusAddr); every listener with read, write
//     and idle timeouts and a connection bound (HTTPLimits). Ready says
//     whether the worker can do its work (connected to NATS, allowed to
//     take tables, the catalog reachable as its background probe last saw
//     it: readiness.go keeps that state, so no probe or scrape calls the
//     catalog).
//   - Status page credential (statusauth.go): the token of
//     StatusTokenFile, as a Bearer token or basic auth's password, re-read
//     when the file changes.
//   - Status (status.go): the read-only view the status pages render
//     (Worker.Status) and the bounded job history they show, fed by every
//     job event the worker publishes; a table page's read of its table is
//     kept while the table's snapshot holds (at most 30 s, 32 tables).
//   - Config reload (reload.go): the thresholds file is re-read when its
//     content changes (a ConfigMap's symlink swap included); a file that
//     fails to read, parse or validate is rejected and counted, and the last
//     good configuration stays.
//   - Reports (reports.go): publishing health and orphan-cleanup reports
//     (which the job loop sends) best effort under their subject prefixes.
//   - Job events (jobevents.go): the started and finished events of every
//     job, built from the planner's Job and the executor's Report.
//   - Inbox (inbox.go): InboxPrefix, reactor's own reply-subject prefix in
//     place of NATS' shared _INBOX.
//   - Catalog (catalog.go): the warehouse prefixes and their refresh, and
//     the discovery of the watched namespaces' tables at start and after
//     every lease acquisition. The catalog itself is opened by package
//     catalogs (OpenWaiting: one that is down is waited for, and its state
//     is reactor_catalog_reachable and a readiness input).
//   - Polling (poll.go): the safety net under the events: every owned table
//     checked against the catalog's current metadata location each
//     refresh_interval and refreshed only when it moved ([PollState] for the
//     status pages, reactor_polls_total).
//
// It owns lifecycles only; every decision lives in the parts. It decides no
// job (package planner), writes no table (package executor), parses no event
// (package triggers, package events) and interprets no threshold (package
// thresholds).
package worker
