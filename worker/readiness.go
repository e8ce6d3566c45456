package worker

// Readiness: what /readyz and reactor_ready answer, kept fresh in the
// background so that no probe or scrape calls the catalog (a scrape every
// few seconds from several Prometheus servers, and the kubelet's probes,
// would otherwise each cost a catalog round trip, and a hung catalog would
// hang them).

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/icereactor/reactor/redact"
)

// Readiness inputs: each is checked by whoever knows (a background probe,
// or a part of the worker that sees the dependency fail) and reported with
// readiness.set.
const (
	// ReadyCatalog: the catalog answers (the background probe's
	// ListNamespaces; a catalog package that sees every call may report
	// it too).
	ReadyCatalog = "catalog"
)

const (
	// DefaultReadinessEvery is how often the background probe asks the
	// catalog whether it answers.
	DefaultReadinessEvery = 15 * time.Second
	// readinessTimeout bounds one probe.
	readinessTimeout = 5 * time.Second
)

// readiness holds the last result of each input.
type readiness struct {
	mu     sync.Mutex
	inputs map[string]readinessInput
	// every is the probe's period: a result older than a few periods is
	// stale (its prober is stuck).
	every time.Duration
	// checked is closed once every input has reported once.
	checked chan struct{}
	pending map[string]bool
}

type readinessInput struct {
	err error
	at  time.Time
}

func newReadiness(every time.Duration, inputs ...string) *readiness {
	r := &readiness{inputs: map[string]readinessInput{}, every: every, checked: make(chan struct{}), pending: map[string]bool{}}
	for _, in := range inputs {
		r.pending[in] = true
	}
	if len(inputs) == 0 {
		close(r.checked)
	}
	return r
}

// set records input's latest result (nil: fine).
func (r *readiness) set(input string, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.inputs[input] = readinessInput{err: err, at: time.Now()}
	if r.pending[input] {
		delete(r.pending, input)
		if len(r.pending) == 0 {
			close(r.checked)
		}
	}
}

// err is why the worker is not ready by the inputs, nil when every input
// is fine. It waits (within ctx) for inputs not yet checked once.
func (r *readiness) err(ctx context.Context) error {
	select {
	case <-r.checked:
	case <-ctx.Done():
		return errors.New("not checked yet: the first readiness checks have not answered")
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	var errs []error
	for _, name := range []string{ReadyCatalog} {
		in, ok := r.inputs[name]
		switch {
		case !ok:
		case in.err != nil:
			errs = append(errs, fmt.Errorf("%s unreachable: %w", name, in.err))
		case time.Since(in.at) > 3*r.every+readinessTimeout:
			errs = append(errs, fmt.Errorf("%s: no answer for %s (its check is stuck)", name, time.Since(in.at).Round(time.Second)))
		}
	}
	return errors.Join(errs...)
}

// probeCatalog asks the catalog whether it answers now and every period
// until ctx ends, and reports each answer.
func (w *Worker) probeCatalog(ctx context.Context, every time.Duration) {
	defer w.bg.Done()
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		pctx, cancel := context.WithTimeout(ctx, readinessTimeout)
		_, err := w.Catalog.ListNamespaces(pctx, nil)
		cancel()
		if ctx.Err() != nil {
			return
		}
		w.readiness.set(ReadyCatalog, redact.Error(err))
		reachable := 0.0
		if err == nil {
			reachable = 1
		}
		w.Metrics.CatalogReachable.Set(reachable)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
