package worker

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/icereactor/reactor/embedded"
	"github.com/icereactor/reactor/events"
	"github.com/icereactor/reactor/executor"
	"github.com/icereactor/reactor/jobs"
	"github.com/icereactor/reactor/lease"
	"github.com/icereactor/reactor/metrics"
	"github.com/icereactor/reactor/streamwriter"
	"github.com/icereactor/reactor/thresholds"
	"github.com/icereactor/reactor/triggers"
)

// newS3Harness puts the table's warehouse on the shared embedded versitygw
// (s3://BUCKET/warehouse) and the reactor on the shared NATS server that
// receives the gateway's bucket notifications. The writer publishes NO
// commit events: whatever reactor learns, it learns from the bucket.
func newS3Harness(t *testing.T, cfgYAML string) *harness {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	bucket := strings.ToLower(strings.NewReplacer("/", "-", "_", "-").Replace(t.Name()))
	if len(bucket) > 40 {
		bucket = bucket[:40]
	}
	// The gateway outlives a test: a repeated run (-count) needs its own
	// bucket.
	var suffix [3]byte
	_, _ = rand.Read(suffix[:])
	bucket += "-" + hex.EncodeToString(suffix[:])
	if err := sharedGateway.CreateBucket(ctx, bucket); err != nil {
		t.Fatal(err)
	}
	h := &harness{t: t, ctx: ctx, dir: t.TempDir(), ident: table.Identifier{"db", "events"}, logs: &syncBuffer{},
		cfgYAML: cfgYAML, nats: sharedNATS, bucket: bucket}
	var err error
	if h.conn, err = nats.Connect(sharedNATS.URL()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(h.conn.Close)
	if h.js, err = jetstream.New(h.conn); err != nil {
		t.Fatal(err)
	}
	// Streams outlive a test on the shared server; start each test clean.
	for _, s := range []string{triggers.DefaultCommitStream, triggers.DefaultDeadLetterStream, triggers.DefaultNotificationStream,
		triggers.DefaultShardStream, "KV_" + lease.DefaultBucket} {
		_ = h.js.DeleteStream(ctx, s)
	}
	h.props, err = embedded.CatalogProperties(h.dir + "/catalog")
	if err != nil {
		t.Fatal(err)
	}
	h.props["warehouse"] = "s3://" + bucket + "/warehouse"
	for k, v := range sharedGateway.IcebergProperties() {
		h.props[k] = v
	}
	if err := os.MkdirAll(h.dir+"/catalog", 0o755); err != nil {
		t.Fatal(err)
	}
	if h.cat, err = catalog.Load(ctx, "reactor", h.props); err != nil {
		t.Fatal(err)
	}
	if _, err := streamwriter.CreateTable(ctx, h.cat, h.ident, nil); err != nil {
		t.Fatal(err)
	}
	h.writer = streamwriter.New(h.cat, h.ident, nil) // no commit events
	h.workerCfg = func(c *Config) {
		c.Notifications = triggers.NotificationOptions{Sources: []triggers.NotificationSource{
			{Subject: gatewaySubject, KeyEncoding: events.KeyEncodingRaw},
			{Subject: "minio.events", KeyEncoding: events.KeyEncodingURL},
		}}
	}
	return h
}

func (h *harness) logger() *slog.Logger {
	var out io.Writer = h.logs
	if testing.Verbose() {
		out = io.MultiWriter(h.logs, os.Stderr)
	}
	return slog.New(slog.NewTextHandler(out, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// A writer appends to an s3:// table and publishes no commit events;
// reactor learns of the commits from versitygw's bucket notifications
// alone (keys raw: the partition value "a b" is "a+b" in the path) and
// compacts the partition. Every data file it saw is confirmed by a snapshot.
func TestNotificationsAloneDriveCompactionOnS3(t *testing.T) {
	h := newS3Harness(t, testThresholds)
	w := h.start()

	for range 7 {
		h.commit("a b", 10)
	}
	h.commit("c", 10)
	h.eventually("compaction from notifications", func() bool { return w.Pool.Stats().Succeeded >= 1 })
	h.eventually("partition a b compacted", func() bool { return len(h.files()["a b"]) <= 5 })

	if got, want := h.contents().Total, h.writer.Written(); got != want {
		t.Errorf("table holds %v, writer wrote %v", got, want)
	}
	if n := len(h.files()["c"]); n != 1 {
		t.Errorf("partition c has %d files, want its 1", n)
	}
	// A metadata file's notification may come before the catalog shows its
	// commit: it is held and applied on a redelivery, so the count catches
	// up.
	var commits, tracked float64
	h.eventually("every commit and data file seen in notifications", func() bool {
		commits = testutil.ToFloat64(w.Metrics.Objects.WithLabelValues("commit"))
		tracked = testutil.ToFloat64(w.Metrics.Objects.WithLabelValues("tracked")) +
			testutil.ToFloat64(w.Metrics.Objects.WithLabelValues("confirmed"))
		return commits >= 8 && tracked >= 8
	})
	if n := testutil.ToFloat64(w.Metrics.Events.WithLabelValues("commit", metrics.OutcomeApplied)); n != 0 {
		t.Errorf("%v commit events applied; the writer published none", n)
	}
	// Every data file a snapshot references (the writer's and reactor's
	// own outputs) is confirmed: none is an orphan candidate, however late.
	// The one exception is real: a writer commit that lost a race with the
	// compaction writes its rows again on retry, so the data file of its
	// failed attempt is referenced by nothing, one per conflict.
	live := map[string]bool{}
	for _, files := range h.files() {
		for _, f := range files {
			live[f] = true
		}
	}
	var candidates []jobs.OrphanCandidate
	h.eventually("all tracked files confirmed", func() bool {
		c, complete, err := w.Planner.OrphanCandidates(h.ctx, "db.events", time.Now().Add(1000*time.Hour))
		_, conflicts := h.writer.Stats()
		candidates = c
		return err == nil && complete && len(c) <= conflicts
	})
	for _, c := range candidates {
		if live[c.Location] {
			t.Errorf("a live data file is an orphan candidate: %s", c.Location)
		}
	}
	if !strings.Contains(h.logs.String(), `partitions="[category=a b]"`) {
		t.Errorf("no job logged for category=a b")
	}
}

// A file written under data/ and never committed becomes an orphan
// candidate once it is older than the margin, and not before; committed
// files never do. A removal drops it.
func TestUncommittedFileBecomesOrphanCandidate(t *testing.T) {
	h := newS3Harness(t, testThresholds+"  orphan_margin: 1h\n  orphan_margin_floor: 1h\n")
	w := h.start()
	h.commit("a", 10)
	_, tableKey, _ := strings.Cut(strings.TrimPrefix(h.load().Location(), "s3://"), "/")
	key := tableKey + "/data/category=a/failed-write-00001.parquet"
	put(t, h, key, "not really parquet")
	h.eventually("the stray file is tracked", func() bool {
		return testutil.ToFloat64(w.Metrics.Objects.WithLabelValues("tracked")) >= 2 // the writer's file and the stray one
	})
	h.commit("a", 10) // later commits do not reference it

	now := time.Now()
	if c, _, err := w.Planner.OrphanCandidates(h.ctx, "db.events", now); err != nil || len(c) != 0 {
		t.Fatalf("candidates now (margin 1h) = %+v, %v; want none", c, err)
	}
	c, complete, err := w.Planner.OrphanCandidates(h.ctx, "db.events", now.Add(2*time.Hour))
	if err != nil || !complete || len(c) != 1 || c[0].Location != "s3://"+h.bucket+"/"+key || c[0].Size != 18 {
		t.Fatalf("candidates in 2h = %+v (complete %v, err %v), want exactly the stray file of 18 bytes", c, complete, err)
	}
	if _, err := sharedGateway.Client().DeleteObject(h.ctx, &s3.DeleteObjectInput{Bucket: aws.String(h.bucket), Key: aws.String(key)}); err != nil {
		t.Fatal(err)
	}
	h.eventually("the removal drops it", func() bool {
		c, _, err := w.Planner.OrphanCandidates(h.ctx, "db.events", now.Add(2*time.Hour))
		return err == nil && len(c) == 0
	})
}

// Bad notifications: truncated JSON, too many records and invalid URL
// encoding are dead-lettered; objects in buckets reactor does not know are
// counted and ignored; stale metadata files are harmless; later events work.
func TestBadNotificationsAreHandled(t *testing.T) {
	h := newS3Harness(t, testThresholds)
	w := h.start()
	h.commit("a", 10)
	tbl := h.load()
	oldMeta := tbl.MetadataLocation()

	record := func(bucket, key string) string {
		return fmt.Sprintf(`{"eventName":"s3:ObjectCreated:Put","eventTime":"2026-11-29T12:00:00Z","s3":{"bucket":{"name":%q},"object":{"key":%q,"size":5}}}`, bucket, key)
	}
	var many bytes.Buffer
	many.WriteString(`{"Records":[`)
	for i := range events.MaxRecords + 1 {
		if i > 0 {
			many.WriteByte(',')
		}
		many.WriteString(`{"eventName":"s3:ObjectCreated:Put","s3":{"bucket":{"name":"n"},"object":{"key":"k"}}}`)
	}
	many.WriteString(`]}`)
	bad := []string{
		`{"Records":[{"eventName":"s3:ObjectCreated:Put","s3":{"bucket":{"name":"b"},"obj`,
		many.String(),
		`{"EventName":"s3:ObjectCreated:Put","Key":"x","Records":[` + record(h.bucket, "warehouse/db.db/events/data/%zz.parquet") + `]}`,
	}
	for _, b := range bad {
		h.publishRaw("minio.events", b)
	}
	// Unknown bucket, and an old metadata file of our table arriving late.
	h.publishRaw("minio.events", `{"Records":[`+record("somebody-elses-bucket", "x/y.parquet")+`]}`)
	_, oldKey, _ := strings.Cut(strings.TrimPrefix(oldMeta, "s3://"), "/")
	h.publishRaw("minio.events", `{"Records":[`+record(h.bucket, strings.ReplaceAll(oldKey, "=", "%3D"))+`]}`)

	for range 6 {
		h.commit("a", 10)
	}
	h.eventually("compaction after the bad notifications", func() bool { return w.Pool.Stats().Succeeded >= 1 })
	h.eventually("three dead letters", func() bool { return len(h.deadLetters()) >= 3 })
	dls := h.deadLetters()
	if len(dls) != 3 {
		t.Fatalf("%d dead letters, want 3", len(dls))
	}
	for i, want := range []string{"invalid JSON", "more than the 1000", "%zz"} {
		if dls[i].Reason != events.ReasonMalformed || !strings.Contains(dls[i].Error, want) {
			t.Errorf("dead letter %d = %q / %q, want malformed mentioning %q", i, dls[i].Reason, dls[i].Error, want)
		}
	}
	// Published after the three bad ones, so it may still be on its way.
	h.eventually("the unknown bucket's object counted as outside every table", func() bool {
		return testutil.ToFloat64(w.Metrics.Objects.WithLabelValues("outside")) >= 1
	})
	if got, want := h.contents().Total, h.writer.Written(); got != want {
		t.Errorf("table holds %v, writer wrote %v", got, want)
	}
}

func put(t *testing.T, h *harness, key, body string) {
	t.Helper()
	if _, err := sharedGateway.Client().PutObject(h.ctx, &s3.PutObjectInput{
		Bucket: aws.String(h.bucket), Key: aws.String(key), Body: strings.NewReader(body),
	}); err != nil {
		t.Fatal(err)
	}
}

var _ = thresholds.Default

// A ~0.9 MB notification (10,001 records) is malformed (over
// events.MaxPayloadBytes) and its dead letter, sized to the server's max
// payload, carries it whole.
func TestDeadLetterOfHugeMessageKeepsItWhole(t *testing.T) {
	h := newS3Harness(t, testThresholds)
	h.start()
	var many bytes.Buffer
	many.WriteString(`{"Records":[`)
	for i := range 10_001 {
		if i > 0 {
			many.WriteByte(',')
		}
		many.WriteString(`{"eventName":"s3:ObjectCreated:Put","s3":{"bucket":{"name":"n"},"object":{"key":"k\"\"\"\""}}}`)
	}
	many.WriteString(`]}`)
	h.publishRaw("minio.events", many.String())
	h.eventually("the dead letter is stored", func() bool { return len(h.deadLetters()) == 1 })
	dl := h.deadLetters()[0]
	if dl.PayloadTruncated || dl.PayloadBytes != many.Len() || !bytes.Equal(dl.Payload, many.Bytes()) {
		t.Errorf("dead letter: truncated=%v bytes=%d (want %d) kept=%d", dl.PayloadTruncated, dl.PayloadBytes, many.Len(), len(dl.Payload))
	}
}

// A commit announced twice, by its commit event and by the notification of
// its metadata file, is applied once: the planner's counters match the
// table exactly.
func TestCommitEventAndNotificationApplyOnce(t *testing.T) {
	h := newS3Harness(t, strings.Replace(testThresholds, "small_file_count: 5", "small_file_count: 1000", 1))
	h.writer = streamwriter.New(h.cat, h.ident, h.publish) // commit events as well
	w := h.start()
	for range 6 {
		h.commit("a", 10)
	}
	h.commit("b", 10)
	h.eventually("both channels applied", func() bool {
		return testutil.ToFloat64(w.Metrics.Events.WithLabelValues("commit", metrics.OutcomeApplied)) >= 7 &&
			testutil.ToFloat64(w.Metrics.Objects.WithLabelValues("commit")) >= 7
	})
	snap, parts := w.Planner.TableCounters("db.events")
	if snap != h.load().CurrentSnapshot().SnapshotID {
		t.Fatalf("planner at snapshot %d, table at %d", snap, h.load().CurrentSnapshot().SnapshotID)
	}
	files := h.files()
	got := map[string]int{}
	var rows int64
	for _, p := range parts {
		got[p.Key] = p.DataFiles
		rows += p.Rows
	}
	if got["category=a"] != len(files["a"]) || got["category=b"] != len(files["b"]) || rows != h.writer.Written().Rows {
		t.Errorf("planner counts %v (rows %d); table has a=%d b=%d files, %d rows",
			got, rows, len(files["a"]), len(files["b"]), h.writer.Written().Rows)
	}
}

// Orphan cleanup from tracked files, end to end: a stray file past the
// margin triggers a remove_orphans job by itself (a deadline, not a poll);
// the table is in dry run by default, so the report is published with the
// path and size and the file stays.
func TestTrackedOrphanDryRunIsPublished(t *testing.T) {
	h := newS3Harness(t, testThresholds+"  orphan_margin: 1s\n  orphan_margin_floor: 1s\n")
	reports, err := h.conn.SubscribeSync("reactor.orphans.db.events")
	if err != nil {
		t.Fatal(err)
	}
	w := h.start()
	h.commit("a", 10)
	_, tableKey, _ := strings.Cut(strings.TrimPrefix(h.load().Location(), "s3://"), "/")
	key := tableKey + "/data/category=a/failed-write-00002.parquet"
	put(t, h, key, "not really parquet")

	var rep executor.OrphanReport
	for len(rep.Orphans) == 0 {
		msg, err := reports.NextMsg(time.Minute)
		if err != nil {
			t.Fatalf("no orphan report: %v\nlogs:\n%s", err, h.logs.String())
		}
		if err := json.Unmarshal(msg.Data, &rep); err != nil {
			t.Fatal(err)
		}
	}
	if !rep.DryRun || rep.DeletedFiles != 0 || len(rep.Orphans) != 1 ||
		rep.Orphans[0].Location != "s3://"+h.bucket+"/"+key || rep.Orphans[0].Size != 18 {
		t.Fatalf("report %+v, want a dry run naming exactly the stray file", rep)
	}
	if got := testutil.ToFloat64(w.Metrics.OrphanCandidates.WithLabelValues("db.events")); got != 1 {
		t.Errorf("reactor_table_orphan_candidates = %v, want 1", got)
	}
	if _, err := sharedGateway.Client().HeadObject(h.ctx, &s3.HeadObjectInput{Bucket: aws.String(h.bucket), Key: aws.String(key)}); err != nil {
		t.Errorf("a dry run deleted the file: %v", err)
	}
}
