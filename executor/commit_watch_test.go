package executor

import (
	"context"
	"testing"
	"time"
)

// A waiting retry wakes on the next observed commit of its table, at once
// for one observed since its mark, and not for other tables' commits.
func TestCommitWatch(t *testing.T) {
	var w commitWatch
	ctx := t.Context()
	mark := w.mark("db.t")
	w.observed("db.t")
	if !w.wait(ctx, "db.t", mark, time.Hour) {
		t.Error("a commit observed since the mark did not count")
	}
	mark = w.mark("db.t")
	woke := make(chan bool)
	go func() { woke <- w.wait(ctx, "db.t", mark, time.Hour) }()
	w.observed("db.other")
	w.observed("db.t")
	if !<-woke {
		t.Error("the wait did not end on the table's next commit")
	}
	if w.wait(ctx, "db.t", w.mark("db.t"), time.Millisecond) {
		t.Error("a wait with no commit reported one")
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if w.wait(cancelled, "db.t", w.mark("db.t"), time.Hour) {
		t.Error("a cancelled wait reported a commit")
	}
}
