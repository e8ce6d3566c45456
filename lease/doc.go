// Package lease owns which reactor replica owns which table, through a
// NATS JetStream key-value bucket: tables hash to a fixed number of
// shards, each shard is one key whose value names its owner, and a key
// lives only as long as its owner keeps renewing it (the bucket's TTL).
// Replicas announce themselves with member keys that expire the same way,
// and each one takes its share of the shards (Create, which succeeds only
// for a key nobody holds), renews them (Update at the revision it holds,
// which fails once anyone else has taken the key), and gives up what is
// over its share when a replica joins (Delete at that revision).
//
// A replica is a stable name (the pod's) and each process start an
// incarnation of it, answering on a liveness subject of its own. A
// restart proves its predecessor gone by asking that subject (NATS's
// no-responders) and adopts its leases at once; a second live process
// under a name in use takes nothing (Refused says why).
//
// Files:
//   - manager.go: Options, Start, ownership queries (Owns, MayRun,
//     CheckCommit, CommitDeadline, Held, Owners: a Manager is an
//     ownership.Tables) and the lease values.
//   - identity.go: names and incarnations, the liveness probe and
//     responder, claiming the name, adopting a gone incarnation's shards,
//     the connection epoch a commit needs.
//   - renew.go: the watcher, the renewal loop, losing lapsed leases,
//     renewing the member key, standing down when superseded.
//   - share.go: the even share, taking free shards, the handover wait for
//     expired ones, releasing for a rebalance and on shutdown (Release,
//     Stop, Pause, Resume).
//
// It decides nothing about tables beyond ownership: the worker hands its
// Manager, as one ownership.Tables, to the planner (which tables it
// keeps), the triggers (events of other tables go to their owner), the
// job pool (a job leaving its queue) and the executor (CommitDeadline
// before every commit and every deletion). It must not touch tables, events or jobs itself.
package lease
