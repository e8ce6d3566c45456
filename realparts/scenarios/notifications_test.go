package scenarios

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/icereactor/reactor/streamwriter"
)

// scenarioThresholds are every scenario's thresholds: reactor acts within
// seconds instead of days. namespace confines it to the scenario's tables
// (the servers are shared; other scenarios' tables are in the catalog too).
// extra holds "key: value" lines for defaults, replacing the base ones.
func scenarioThresholds(namespace, extra string) string {
	base := []string{
		"target_file_size: 1MiB",
		"small_file_count: 5",
		"min_input_files: 5",
		"quiet_period: 500ms",
		"cooldown: 1s",
		"conflict_cooldown: 2s",
		"commit_retry_time: 30s",
	}
	var lines []string
	for line := range strings.Lines(extra) {
		if line = strings.TrimSpace(line); line != "" {
			lines = append(lines, line)
		}
	}
	for _, b := range base {
		key, _, _ := strings.Cut(b, ":")
		if !slices.ContainsFunc(lines, func(l string) bool { return strings.HasPrefix(l, key+":") }) {
			lines = append(lines, b)
		}
	}
	return fmt.Sprintf("namespaces: [%s]\ndefaults:\n  %s\n", namespace, strings.Join(lines, "\n  "))
}

// ids tracks which row ids went to which partition: streamwriter numbers
// rows in commit order, so a test that commits sequentially knows them.
type ids struct {
	next  int64
	byCat map[string][]int64
}

func newIDs() *ids { return &ids{next: 1, byCat: map[string][]int64{}} }

func (x *ids) commit(t *testing.T, w *streamwriter.Writer, category string, rows int) {
	t.Helper()
	if _, err := w.Commit(context.Background(), category, rows); err != nil {
		t.Fatal(err)
	}
	for range rows {
		x.byCat[category] = append(x.byCat[category], x.next)
		x.next++
	}
}

func (x *ids) skip(rows int) { x.next += int64(rows) }

// Scenario 1. Tables on s3:// in MinIO through the REST catalog, and a
// writer that publishes no commit events: reactor learns everything from
// MinIO's own notifications. It compacts, merges position deletes and
// expires snapshots; the orphans an aborted write and a stray upload left
// are found from their notifications and deleted once past the (short)
// margin, and no file the table needs is.
func TestNotificationsOnly(t *testing.T) {
	s := need(t)
	ctx := context.Background()
	s.resetStreams(t)
	l := s.openLake(t, "s1", "events")
	l.createTable(streamwriter.MergeOnReadProperties)
	jobs := s.watchJobs(t, l.name)
	r := s.newReactor(t, scenarioThresholds("s1", `  delete_min_input_files: 4
  snapshot_max_age: 20s
  min_reader_margin: 2s
  retain_last: 2
  orphan_margin: 5s
  orphan_margin_floor: 5s
  orphan_delete: true
`))
	r.start()
	diag := func() string { return jobs.summary() + r.p.tail(40) }

	w := streamwriter.New(l.cat, l.ident, nil) // no commit events: the bucket is the only source
	rows := newIDs()
	// "a b" and "c+d" are "a+b" and "c%2Bd" in the paths, escaped again by
	// MinIO: the keys must round-trip for reactor to find the table.
	for range 6 {
		rows.commit(t, w, "a b", 20)
		rows.commit(t, w, "c+d", 20)
	}
	rows.commit(t, w, "e=f", 20)
	beforeCompaction := slices.Concat(l.appendedFiles("a b"), l.appendedFiles("c+d"))
	if len(beforeCompaction) != 12 {
		t.Fatalf("the writer's 12 commits to a b and c+d added %d data files", len(beforeCompaction))
	}

	eventually(t, "both partitions compacted from notifications", 3*time.Minute, func() bool {
		f := l.dataFiles()
		return len(f["a b"]) == 1 && len(f["c+d"]) == 1
	}, diag)
	l.checkRows(w.Written())

	// Merge-on-read deletes: one position-delete file per call.
	for i := range 5 {
		if _, err := w.DeleteRows(ctx, rows.byCat["a b"][i*7]); err != nil {
			t.Fatal(err)
		}
	}
	eventually(t, "the position deletes merged", 3*time.Minute, func() bool {
		return jobs.succeeded("rewrite_position_deletes") >= 1
	}, diag)
	l.checkRows(w.Written())

	// An aborted write (files written, never committed) and a stray upload
	// whose key has a literal space and plus.
	abandoned, err := w.Abandon(ctx, "a b", 20)
	if err != nil {
		t.Fatal(err)
	}
	rows.skip(20)
	bucket, prefix := l.location()
	strayKey := prefix + "data/category=a+b/upload copy+1.parquet"
	if _, err := s.s3.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String(strayKey),
		Body: strings.NewReader("half an upload")}); err != nil {
		t.Fatal(err)
	}
	orphans := append([]string{"s3://" + bucket + "/" + strayKey}, abandoned.DataFiles...)
	eventually(t, "the orphans deleted", 3*time.Minute, func() bool {
		for _, loc := range orphans {
			b, k, _ := splitS3(loc)
			if ok, err := s.objectExists(ctx, b, k); err != nil || ok {
				return false
			}
		}
		return true
	}, diag)
	// Only what notifications found: the abandoned manifests under
	// metadata/ are left to the full listing (orphan_listing_interval).
	for _, loc := range abandoned.Metadata {
		b, k, _ := splitS3(loc)
		if ok, err := s.objectExists(ctx, b, k); err != nil || !ok {
			t.Logf("abandoned metadata file %s: exists=%v err=%v", loc, ok, err)
		}
	}

	// Expiry: once the snapshots that referenced the pre-compaction files
	// are past snapshot_max_age they go, and their files with them.
	eventually(t, "the pre-compaction snapshots expired and their files deleted", 3*time.Minute, func() bool {
		refs := map[string]bool{}
		for _, loc := range l.referenced() {
			refs[loc] = true
		}
		for _, loc := range beforeCompaction {
			b, k, _ := splitS3(loc)
			if ok, err := s.objectExists(ctx, b, k); err != nil || ok || refs[loc] {
				return false
			}
		}
		return jobs.succeeded("expire_snapshots") >= 1
	}, diag)

	rows.commit(t, w, "e=f", 20) // the table still takes writes
	l.checkRows(w.Written())
	l.checkReferencedExist()
	if f := jobs.failures(); len(f) > 0 {
		t.Errorf("jobs failed:\n%s", jobs.summary())
	}
	if n := r.metric("reactor_events_total", map[string]string{"source": "commit"}); n != 0 {
		t.Errorf("reactor saw %v commit events; the writer published none", n)
	}
	if n := r.metric("reactor_objects_total", map[string]string{"outcome": "commit"}); n < 13 {
		t.Errorf("reactor applied %v metadata.json notifications, want at least the 13 commits", n)
	}
	t.Logf("jobs:\n%s", jobs.summary())
	r.stop()
}
