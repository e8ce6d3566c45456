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
// It decides nothing about tables beyond ownership: the worker tells the
// planner which tables it owns, routes events of other tables to their
// owner, and the executor asks CheckCommit before every commit. It must
// not touch tables, events or jobs itself.
package lease
