// Package triggers owns reactor's NATS subscriptions: it consumes commit
// events from a JetStream durable consumer, hands each decoded event to the
// planner, and acknowledges it only once the planner has applied it, so a
// crash or restart redelivers it. Input it can never apply is dead-lettered
// (with the reason and the original payload) and acknowledged; a transient
// fault (catalog down) is retried with backoff, never dropped.
//
// It must not look inside tables or decide about jobs: that is the
// planner's.
package triggers
