package planner

import (
	"hash/fnv"
	"slices"
	"strings"
	"time"

	"github.com/icereactor/reactor/location"
)

// partitionValues is a partition tuple kept compactly: field ids with their
// values, ascending by id. Strings and byte slices are copied, so the
// tuple holds no reference into a decoded manifest (whose buffers are
// large and would otherwise stay alive with it).
type partitionValues []fieldValue

type fieldValue struct {
	id int32
	v  any
}

func compactValues(m map[int]any) partitionValues {
	out := make(partitionValues, 0, len(m))
	for id, v := range m {
		switch x := v.(type) {
		case string:
			v = strings.Clone(x)
		case []byte:
			v = slices.Clone(x)
		}
		out = append(out, fieldValue{id: int32(id), v: v})
	}
	slices.SortFunc(out, func(a, b fieldValue) int { return int(a.id) - int(b.id) })
	return out
}

// asMap renders the tuple as iceberg.DataFile.Partition() does.
func (pv partitionValues) asMap() map[int]any {
	if pv == nil {
		return nil
	}
	out := make(map[int]any, len(pv))
	for _, f := range pv {
		out[int(f.id)] = f.v
	}
	return out
}

// recentHashes is a bounded set of the last recentHashLimit values added,
// grown on demand: an idle table that never saw a notification holds none.
type recentHashes struct {
	ring []uint64
	next int
	set  map[uint64]struct{}
}

// recentHashLimit bounds recentHashes: 512 hashes cost about 16 KB.
const recentHashLimit = 512

func (r *recentHashes) add(v uint64) {
	if r.set == nil {
		r.set = map[uint64]struct{}{}
	}
	if _, ok := r.set[v]; ok {
		return
	}
	if len(r.ring) < recentHashLimit {
		r.ring = append(r.ring, v)
	} else {
		delete(r.set, r.ring[r.next])
		r.ring[r.next] = v
		r.next = (r.next + 1) % recentHashLimit
	}
	r.set[v] = struct{}{}
}

func (r *recentHashes) has(v uint64) bool {
	_, ok := r.set[v]
	return ok
}

// locationHash is a 64-bit hash of a location's identity
// (location.Identity: the key the planner compares and tracks locations
// by, whatever spelling a writer, a listing or a notification used). Sets
// of hashes stand in for sets of locations where a collision can only cost a missed optimisation, never a decision: a file
// taken for confirmed is not tracked (a listing still finds an orphan), a
// sorted file miscounted changes when a sort is next considered.
func locationHash(loc string) uint64 {
	h := fnv.New64a()
	_, _ = h.Write([]byte(location.Identity(loc)))
	return h.Sum64()
}

// instant is a point in time in 8 bytes (Unix nanoseconds; 0: none): a
// time.Time takes 24, and a partition keeps three.
type instant int64

func instantOf(t time.Time) instant {
	if t.IsZero() {
		return 0
	}
	return instant(t.UnixNano())
}

func (i instant) time() time.Time {
	if i == 0 {
		return time.Time{}
	}
	return time.Unix(0, int64(i))
}
