// Package triggers owns reactor's NATS subscriptions: it consumes commit
// events and bucket notifications from JetStream durable consumers, hands
// each decoded event to the planner, and acknowledges it only once the
// planner has applied it, so a crash or restart redelivers it. Input it can
// never apply is dead-lettered (with the reason and the original payload)
// and acknowledged; a transient fault (catalog down) is retried with
// backoff, never dropped.
//
// It must not look inside tables or decide about jobs: that is the
// planner's.
//
// # Parts
//
//   - Commit events (commits.go): [StartCommits] and [CommitConsumer] on the
//     work-queue stream REACTOR_COMMITS; [EnsureStreams] creates it and the
//     dead-letter stream; [Applier] is what it needs of the planner (checks
//     without I/O, one refresh per table's waiting events). An event of a
//     commit the state has not applied is told, before the load, to
//     CommitOptions.CommitWatch (package commitwatch), which the
//     executor's commit retries wait on; a new metadata file is told the
//     same way.
//   - Bucket notifications (notifications.go): [StartNotifications] and
//     [NotificationConsumer] on REACTOR_NOTIFICATIONS, one or more
//     [NotificationSource] each with its own key encoding (url for MinIO and
//     AWS, raw for versitygw; never guessed); metadata files become commits,
//     data files are tracked, records no known table claims wait in their
//     own lane while the planner refreshes its location index
//     ([ObjectApplier]).
//   - Coalescing (coalesce.go): the [Coalescer] collapses the events of one
//     table into one refresh of its newest metadata and refreshes different
//     tables in parallel ([DefaultRefreshConcurrency] at once), tables taking
//     turns, each event acknowledged after the round whose refresh covers it.
//   - The fast lane (fastlane.go, yield.go): a table the planner says is
//     near a threshold ([HotTables]) gets a core subscription on its own
//     commit subject, on a connection of its own, so its event asks for an
//     urgent refresh the moment it is published instead of after the
//     backlog queued ahead of it; the lane only looks (the durable copy is
//     acknowledged and counted, once, when it arrives covered), and the
//     durable deliveries briefly yield to urgent rounds.
//   - Forwarding between replicas (forward.go): an event of a table another
//     replica owns (ownership.Tables, package lease) is copied byte for byte to
//     its shard's subject on REACTOR_SHARDS and the original acknowledged
//     once the copy is stored; [StartShardConsumers] consumes the shards this
//     replica owns, moving with the lease.
//   - Redelivery and holding (redelivery.go): a transient fault is
//     negatively acknowledged with a doubling delay (250 ms to 30 s), logged
//     once and then at most every 30 s; a notification waiting for its
//     table (a new table) or its commit is held, at most 256 at once, until
//     [DefaultNewTableGrace].
//   - Stream limits (limits.go, streamwatch.go): [StreamLimits] on every
//     stream the package creates (bytes, messages, age, discard policy;
//     [DefaultEventLimits], [DefaultDeadLetterLimits]), and [WatchStreams],
//     which reads the streams' sizes against them into gauges and log
//     lines, and counts a stream found full.
//   - Unknown table names (unknown.go): the catalog's "no such table" is
//     remembered per name for CommitOptions.UnknownTableTTL, so further
//     events for it are dead-lettered without a catalog load.
//   - Dead letters (deadletter.go): the original payload as the body, what
//     happened in headers (events.DeadLetter), sized to the server's
//     max_payload, credentials masked; stored before the original is
//     acknowledged, with a message id that makes a redelivery store nothing
//     new.
//   - Sweeping a backlog (sweep.go): a refresh that succeeded covers every
//     event of its table stored before it started, so the later deliveries
//     of a burst are acknowledged without a load.
package triggers
