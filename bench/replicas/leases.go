package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/icereactor/reactor/lease"
)

// leaseChange is one shard key's change, as the bucket's watcher saw it.
type leaseChange struct {
	at    time.Time
	shard int
	owner string // "" once deleted or expired
}

// leaseWatch follows the lease bucket: who owns each shard, and when it
// changed hands.
type leaseWatch struct {
	mu      sync.Mutex
	owners  map[int]string
	changes []leaseChange
	w       jetstream.KeyWatcher
	done    chan struct{}
}

// watchLeases watches the lease bucket (created by the first replica).
func watchLeases(ctx context.Context, js jetstream.JetStream) (*leaseWatch, error) {
	kv, err := js.KeyValue(ctx, lease.DefaultBucket)
	if err != nil {
		return nil, fmt.Errorf("lease bucket: %w", err)
	}
	w, err := kv.WatchAll(ctx)
	if err != nil {
		return nil, fmt.Errorf("watch lease bucket: %w", err)
	}
	lw := &leaseWatch{owners: map[int]string{}, w: w, done: make(chan struct{})}
	go lw.follow()
	return lw, nil
}

func (lw *leaseWatch) follow() {
	defer close(lw.done)
	for e := range lw.w.Updates() {
		if e == nil {
			continue // the end of the initial values
		}
		key, ok := strings.CutPrefix(e.Key(), "shard.")
		if !ok {
			continue
		}
		shard, err := strconv.Atoi(key)
		if err != nil {
			continue
		}
		owner := ""
		if e.Operation() == jetstream.KeyValuePut {
			var v struct {
				Replica string `json:"replica"`
			}
			if json.Unmarshal(e.Value(), &v) == nil {
				owner = v.Replica
			}
		}
		lw.mu.Lock()
		if lw.owners[shard] != owner {
			lw.changes = append(lw.changes, leaseChange{at: time.Now(), shard: shard, owner: owner})
		}
		if owner == "" {
			delete(lw.owners, shard)
		} else {
			lw.owners[shard] = owner
		}
		lw.mu.Unlock()
	}
}

func (lw *leaseWatch) stop() {
	_ = lw.w.Stop()
	<-lw.done
}

// held counts the shards each replica holds now.
func (lw *leaseWatch) held() map[string]int {
	lw.mu.Lock()
	defer lw.mu.Unlock()
	out := map[string]int{}
	for _, o := range lw.owners {
		out[o]++
	}
	return out
}

// shardsOf is the shards replica holds now.
func (lw *leaseWatch) shardsOf(replica string) []int {
	lw.mu.Lock()
	defer lw.mu.Unlock()
	var out []int
	for s, o := range lw.owners {
		if o == replica {
			out = append(out, s)
		}
	}
	return out
}

// takenAfter is, per shard, when another replica than dead first held it
// after t (absent: not yet), and by whom.
func (lw *leaseWatch) takenAfter(shards []int, dead string, t time.Time) map[int]leaseChange {
	want := map[int]bool{}
	for _, s := range shards {
		want[s] = true
	}
	lw.mu.Lock()
	defer lw.mu.Unlock()
	out := map[int]leaseChange{}
	for _, c := range lw.changes {
		if !want[c.shard] || c.at.Before(t) || c.owner == "" || c.owner == dead {
			continue
		}
		if _, ok := out[c.shard]; !ok {
			out[c.shard] = c
		}
	}
	return out
}

// expiredAfter is when each shard's key was first seen deleted or
// expired after t.
func (lw *leaseWatch) expiredAfter(shards []int, t time.Time) map[int]time.Time {
	want := map[int]bool{}
	for _, s := range shards {
		want[s] = true
	}
	lw.mu.Lock()
	defer lw.mu.Unlock()
	out := map[int]time.Time{}
	for _, c := range lw.changes {
		if want[c.shard] && !c.at.Before(t) && c.owner == "" {
			if _, ok := out[c.shard]; !ok {
				out[c.shard] = c.at
			}
		}
	}
	return out
}
