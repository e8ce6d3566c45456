package catalogs

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// ErrTimeout marks a catalog call that did not finish within the catalog
// timeout (Config.Timeout, --catalog-timeout). Nothing is known about a
// change such a call was making: a commit that timed out may have landed.
var ErrTimeout = errors.New("catalog call timed out")

// errCatalogDeadline is the cause of a call's context ending at the
// catalog timeout, told apart from the caller's own deadline or cancel.
var errCatalogDeadline = errors.New("catalog timeout")

// abandonGrace is how long a call whose context has ended may take to
// return its own error before the caller is given ErrTimeout and the call
// is left to end in the background: every catalog iceberg-go ships honours
// its context, but opening the SQL and Hadoop catalogs does not (they use
// context.Background), and a hung server must not hang reactor.
const abandonGrace = time.Second

// bounded runs call with a context that ends after timeout, or earlier
// with the caller's. What is to blame is in the error: ErrTimeout when the
// catalog timeout ended it, the caller's context error otherwise.
func bounded[T any](ctx context.Context, timeout time.Duration, op string, call func(context.Context) (T, error)) (T, error) {
	cctx, cancel := context.WithTimeoutCause(ctx, timeout, errCatalogDeadline)
	defer cancel()
	type result struct {
		v   T
		err error
	}
	done := make(chan result, 1)
	go func() {
		v, err := call(cctx)
		done <- result{v, err}
	}()
	var r result
	select {
	case r = <-done:
	case <-cctx.Done():
		select {
		case r = <-done:
		case <-time.After(abandonGrace):
			var zero T
			return zero, timeoutError(cctx, op, timeout, context.Cause(cctx))
		}
	}
	if r.err != nil && cctx.Err() != nil {
		r.err = timeoutError(cctx, op, timeout, r.err)
	}
	return r.v, r.err
}

// timeoutError explains a call ended by its context: ErrTimeout when the
// catalog timeout ended it, else err as it is (the caller's own deadline or
// cancel is not the catalog's fault).
func timeoutError(cctx context.Context, op string, timeout time.Duration, err error) error {
	if !errors.Is(context.Cause(cctx), errCatalogDeadline) {
		if err == nil {
			return cctx.Err()
		}
		return err
	}
	return fmt.Errorf("%w: %s did not finish within %s (the catalog timeout, --catalog-timeout): %w", ErrTimeout, op, timeout, err)
}

// progressDeadline ends a context when no progress was reported for
// timeout: a listing may take long in all, each step must not.
type progressDeadline struct {
	timer   *time.Timer
	timeout time.Duration
}

func newProgressDeadline(ctx context.Context, timeout time.Duration) (context.Context, *progressDeadline, func()) {
	cctx, cancel := context.WithCancelCause(ctx)
	p := &progressDeadline{timeout: timeout, timer: time.AfterFunc(timeout, func() { cancel(errCatalogDeadline) })}
	return cctx, p, func() { p.timer.Stop(); cancel(nil) }
}

// pause stops the clock while the consumer handles a step; resume starts
// it again for the next.
func (p *progressDeadline) pause()  { p.timer.Stop() }
func (p *progressDeadline) resume() { p.timer.Reset(p.timeout) }
