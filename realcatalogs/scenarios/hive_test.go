package scenarios

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/icereactor/reactor/catalogs"
	"github.com/icereactor/reactor/conflict"
	"github.com/icereactor/reactor/streamwriter"
)

// openHive opens the real Metastore at addr through package catalogs, as
// reactor does.
func (s *suite) openHive(t *testing.T, addr string) *catalogs.Catalog {
	t.Helper()
	cat, err := catalogs.Open(context.Background(), catalogs.Config{Name: "hms", Logger: slog.New(slog.DiscardHandler),
		Props: iceberg.Properties{"type": "hive", "uri": "thrift://" + addr,
			"warehouse": "file://" + filepath.Join(s.work, "warehouse-hms")}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cat.Close() })
	return cat
}

// guard runs f and fails the test if it has not returned after limit.
func guard[T any](t *testing.T, limit time.Duration, what string, f func() (T, error)) (T, error) {
	t.Helper()
	type result struct {
		v   T
		err error
	}
	done := make(chan result, 1)
	go func() {
		v, err := f()
		done <- result{v, err}
	}()
	select {
	case r := <-done:
		return r.v, r.err
	case <-time.After(limit):
		t.Fatalf("%s hung: no answer after %s", what, limit)
	}
	var zero T
	return zero, errors.New("unreachable")
}

func setProperty(ctx context.Context, tbl *table.Table, k, v string) (*table.Table, error) {
	txn := tbl.NewTransaction()
	if err := txn.SetProperties(iceberg.Properties{k: v}); err != nil {
		return nil, err
	}
	return txn.Commit(ctx)
}

// TestHiveConcurrency: 16 goroutines share one catalog of reactor's on the
// real Hive Metastore for 60 s, each loading a shared table, committing to
// a table of its own, checking the namespace and now and then listing it:
// no error, no call hung (each is guarded), and every commit landed.
func TestHiveConcurrency(t *testing.T) {
	s := need(t)
	t.Parallel()
	ctx := context.Background()
	cat := s.openHive(t, s.hmsAddr)
	ns := table.Identifier{"conc"}
	if err := cat.CreateNamespace(ctx, ns, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := streamwriter.CreateTable(ctx, cat, table.Identifier{"conc", "shared"}, nil); err != nil {
		t.Fatal(err)
	}
	const workers = 16
	stop := time.Now().Add(60 * time.Second)
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	commits := make([]int, workers)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs <- func() error {
				own := table.Identifier{"conc", fmt.Sprintf("t%02d", w)}
				tbl, err := guard(t, 2*time.Minute, "create", func() (*table.Table, error) {
					return streamwriter.CreateTable(ctx, cat, own, nil)
				})
				if err != nil {
					return fmt.Errorf("create %v: %w", own, err)
				}
				for i := 0; time.Now().Before(stop); i++ {
					if _, err := guard(t, 2*time.Minute, "load", func() (*table.Table, error) {
						return cat.LoadTable(ctx, table.Identifier{"conc", "shared"})
					}); err != nil {
						return fmt.Errorf("load: %w", err)
					}
					if tbl, err = guard(t, 2*time.Minute, "commit", func() (*table.Table, error) {
						return setProperty(ctx, tbl, "n", fmt.Sprint(i))
					}); err != nil {
						return fmt.Errorf("commit %d to %v: %w", i, own, err)
					}
					commits[w]++
					if _, err := guard(t, 2*time.Minute, "check namespace", func() (bool, error) {
						return cat.CheckNamespaceExists(ctx, ns)
					}); err != nil {
						return fmt.Errorf("check namespace: %w", err)
					}
					if i%10 == 9 {
						if _, err := guard(t, 2*time.Minute, "list", func() (int, error) {
							n := 0
							for _, err := range cat.ListTables(ctx, ns) {
								if err != nil {
									return n, err
								}
								n++
							}
							return n, nil
						}); err != nil {
							return fmt.Errorf("list: %w", err)
						}
					}
				}
				got, err := cat.LoadTable(ctx, own)
				if err != nil {
					return err
				}
				if n := got.Properties()["n"]; n != fmt.Sprint(commits[w]-1) {
					return fmt.Errorf("%v: property n = %q after %d commits", own, n, commits[w])
				}
				return nil
			}()
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
	total := 0
	for _, c := range commits {
		total += c
	}
	t.Logf("16 goroutines, 60 s: %d commits (%.1f/s), each with a load and a namespace check", total, float64(total)/60)
}

// TestHiveConnectionCut: the connections to the real Metastore are cut in
// the middle of a call. A read is made again on a new connection and
// answers; a commit fails with an outcome that is not a conflict, and the
// next call and commit work on new connections.
func TestHiveConnectionCut(t *testing.T) {
	s := need(t)
	t.Parallel()
	ctx := context.Background()
	proxy := startThriftProxy(t, s.hmsAddr)
	cat := s.openHive(t, proxy.addr())
	if err := cat.CreateNamespace(ctx, table.Identifier{"cut"}, nil); err != nil {
		t.Fatal(err)
	}
	ident := table.Identifier{"cut", "t"}
	tbl, err := streamwriter.CreateTable(ctx, cat, ident, nil)
	if err != nil {
		t.Fatal(err)
	}

	held := proxy.holdNext("get_table")
	loaded := make(chan error, 1)
	go func() { _, err := cat.LoadTable(ctx, ident); loaded <- err }()
	select {
	case <-held:
	case <-time.After(time.Minute):
		t.Fatal("the load never reached the proxy")
	}
	proxy.cut()
	select {
	case err := <-loaded:
		if err != nil {
			t.Fatalf("a load cut mid-call: %v, want it made again on a new connection", err)
		}
	case <-time.After(2 * time.Minute):
		t.Fatal("the load cut mid-call never returned")
	}

	held = proxy.holdNext("alter_table")
	committed := make(chan error, 1)
	go func() { _, err := setProperty(ctx, tbl, "k", "cut"); committed <- err }()
	select {
	case <-held:
	case <-time.After(time.Minute):
		t.Fatal("the commit never reached alter_table")
	}
	proxy.cut()
	select {
	case err := <-committed:
		if err == nil || conflict.Is(err) {
			t.Fatalf("a commit cut mid-call: err = %v, want a failure that is not a conflict", err)
		}
		t.Logf("the cut commit: %v", err)
	case <-time.After(2 * time.Minute):
		t.Fatal("the commit cut mid-call never returned")
	}
	tbl, err = guard(t, 2*time.Minute, "load after the cut", func() (*table.Table, error) { return cat.LoadTable(ctx, ident) })
	if err != nil {
		t.Fatalf("the next load after the cut: %v", err)
	}
	if _, err := guard(t, 2*time.Minute, "commit after the cut", func() (*table.Table, error) { return setProperty(ctx, tbl, "k", "after") }); err != nil {
		t.Fatalf("a commit after the cut: %v", err)
	}
}

// TestHiveLockOfAKilledReactor: reactor is SIGKILLed while it holds the
// table's Metastore lock (its compaction's alter_table held back by a
// proxy, so the kill lands between lock and alter). The Spark writer's
// commits wait for the lock, go on once the Metastore times it out (20 s
// here), and the table is exact.
func TestHiveLockOfAKilledReactor(t *testing.T) {
	s := needSpark(t)
	t.Parallel()
	table := "locked"
	if _, err := s.spark.call(map[string]any{"cmd": "create", "catalog": "hms", "table": "db." + table}, 5*time.Minute); err != nil {
		t.Fatal(err)
	}
	proxy := startThriftProxy(t, s.hmsAddr)
	held := proxy.holdNext("alter_table")
	flags := []string{"--catalog-uri", "thrift://" + proxy.addr(), "--warehouse", "file://" + filepath.Join(s.work, "warehouse-hms")}
	r := s.startReactor(t, "hms-killed", "hms", flags, true)

	type stamped struct {
		at time.Time
		ev map[string]any
	}
	events := s.spark.subscribe("hms", "db."+table)
	if _, err := s.spark.call(map[string]any{"cmd": "write", "catalog": "hms", "table": "db." + table, "rate": writerRate,
		"seconds": 90, "rows": writerRows, "first_batch": 0}, time.Minute); err != nil {
		t.Fatal(err)
	}
	var got []stamped
	var killedAt time.Time
	res := writerResult{expected: map[string][2]int64{}, notCommitted: map[string]bool{}}
	ctx := context.Background()
	deadline := time.After(15 * time.Minute)
loop:
	for {
		select {
		case <-held:
			held = nil
			// reactor holds the table's lock and waits for alter_table.
			r.proc.kill()
			proxy.cut()
			killedAt = time.Now()
			t.Logf("reactor killed holding the lock of hms.db.%s", table)
		case ev := <-events:
			got = append(got, stamped{time.Now(), ev})
			switch ev["event"] {
			case "commit":
				batch := fmt.Sprint(int(ev["batch"].(float64)))
				if ok, _ := ev["ok"].(bool); !ok {
					res.failed++
					res.notCommitted[batch] = true
					res.firstErrors = append(res.firstErrors, fmt.Sprint(ev["error"]))
					continue
				}
				res.ok++
				res.expected[batch] = [2]int64{int64(ev["rows"].(float64)), int64(ev["checksum"].(float64))}
				if id, ok := ev["snapshot_id"].(float64); ok && killedAt.IsZero() {
					_ = r.publish(ctx, "db", table, int64(id))
				}
			case "writer_done":
				break loop
			}
		case <-deadline:
			t.Fatal("the writer did not finish")
		}
	}
	if killedAt.IsZero() {
		t.Fatalf("reactor never reached alter_table within the writer's 90 s (no compaction committed?)\n%s", r.proc.tail(40))
	}
	after, longest := 0, 0.0
	for _, g := range got {
		if g.ev["event"] == "commit" && g.at.After(killedAt) {
			if ok, _ := g.ev["ok"].(bool); ok {
				after++
				longest = max(longest, g.ev["ms"].(float64))
			}
		}
	}
	t.Logf("after the kill: %d writer commits, the longest %.1f s (waiting for the dead reactor's lock to time out); %d failed: %s",
		after, longest/1000, res.failed, strings.Join(res.firstErrors, " | "))
	if after == 0 {
		t.Errorf("no writer commit after reactor was killed holding the lock")
	}
	if res.failed > 0 {
		t.Errorf("%d writer commits failed", res.failed)
	}
	s.verifyTable(t, "hms", table, res)
}
