package main

import (
	"testing"
	"time"
)

// within receives one value from ch, waiting at most d: a test that waits
// on a channel fails with what it waited for instead of hanging until the
// test binary's deadline.
func within[T any](t testing.TB, ch <-chan T, d time.Duration, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(d):
		t.Fatalf("timed out after %s waiting for %s", d, what)
		var zero T
		return zero
	}
}
