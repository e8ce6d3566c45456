package lease

import (
	"context"
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// BenchmarkFleet is the capacity simulation of the leases: n replicas,
// each a lease manager on its own NATS connection, against one
// nats-server, with the default TTL. It reports how long the fleet takes
// to settle from the last one's start, how long one more replica then
// waits for its share from its start, the shards per replica (the split is only as even
// as the shard count allows), and the load on the server at rest: the
// messages it receives per second (lease and member renewals: KV
// operations) and delivers per second (every renewal to every replica's
// watcher), and the consumers (one watcher per replica). Tables do not
// matter to the leases: 100,000 tables or 10 cost the bucket the same.
//
//	go test -run '^$' -bench BenchmarkFleet -benchtime 1x ./lease/
func BenchmarkFleet(b *testing.B) {
	for _, shards := range []int{64, 1024} {
		for _, n := range []int{10, 50, 100} {
			b.Run(fmt.Sprintf("shards=%d/replicas=%d", shards, n), func(b *testing.B) {
				for b.Loop() {
					runFleet(b, shards, n)
				}
			})
		}
	}
}

func runFleet(b *testing.B, shards, n int) {
	b.Helper()
	srv, err := server.NewServer(&server.Options{Host: "127.0.0.1", Port: server.RANDOM_PORT, JetStream: true,
		StoreDir: b.TempDir(), NoSigs: true, NoLog: true, JetStreamMaxMemory: 64 << 20, JetStreamMaxStore: 1 << 30})
	if err != nil {
		b.Fatal(err)
	}
	go srv.Start()
	if !srv.ReadyForConnections(15 * time.Second) {
		b.Fatal("nats-server not ready")
	}
	defer srv.Shutdown()
	ctx := context.Background()
	var ms []*Manager
	start := func(name string) *Manager {
		nc, err := nats.Connect(srv.ClientURL())
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(nc.Close)
		js, err := jetstream.New(nc)
		if err != nil {
			b.Fatal(err)
		}
		m, err := Start(ctx, js, Options{Replica: name, Shards: shards, Logger: slog.New(slog.DiscardHandler)})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(m.Stop)
		return m
	}
	settled := func(ms []*Manager) bool {
		total := 0
		for _, m := range ms {
			h := m.HeldCount()
			if h < shards/len(ms) || h > shards/len(ms)+1 {
				return false
			}
			total += h
		}
		return total == shards
	}
	wait := func(what string, ms []*Manager, t0 time.Time) time.Duration {
		for !settled(ms) {
			if time.Since(t0) > 5*time.Minute {
				b.Fatalf("%s: not settled within 5 minutes", what)
			}
			time.Sleep(10 * time.Millisecond)
		}
		return time.Since(t0)
	}
	var last time.Time
	for i := range n {
		last = time.Now()
		ms = append(ms, start(fmt.Sprintf("r%03d", i)))
	}
	settle := wait("the fleet", ms, last)

	// At rest: two renewal periods.
	v0, _ := srv.Varz(nil)
	window := 2 * DefaultTTL / 5
	time.Sleep(window)
	v1, _ := srv.Varz(nil)
	in := float64(v1.InMsgs-v0.InMsgs) / window.Seconds()
	out := float64(v1.OutMsgs-v0.OutMsgs) / window.Seconds()
	jsz, _ := srv.Jsz(&server.JSzOptions{})
	consumers := 0
	if jsz != nil {
		consumers = jsz.Consumers
	}

	t0 := time.Now()
	ms = append(ms, start("r-joiner"))
	join := wait("the joiner's share", ms, t0)

	lo, hi := shards, 0
	for _, m := range ms[:n] {
		lo, hi = min(lo, m.HeldCount()), max(hi, m.HeldCount())
	}
	b.ReportMetric(settle.Seconds(), "s-settle")
	b.ReportMetric(join.Seconds(), "s-join")
	b.ReportMetric(in, "msgs-in/s")
	b.ReportMetric(out, "msgs-out/s")
	b.ReportMetric(float64(consumers), "consumers")
	b.ReportMetric(float64(hi)/max(float64(shards)/float64(n+1), 1), "x-max-share")
	b.ReportMetric(float64(lo), "min-shards")
}
