package triggers_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/apache/iceberg-go/table"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/icereactor/reactor/events"
	"github.com/icereactor/reactor/jobs"
	"github.com/icereactor/reactor/metrics"
	"github.com/icereactor/reactor/planner"
	"github.com/icereactor/reactor/thresholds"
	"github.com/icereactor/reactor/triggers"
)

// BenchmarkDrain measures how fast reactor drains a burst of commit events
// published while it was not consuming: 1,000 tables of 50 snapshots
// (openLake), events round-robin over the tables, each naming one of its
// table's snapshots, the consumer started once all are stored; timed until
// JetStream holds none (work-queue retention: every event acknowledged).
// CPU is the whole process's (the embedded NATS server's included).
//
//   - "decode+ack" is the peer: the same durable consumer settings, each
//     message decoded and acknowledged, nothing else (delivery is the
//     floor of any consumer);
//   - "reactor" is the commit consumer and planner as worker.Start wires
//     them, the planner's state at every table's newest snapshot (Discover,
//     untimed), as after a restart with a backlog;
//   - "reactor-cold" starts with no state: each table's first event
//     rebuilds it (one LoadTable and a read of its 50 manifests), the
//     rest are covered.
//
// BenchmarkDrainNewCommits is the burst after a restart or an outage: 200
// tables, 10,000 events. ids=real: reactor built the tables' state on half
// their snapshots and the events name the other half, which the catalog
// holds; ids=unknown: the events name commits the catalog never showed.
// Each table needs one refresh (to its newest metadata, covering every
// event of the burst); loads/table says how many it took.
func BenchmarkDrainNewCommits(b *testing.B) {
	const tables, snapshots, burst = 200, 50, 10_000
	for _, mode := range []string{"reactor-new", "reactor-unknown"} {
		b.Run("ids="+strings.TrimPrefix(mode, "reactor-"), func(b *testing.B) {
			l := openLake(b, tables, snapshots)
			for b.Loop() {
				b.StopTimer()
				wall, cpu, loads, rebuilds := drainCounted(b, l, burst, mode)
				if mode == "reactor-new" && rebuilds > 0 {
					b.Errorf("%d table states rebuilt from scratch during the burst; each should advance from the snapshot it holds", rebuilds)
				}
				b.ReportMetric(float64(burst)/wall.Seconds(), "events/s")
				b.ReportMetric(float64(cpu.Microseconds())/float64(burst), "cpu-µs/event")
				b.ReportMetric(float64(loads), "catalog-loads")
				b.ReportMetric(float64(loads)/tables, "loads/table")
				b.ReportMetric(float64(rebuilds), "rebuilds")
				b.StartTimer()
			}
		})
	}
}

func BenchmarkDrain(b *testing.B) {
	const tables, snapshots = 1000, 50
	for _, burst := range []int{10_000, 100_000} {
		for _, mode := range []string{"decode+ack", "reactor", "reactor-cold"} {
			b.Run(fmt.Sprintf("%s/events=%d", mode, burst), func(b *testing.B) {
				l := openLake(b, tables, snapshots)
				for b.Loop() {
					b.StopTimer()
					wall, cpu, loads := drainOnce(b, l, burst, mode)
					b.ReportMetric(float64(burst)/wall.Seconds(), "events/s")
					b.ReportMetric(float64(cpu.Microseconds())/float64(burst), "cpu-µs/event")
					b.ReportMetric(float64(loads), "catalog-loads")
					b.StartTimer()
				}
			})
		}
	}
}

func drainOnce(b *testing.B, l *lake, burst int, mode string) (time.Duration, time.Duration, int) {
	wall, cpu, loads, _ := drainCounted(b, l, burst, mode)
	return wall, cpu, loads
}

// drainCounted is drainOnce that also counts the table states rebuilt from
// scratch during the drain (reactor_state_rebuilds_total), which a burst
// of new commits on states already built must not need.
func drainCounted(b *testing.B, l *lake, burst int, mode string) (time.Duration, time.Duration, int, int) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	js, _ := benchNATS(b)
	if err := triggers.EnsureStreams(ctx, js, triggers.CommitOptions{}); err != nil {
		b.Fatal(err)
	}
	perTable := burst / len(l.tables)
	byTable := make([][][]byte, len(l.tables))
	for i := range l.tables {
		byTable[i] = l.eventsFor(b, i, perTable)
		switch mode {
		case "reactor-new":
			byTable[i] = l.newerEventsFor(b, i, perTable)
		case "reactor-unknown":
			byTable[i] = l.unknownEventsFor(b, i, perTable)
		}
	}
	subjects := make([]string, 0, burst)
	payloads := make([][]byte, 0, burst)
	for k := range perTable {
		for i, ident := range l.tables {
			subjects = append(subjects, "iceberg.commits."+ident[0]+"."+ident[1])
			payloads = append(payloads, byTable[i][k])
		}
	}
	publishAll(b, ctx, js, subjects, payloads)

	log := slog.New(slog.DiscardHandler)
	met := metrics.New()
	watched := newWatchedCatalog(l.cat)
	var stop func()
	start := func() {}
	switch mode {
	case "decode+ack":
		start = func() { stop = ackOnly(b, ctx, js) }
	default:
		cfg, err := thresholds.Parse([]byte("defaults: {small_file_count: 1000000}"))
		if err != nil {
			b.Fatal(err)
		}
		p := planner.New(planner.Options{Catalog: watched, Config: cfg, Dispatch: func(jobs.Job) {}, Logger: log, Metrics: met})
		defer p.Close()
		switch mode {
		case "reactor", "reactor-unknown":
			if n, err := p.Discover(ctx); err != nil || n != len(l.tables) {
				b.Fatalf("discovered %d tables: %v", n, err)
			}
		case "reactor-new":
			// The state as a restart left it: half the snapshots applied.
			for _, ident := range l.tables {
				tbl, err := l.cat.LoadTable(ctx, ident)
				if err != nil {
					b.Fatal(err)
				}
				if err := p.Observe(ctx, halfway(b, tbl)); err != nil {
					b.Fatal(err)
				}
			}
		}
		start = func() {
			cons, err := triggers.StartCommits(ctx, js, triggers.CommitOptions{}, p, log, met)
			if err != nil {
				b.Fatal(err)
			}
			stop = cons.Stop
		}
	}
	loadsBefore, rebuildsBefore := 0, 0.0
	for _, ident := range l.tables {
		loadsBefore += watched.loadsOf(ident[0] + "." + ident[1])
		rebuildsBefore += testutil.ToFloat64(met.StateRebuilds.WithLabelValues(ident[0] + "." + ident[1]))
	}
	runtime.GC()
	c0, t0 := processCPU(), time.Now()
	b.StartTimer()
	start()
	for !streamEmpty(b, ctx, js, triggers.DefaultCommitStream) {
		time.Sleep(2 * time.Millisecond)
	}
	b.StopTimer()
	wall, cpu := time.Since(t0), processCPU()-c0
	stop()
	loads, rebuilds := -loadsBefore, -rebuildsBefore
	for _, ident := range l.tables {
		loads += watched.loadsOf(ident[0] + "." + ident[1])
		rebuilds += testutil.ToFloat64(met.StateRebuilds.WithLabelValues(ident[0] + "." + ident[1]))
	}
	return wall, cpu, loads, int(rebuilds)
}

// ackOnly consumes the commit stream with the commit consumer's settings,
// decoding and acknowledging every message.
func ackOnly(b *testing.B, ctx context.Context, js jetstream.JetStream) func() {
	cons, err := js.CreateOrUpdateConsumer(ctx, triggers.DefaultCommitStream, jetstream.ConsumerConfig{
		Durable: triggers.DefaultDurable, AckPolicy: jetstream.AckExplicitPolicy, AckWait: triggers.AckWait,
		MaxDeliver: -1, FilterSubject: triggers.DefaultCommitSubject, MaxAckPending: triggers.DefaultMaxAckPending,
	})
	if err != nil {
		b.Fatal(err)
	}
	cc, err := cons.Consume(func(msg jetstream.Msg) {
		if _, err := events.DecodeCommit(msg.Data()); err != nil {
			b.Error(err)
		}
		_ = msg.Ack()
	}, jetstream.PullMaxMessages(triggers.DefaultMaxAckPending/4))
	if err != nil {
		b.Fatal(err)
	}
	return func() {
		cc.Drain()
		select {
		case <-cc.Closed():
		case <-time.After(time.Minute):
			b.Fatal("the consumer did not close within 1m of Drain")
		}
	}
}

// newerEventsFor renders n commit events for table i naming the second
// half of its snapshots (the ones halfway leaves out), cycling.
func (l *lake) newerEventsFor(b *testing.B, i, n int) [][]byte {
	b.Helper()
	ident, ids := l.tables[i], l.snapshots[i]
	newer := ids[len(ids)/2:]
	out := make([][]byte, n)
	for k := range out {
		ev := events.CommitEvent{Namespace: ident[0], Table: ident[1], SnapshotID: newer[k%len(newer)], Operation: "append"}
		data, err := ev.Encode()
		if err != nil {
			b.Fatal(err)
		}
		out[k] = data
	}
	return out
}

// halfway is tbl as it was when half its snapshots were committed: the
// metadata without the later half, main at the last one kept.
func halfway(b *testing.B, tbl *table.Table) *table.Table {
	b.Helper()
	raw, err := json.Marshal(tbl.Metadata())
	if err != nil {
		b.Fatal(err)
	}
	var doc map[string]any
	// Numbers stay json.Number: a snapshot id read as a float64 loses its
	// low digits, and a state built on a mangled id cannot find it in the
	// table's ancestry, so every refresh of the burst rebuilt from scratch.
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(&doc); err != nil {
		b.Fatal(err)
	}
	snaps := doc["snapshots"].([]any)
	keep := snaps[:len(snaps)/2]
	last := keep[len(keep)-1].(map[string]any)["snapshot-id"]
	doc["snapshots"] = keep
	doc["current-snapshot-id"] = last
	doc["refs"] = map[string]any{"main": map[string]any{"snapshot-id": last, "type": "branch"}}
	if logs, ok := doc["snapshot-log"].([]any); ok && len(logs) > len(keep) {
		doc["snapshot-log"] = logs[:len(keep)]
	}
	if raw, err = json.Marshal(doc); err != nil {
		b.Fatal(err)
	}
	meta, err := table.ParseMetadataBytes(raw)
	if err != nil {
		b.Fatal(err)
	}
	return table.New(tbl.Identifier(), meta, tbl.MetadataLocation()+".halfway", tbl.FS, nil)
}

// unknownEventsFor renders n commit events for table i naming snapshots
// the table does not hold.
func (l *lake) unknownEventsFor(b *testing.B, i, n int) [][]byte {
	b.Helper()
	ident := l.tables[i]
	out := make([][]byte, n)
	for k := range out {
		ev := events.CommitEvent{Namespace: ident[0], Table: ident[1], SnapshotID: int64(1<<40 + i*n + k), Operation: "append"}
		data, err := ev.Encode()
		if err != nil {
			b.Fatal(err)
		}
		out[k] = data
	}
	return out
}
