package commitwatch

import (
	"context"
	"testing"
	"time"
)

// A waiting retry wakes on the next observed commit of its table, at once
// for one observed since its mark, and not for other tables' commits.
func TestWatch(t *testing.T) {
	var w Watch
	ctx := t.Context()
	mark := w.Mark("db.t")
	w.Observed("db.t")
	if !w.Wait(ctx, "db.t", mark, time.Hour) {
		t.Error("a commit observed since the mark did not count")
	}
	mark = w.Mark("db.t")
	woke := make(chan bool)
	go func() { woke <- w.Wait(ctx, "db.t", mark, time.Hour) }()
	w.Observed("db.other")
	w.Observed("db.t")
	if !<-woke {
		t.Error("the wait did not end on the table's next commit")
	}
	if w.Wait(ctx, "db.t", w.Mark("db.t"), time.Millisecond) {
		t.Error("a wait with no commit reported one")
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if w.Wait(cancelled, "db.t", w.Mark("db.t"), time.Hour) {
		t.Error("a cancelled wait reported a commit")
	}
}
