package scenarios

import (
	"context"
	"fmt"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The Spark writer of the scenarios: one append of writerRows rows (over
// the table's 8 partitions) a commit, writerRate commits a second, for
// writerSeconds.
const (
	writerRate    = 5.0
	writerSeconds = 120
	writerRows    = 20
)

// reactorFlags are reactor's catalog flags for the Spark catalog name: the
// same server, warehouse and (for JDBC) account.
func (s *suite) reactorFlags(name string) []string {
	wh := "file://" + filepath.Join(s.work, "warehouse-"+name)
	switch name {
	case "hms":
		return []string{"--catalog-uri", "thrift://" + s.hmsAddr, "--warehouse", wh}
	case "pg":
		return []string{"--catalog-uri", "jdbc:postgresql://" + s.pgAddr + "/" + dbName, "--warehouse", wh,
			"--catalog-prop", "jdbc.user=" + dbUser, "--catalog-prop", "jdbc.password=" + dbPassword}
	case "maria":
		return []string{"--catalog-uri", "jdbc:mariadb://" + s.mariaAddr + "/" + dbName, "--warehouse", wh,
			"--catalog-prop", "jdbc.user=" + dbUser, "--catalog-prop", "jdbc.password=" + dbPassword}
	case "hadoop":
		return []string{"--catalog-type", "hadoop", "--warehouse", wh}
	}
	panic("no catalog " + name)
}

// writerResult is what one writer did, as it reported each commit.
type writerResult struct {
	ok, failed   int
	expected     map[string][2]int64 // batch -> rows, checksum of the committed batches
	notCommitted map[string]bool     // batches whose commit failed
	latencies    []float64           // ms per commit
	firstErrors  []string
	elapsed      float64
	published    int
}

// runSparkWriter has Spark append to catalog.table at the writer's rate for
// seconds, publishing each commit's event to r, and returns what it did.
func (s *suite) runSparkWriter(t *testing.T, r *reactorRun, catalog, table string, seconds float64, firstBatch int) writerResult {
	t.Helper()
	events := s.spark.subscribe(catalog, "db."+table)
	if _, err := s.spark.call(map[string]any{"cmd": "write", "catalog": catalog, "table": "db." + table, "rate": writerRate,
		"seconds": seconds, "rows": writerRows, "first_batch": firstBatch}, time.Minute); err != nil {
		t.Fatal(err)
	}
	res := writerResult{expected: map[string][2]int64{}, notCommitted: map[string]bool{}}
	ctx := context.Background()
	deadline := time.After(time.Duration(seconds)*time.Second + 10*time.Minute)
	for {
		select {
		case ev := <-events:
			switch ev["event"] {
			case "commit":
				batch := strconv.Itoa(int(ev["batch"].(float64)))
				if ok, _ := ev["ok"].(bool); !ok {
					res.failed++
					res.notCommitted[batch] = true
					if len(res.firstErrors) < 3 {
						res.firstErrors = append(res.firstErrors, fmt.Sprint(ev["error"]))
					}
					continue
				}
				res.ok++
				res.expected[batch] = [2]int64{int64(ev["rows"].(float64)), int64(ev["checksum"].(float64))}
				res.latencies = append(res.latencies, ev["ms"].(float64))
				if id, ok := ev["snapshot_id"].(float64); ok && r != nil {
					if err := r.publish(ctx, "db", table, int64(id)); err != nil {
						t.Errorf("publish the commit event of batch %s: %v", batch, err)
					} else {
						res.published++
					}
				}
			case "writer_done":
				res.elapsed = ev["seconds"].(float64)
				return res
			}
		case <-deadline:
			t.Fatalf("the Spark writer on %s.db.%s did not finish", catalog, table)
		}
	}
}

// verifyTable reads the table with Spark and checks every committed batch
// is there whole, exactly once (rows and checksum), and nothing else.
func (s *suite) verifyTable(t *testing.T, catalog, table string, res writerResult) (rows int64, files, snapshots int) {
	t.Helper()
	ans, err := s.spark.call(map[string]any{"cmd": "verify", "catalog": catalog, "table": "db." + table}, 5*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string][3]int64{}
	for b, v := range ans["batches"].(map[string]any) {
		a := v.([]any)
		got[b] = [3]int64{int64(a[0].(float64)), int64(a[1].(float64)), int64(a[2].(float64))}
	}
	var missing, wrong, extra, landed []string
	for b, want := range res.expected {
		g, ok := got[b]
		switch {
		case !ok:
			missing = append(missing, b)
		case g[0] != want[0] || g[1] != want[0] || g[2] != want[1]:
			wrong = append(wrong, fmt.Sprintf("%s: %d rows (%d ids), checksum %d; want %d, %d", b, g[0], g[1], g[2], want[0], want[1]))
		}
	}
	for b := range got {
		if _, ok := res.expected[b]; !ok {
			if res.notCommitted[b] {
				landed = append(landed, b)
			} else {
				extra = append(extra, b)
			}
		}
	}
	for _, l := range [][]string{missing, wrong, extra, landed} {
		sort.Strings(l)
	}
	if len(missing) > 0 {
		t.Errorf("%s.db.%s: %d committed batches missing (lost commits): %s", catalog, table, len(missing), strings.Join(missing, ", "))
	}
	if len(wrong) > 0 {
		t.Errorf("%s.db.%s: %d batches differ: %s", catalog, table, len(wrong), strings.Join(wrong, "; "))
	}
	if len(landed) > 0 {
		t.Errorf("%s.db.%s: %d batches reported as failed are in the table: %s", catalog, table, len(landed), strings.Join(landed, ", "))
	}
	if len(extra) > 0 {
		t.Errorf("%s.db.%s: batches nobody wrote: %s", catalog, table, strings.Join(extra, ", "))
	}
	return int64(ans["rows"].(float64)), int(ans["data_files"].(float64)), int(ans["snapshots"].(float64))
}

func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	c := append([]float64(nil), v...)
	sort.Float64s(c)
	return c[len(c)/2]
}

// TestSparkWriterBesideReactor: per real catalog, a Spark writer appends at
// 5 commits/s for 2 minutes while reactor run compacts and expires the
// table beside it. Spark's read afterwards has every committed batch whole
// and exactly once (rows and checksum), none of the failed ones, and
// nothing else; reactor compacted and expired, and no job failed. The four
// run at once (one Spark session, a reactor each), beside the suite's
// other scenarios.
func TestSparkWriterBesideReactor(t *testing.T) {
	s := needSpark(t)
	t.Parallel()
	for _, name := range []string{"hms", "pg", "maria", "hadoop"} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			table := "stream"
			if _, err := s.spark.call(map[string]any{"cmd": "create", "catalog": name, "table": "db." + table}, 5*time.Minute); err != nil {
				t.Fatal(err)
			}
			r := s.startReactor(t, name, name, s.reactorFlags(name), true)
			// The table was there before reactor: discovery brings it in,
			// which walks the namespaces (Hive's flat ones included).
			r.waitLog(t, discovered, time.Minute, "the table's discovery")
			res := s.runSparkWriter(t, r, name, table, writerSeconds, 0)
			t.Logf("%s: Spark committed %d batches (%d failed) in %.0fs: %.2f commits/s, commit p50 %.0f ms; %d events published",
				name, res.ok, res.failed, res.elapsed, float64(res.ok)/res.elapsed, median(res.latencies), res.published)
			if res.failed > 0 {
				t.Logf("%s: the writer's first failures: %s", name, strings.Join(res.firstErrors, " | "))
			}
			// Jobs started on the last commits finish (or give up) first.
			time.Sleep(5 * time.Second)
			rows, files, snapshots := s.verifyTable(t, name, table, res)
			compacted, expired := r.jobs(t, "compact", "succeeded"), r.jobs(t, "expire_snapshots", "succeeded")
			failed := r.jobs(t, "", "failed")
			t.Logf("%s: %d rows in %d data files, %d snapshots; reactor: %.0f compactions, %.0f expiries, %.0f jobs gave up, %.0f failed, %.0f commit conflicts",
				name, rows, files, snapshots, compacted, expired, r.jobs(t, "", "gave_up"), failed,
				r.metric(t, "reactor_commit_conflicts_total", nil))
			if failed != 0 {
				t.Errorf("%s: %.0f reactor jobs failed\n%s", name, failed, r.proc.tail(40))
			}
			if compacted < 1 || expired < 1 {
				t.Errorf("%s: reactor compacted %.0f times and expired %.0f times, want both at least once\n%s", name, compacted, expired, r.proc.tail(40))
			}
			if res.ok == 0 {
				t.Fatalf("%s: the writer committed nothing: %s", name, strings.Join(res.firstErrors, " | "))
			}
			r.stop(t)
		})
	}
}
