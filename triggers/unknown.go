package triggers

import (
	"fmt"
	"sync"
	"time"
)

// DefaultUnknownTableTTL is how long a table name the catalog did not know
// is answered from memory. A table created after an event named it is
// missed at most this long (its events meanwhile are dead-lettered, so
// they can be replayed); a storm of events for names that do not exist
// costs one catalog load per name per TTL.
const DefaultUnknownTableTTL = time.Minute

// maxUnknownTables bounds the names remembered: a storm of distinct names
// costs a load each (the catalog's answer is needed once per name), and
// memory stays bounded; the oldest are forgotten first.
const maxUnknownTables = 100_000

// unknownTables remembers the table names the catalog did not know, and
// its answer, for ttl.
type unknownTables struct {
	ttl time.Duration
	now func() time.Time

	mu    sync.Mutex
	names map[string]unknownTable
	// order holds the names in the order they were remembered (some
	// maybe forgotten or remembered again since: checked on eviction).
	order []string
}

type unknownTable struct {
	at  time.Time
	err error
}

func newUnknownTables(ttl time.Duration) *unknownTables {
	return &unknownTables{ttl: ttl, now: time.Now, names: map[string]unknownTable{}}
}

// lookup returns the catalog's answer for name if it said, within ttl,
// that the table does not exist.
func (u *unknownTables) lookup(name string) (error, bool) {
	if u == nil || u.ttl <= 0 {
		return nil, false
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	e, ok := u.names[name]
	if !ok {
		return nil, false
	}
	age := u.now().Sub(e.at)
	if age >= u.ttl {
		delete(u.names, name)
		return nil, false
	}
	return fmt.Errorf("%w (the catalog said so %s ago; it is asked again after %s)", e.err, age.Round(time.Millisecond), u.ttl), true
}

// remember notes that the catalog does not know name.
func (u *unknownTables) remember(name string, err error) {
	if u == nil || u.ttl <= 0 {
		return
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	u.names[name] = unknownTable{at: u.now(), err: err}
	u.order = append(u.order, name)
	for len(u.names) > maxUnknownTables && len(u.order) > 0 {
		// The oldest entry of order may be a name remembered again
		// since: forgetting it early only costs one more load.
		delete(u.names, u.order[0])
		u.order = u.order[1:]
	}
	if len(u.order) > 2*maxUnknownTables {
		// Names remembered again pile up in order: rebuild it.
		u.order = u.order[:0]
		for n := range u.names {
			u.order = append(u.order, n)
		}
	}
}

// len is the number of names remembered (some maybe expired).
func (u *unknownTables) len() int {
	if u == nil {
		return 0
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	return len(u.names)
}
