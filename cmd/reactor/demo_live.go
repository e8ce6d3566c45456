package main

import (
	"context"
	"fmt"
	"log/slog"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/apache/iceberg-go/table"

	"github.com/icereactor/reactor/probe"
)

// observation is the table as a reader sees it at one moment.
type observation struct {
	table   probe.TableSample
	scan    probe.ScanSample
	scanned bool
}

// observe measures the table, and with scan also times a full scan against
// its compacted copy.
func (d *demo) observe(ctx context.Context, scan bool) (observation, error) {
	var o observation
	tbl, err := d.cat.LoadTable(ctx, d.ident)
	if err != nil {
		return o, fmt.Errorf("load %v: %w", d.ident, err)
	}
	if o.table, err = probe.Measure(ctx, tbl, demoTargetFileSize.Bytes()); err != nil {
		return o, err
	}
	if scan {
		load := func(ctx context.Context) (*table.Table, error) { return d.cat.LoadTable(ctx, d.ident) }
		if o.scan, err = d.copies.Compare(ctx, load, demoTargetFileSize.Bytes()); err != nil {
			return o, err
		}
		o.scanned = true
	}
	return o, nil
}

// The live table's columns.
var demoColumns = []struct {
	name, format string
}{
	{"elapsed", "%7s"}, {"commits", "%7s"}, {"files/ideal", "%11s"}, {"on disk", "%7s"}, {"snapshots", "%9s"},
	{"manifests", "%9s"}, {"scan", "%6s"}, {"rewritten", "%9s"}, {"expired", "%7s"}, {"unlinked", "%8s"}, {"deleted", "%7s"},
	{"jobs", "%5s"}, {"health", "%-16s"},
}

func demoRow(cells ...string) string {
	var b strings.Builder
	for i, c := range demoColumns {
		if i > 0 {
			b.WriteByte(' ')
		}
		fmt.Fprintf(&b, c.format, cells[i])
	}
	return strings.TrimRight(b.String(), " ")
}

func (d *demo) header() string {
	names := make([]string, len(demoColumns))
	for i, c := range demoColumns {
		names[i] = c.name
	}
	return "files/ideal: live data files and ceil(bytes/target) per partition; on disk: data files in storage\n" +
		"(live, kept for old snapshots, awaiting deletion, or left by failed commits); scan: a full scan's time\n" +
		"over the same rows compacted; expired: snapshots; unlinked: files (data, manifests, manifest lists)\n" +
		"expiry took out of the history; deleted: those deleted once min_reader_margin passed; jobs: finished+due\n\n" +
		demoRow(names...)
}

// line is one progress line. The full scan is timed on every other line,
// the last figure shown in between.
func (d *demo) line(ctx context.Context) string {
	d.lines++
	o, err := d.observe(ctx, d.lines%2 == 1)
	elapsed := time.Since(d.start)
	if err != nil {
		return fmt.Sprintf("%6.0fs  (table not readable just now: %v)", elapsed.Seconds(), err)
	}
	if o.scanned {
		d.lastScan, d.scanned = o.scan, true
	}
	commits, _ := d.writer.Stats()
	tally := d.jobs.Tally()
	scan := "-"
	if d.scanned {
		scan = fmt.Sprintf("%.1fx", d.lastScan.Ratio())
	}
	jobs := fmt.Sprint(finishedCount(tally))
	if n := tally.Running(); n > 0 {
		jobs += fmt.Sprintf("+%d", n)
	}
	return demoRow(
		fmt.Sprintf("%.0fs", elapsed.Seconds()),
		fmt.Sprint(commits),
		fmt.Sprintf("%d/%d", o.table.DataFiles, o.table.IdealFiles),
		fmt.Sprint(o.table.DiskDataFiles),
		fmt.Sprint(o.table.Snapshots),
		fmt.Sprint(o.table.DataManifests),
		scan,
		byteSize(tally.RewrittenBytes),
		fmt.Sprint(tally.ExpiredSnapshots),
		fmt.Sprint(tally.ExpiryDeletedFiles+tally.ExpiryDeferredFiles),
		fmt.Sprint(tally.ExpiryDeletedFiles+tally.DeferredDeletedFiles),
		jobs,
		d.health(),
	)
}

// health is reactor's own health report on the table, in a few words.
func (d *demo) health() string {
	h, ok := d.w.Planner.Health(d.tableName())
	switch {
	case !ok:
		return "-"
	case h.Healthy:
		return "ok"
	}
	set := d.th.For(d.tableName(), nil)
	var bad []string
	if h.Snapshots > set.HealthMaxSnapshots {
		bad = append(bad, fmt.Sprintf("snapshots>%d", set.HealthMaxSnapshots))
	}
	if h.TinyFiles > set.HealthMaxTinyFiles {
		bad = append(bad, fmt.Sprintf("tiny files>%d", set.HealthMaxTinyFiles))
	}
	if h.OldestSnapshotAge > set.HealthMaxSnapshotAge {
		bad = append(bad, "old snapshot")
	}
	if len(bad) == 0 {
		return "unhealthy"
	}
	return strings.Join(bad, ",")
}

func finishedCount(t probe.JobTally) int {
	n := 0
	for _, v := range t.Finished {
		n += v
	}
	return n
}

// byteSize renders a byte count compactly: 0, 12K, 3.4M.
func byteSize(n int64) string {
	switch {
	case n < 1000:
		return fmt.Sprint(n)
	case n < 1000*1024:
		return fmt.Sprintf("%.0fK", float64(n)/1024)
	case n < 1000*1024*1024:
		return fmt.Sprintf("%.1fM", float64(n)/(1024*1024))
	}
	return fmt.Sprintf("%.1fG", float64(n)/(1024*1024*1024))
}

// live prints a progress line about every second (a second after the
// previous line was printed: on a busy machine measuring takes a while, and
// lines should not bunch up) until the returned function is called; that
// function returns once the printer has stopped.
func (d *demo) live(ctx context.Context) (stop func()) {
	done := make(chan struct{})
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		t := time.NewTimer(time.Second)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-ctx.Done():
				return
			case <-t.C:
				d.printf("%s", d.line(ctx))
				t.Reset(time.Second)
			}
		}
	}()
	var once sync.Once
	return func() {
		once.Do(func() { close(done) })
		<-stopped
	}
}

// settle waits until reactor has nothing left to do (settledNow, twice in
// a row half a second apart: one job finishing and the next being scheduled
// are two events), or until no job has finished for longer than the expiry
// and deletion margins (a partition can stay over the threshold when its
// files cannot be grouped, and then no job comes).
func (d *demo) settle(ctx context.Context) (string, error) {
	d.atStop = d.atWriterStop(ctx)
	deadline := time.Now().Add(demoSettleLimit)
	idleFor := demoSnapshotMaxAge + demoMinReaderMargin + 2*time.Second
	lastFinished, stable := -1, 0
	lastChange := time.Now()
	for {
		tally := d.jobs.Tally()
		if n := finishedCount(tally); n != lastFinished {
			lastFinished, lastChange = n, time.Now()
		}
		if d.settledNow(ctx, tally) {
			if stable++; stable >= 2 {
				return "compacted, expired, every unlinked file deleted", nil
			}
		} else {
			stable = 0
		}
		if tally.Running() == 0 && time.Since(lastChange) > idleFor {
			return "no further job scheduled", nil
		}
		if time.Now().After(deadline) {
			return fmt.Sprintf("stopped waiting after %s", demoSettleLimit), nil
		}
		select {
		case <-ctx.Done():
			return "", ctx.Err()
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// settledNow reports whether reactor has nothing left to do at this
// moment: no job due or running, every commit event applied, every
// partition below the threshold, no snapshot but the current one older than
// snapshot_max_age (with a moment's slack for the expiry to run), and no
// file waiting for deletion.
func (d *demo) settledNow(ctx context.Context, tally probe.JobTally) bool {
	if tally.Running() > 0 || tally.PendingDeletion() > 0 {
		return false
	}
	tbl, err := d.cat.LoadTable(ctx, d.ident)
	if err != nil || tbl.CurrentSnapshot() == nil {
		return false
	}
	current := tbl.CurrentSnapshot().SnapshotID
	snap, parts := d.w.Planner.TableCounters(d.tableName())
	if snap != current {
		return false
	}
	for _, p := range parts {
		if p.SmallFiles >= demoSmallFileCount || d.quietPending(p) {
			return false
		}
	}
	for _, s := range tbl.Metadata().Snapshots() {
		if s.SnapshotID != current && time.Since(time.UnixMilli(s.TimestampMs)) > demoSnapshotMaxAge+2*time.Second {
			return false
		}
	}
	return true
}

// levelCounter counts what reactor logs at warning and error, by message,
// so the summary can say what the log holds without the log breaking the
// table.
type levelCounter struct {
	lines atomic.Int64
	mu    sync.Mutex
	warn  map[string]int // "WARN table health" -> count
}

func (c *levelCounter) wrap(h slog.Handler) slog.Handler { return &countingHandler{Handler: h, c: c} }

func (c *levelCounter) add(r slog.Record) {
	c.lines.Add(1)
	if r.Level < slog.LevelWarn {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.warn == nil {
		c.warn = map[string]int{}
	}
	c.warn[r.Level.String()+" "+r.Message]++
}

// summary lists the warnings and errors by message, most frequent first.
func (c *levelCounter) summary() (lines int64, warnings string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	keys := make([]string, 0, len(c.warn))
	for k := range c.warn {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if c.warn[keys[i]] != c.warn[keys[j]] {
			return c.warn[keys[i]] > c.warn[keys[j]]
		}
		return keys[i] < keys[j]
	})
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s (%d)", k, c.warn[k])
	}
	return c.lines.Load(), strings.Join(parts, ", ")
}

type countingHandler struct {
	slog.Handler
	c *levelCounter
}

func (h *countingHandler) Handle(ctx context.Context, r slog.Record) error {
	h.c.add(r)
	return h.Handler.Handle(ctx, r)
}

func (h *countingHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return &countingHandler{Handler: h.Handler.WithAttrs(attrs), c: h.c}
}

func (h *countingHandler) WithGroup(name string) slog.Handler {
	return &countingHandler{Handler: h.Handler.WithGroup(name), c: h.c}
}
