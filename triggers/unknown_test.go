package triggers

import (
	"errors"
	"fmt"
	"testing"
	"time"
)

func TestUnknownTables(t *testing.T) {
	now := time.Unix(1000, 0)
	u := newUnknownTables(time.Minute)
	u.now = func() time.Time { return now }
	cause := errors.New("unknown table: db.nope")
	if _, ok := u.lookup("db.nope"); ok {
		t.Fatal("remembered before being told")
	}
	u.remember("db.nope", cause)
	now = now.Add(59 * time.Second)
	err, ok := u.lookup("db.nope")
	if !ok || !errors.Is(err, cause) {
		t.Fatalf("within the TTL: %v %v", err, ok)
	}
	now = now.Add(time.Second)
	if _, ok := u.lookup("db.nope"); ok || u.len() != 0 {
		t.Fatal("remembered past the TTL")
	}
	// Off: nothing remembered.
	off := newUnknownTables(-1)
	off.remember("db.nope", cause)
	if _, ok := off.lookup("db.nope"); ok {
		t.Fatal("a negative TTL remembers")
	}
	var none *unknownTables
	none.remember("x", cause)
	if _, ok := none.lookup("x"); ok {
		t.Fatal("nil remembers")
	}
	// Bounded: the oldest names go first.
	for i := range maxUnknownTables + 10 {
		u.remember(fmt.Sprint("db.t", i), cause)
	}
	if n := u.len(); n != maxUnknownTables {
		t.Fatalf("%d names remembered, want %d", n, maxUnknownTables)
	}
	if _, ok := u.lookup("db.t0"); ok {
		t.Error("the oldest name is still remembered")
	}
	if _, ok := u.lookup(fmt.Sprint("db.t", maxUnknownTables+9)); !ok {
		t.Error("the newest name is forgotten")
	}
}
