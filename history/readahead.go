package history

import (
	"context"
	"fmt"
	"sync"

	"github.com/apache/iceberg-go"
	iceio "github.com/apache/iceberg-go/io"
)

// readAhead calls read(0..n-1) from readers goroutines, at most readers
// at once and at most 2*readers ahead of the item used, and use(i, v) for
// each in order from the caller's goroutine: an object store's reads
// overlap their round trips while the caller sees the sequential order,
// with memory bounded by the window rather than by n. The first error,
// from read or use, stops it; the reads under way finish (iceberg-go's
// manifest readers take no context) before it returns, so no goroutine
// outlives the call.
func readAhead[T any](ctx context.Context, n, readers int, read func(i int) (T, error), use func(i int, v T) error) error {
	if n == 0 {
		return ctx.Err()
	}
	readers = max(1, min(readers, n))
	window := min(2*readers, n)
	type result struct {
		v   T
		err error
	}
	// Slot i%window holds item i's result; item i+window is fed only
	// after item i was used, so a slot holds at most one result.
	slots := make([]chan result, window)
	for i := range slots {
		slots[i] = make(chan result, 1)
	}
	jobs := make(chan int, window)
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer wg.Wait()
	defer close(jobs)
	defer cancel()
	for range readers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range jobs {
				if err := ctx.Err(); err != nil {
					slots[i%window] <- result{err: err}
					continue
				}
				v, err := read(i)
				slots[i%window] <- result{v: v, err: err}
			}
		}()
	}
	for i := range window {
		jobs <- i
	}
	for i := range n {
		var r result
		select {
		case r = <-slots[i%window]:
		case <-ctx.Done():
			return ctx.Err()
		}
		if r.err != nil {
			return r.err
		}
		if err := use(i, r.v); err != nil {
			return err
		}
		if next := i + window; next < n {
			jobs <- next
		}
	}
	return nil
}

// ReadManifests reads the entries of each manifest of ms (DELETED ones
// left out with discardDeleted) with fetch (nil: the manifest's own
// FetchEntries; the planner passes manifestread's, which parses each
// distinct schema once), readers at a time on an object store
// (readAhead; 0 or 1: one after another, in the caller's goroutine), and
// calls use with each manifest's entries in the order of ms, one at a
// time from the caller's goroutine. The first error stops it.
func ReadManifests(ctx context.Context, fs iceio.IO, ms []iceberg.ManifestFile, readers int, discardDeleted bool,
	fetch func(fs iceio.IO, m iceberg.ManifestFile, discardDeleted bool) ([]iceberg.ManifestEntry, error),
	use func(m iceberg.ManifestFile, entries []iceberg.ManifestEntry) error) error {
	if fetch == nil {
		fetch = func(fs iceio.IO, m iceberg.ManifestFile, discardDeleted bool) ([]iceberg.ManifestEntry, error) {
			return m.FetchEntries(fs, discardDeleted)
		}
	}
	read := func(i int) ([]iceberg.ManifestEntry, error) {
		entries, err := fetch(fs, ms[i], discardDeleted)
		if err != nil {
			return nil, fmt.Errorf("read manifest %s: %w", ms[i].FilePath(), err)
		}
		return entries, nil
	}
	if readers <= 1 {
		for i, m := range ms {
			if err := ctx.Err(); err != nil {
				return err
			}
			entries, err := read(i)
			if err != nil {
				return err
			}
			if err := use(m, entries); err != nil {
				return err
			}
		}
		return nil
	}
	return readAhead(ctx, len(ms), readers, read, func(i int, entries []iceberg.ManifestEntry) error {
		return use(ms[i], entries)
	})
}
