package worker

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apache/iceberg-go/table"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/icereactor/reactor/events"
	"github.com/icereactor/reactor/executor"
	"github.com/icereactor/reactor/jobkind"
	"github.com/icereactor/reactor/jobs"
	"github.com/icereactor/reactor/planner"
	"github.com/icereactor/reactor/streamwriter"
	"github.com/icereactor/reactor/tablename"
	"github.com/icereactor/reactor/thresholds"
	"github.com/icereactor/reactor/triggers"
)

// orphanThresholds: orphan deletion on with a 1h margin; nothing else is
// scheduled (no compaction, expiry or manifest rewrite changes the files).
const orphanThresholds = `
defaults:
  small_file_count: 1000
  quiet_period: 0s
  cooldown: 200ms
  orphan_margin: 1h
  orphan_margin_floor: 1h
  orphan_delete: true
`

// Property: against a table on the embedded S3 gateway (which, like MinIO,
// stores keys as files, so "a//b" and "a/./b" are "a/b"), forged bucket
// notifications naming live files in every spelling we can think of —
// doubled, leading and trailing slashes, "." and ".." segments (plain and
// percent-encoded), percent escapes, case, '+' for a space, backslashes,
// Unicode decomposition, trailing dots — with every kind of eventTime (old,
// far past, future, zero, missing, garbage), published as MinIO (URL keys)
// and as versitygw (raw keys) with orphan_delete on, delete not one live
// file; nor do remove_orphans jobs naming them directly, with the s3a, s3n
// and upper-case scheme aliases on top. Every referenced file still exists
// and the table reads back the same rows and checksum. A genuine old
// orphan, nominated the same way, is deleted (so the test can fail).
func TestForgedNotificationsNeverDeleteLiveFiles(t *testing.T) {
	h := newS3Harness(t, orphanThresholds)
	// Case variants of the table's path lie under the warehouse and no
	// table claims them: they are held, for a grace kept short here.
	sources := h.workerCfg
	h.workerCfg = func(c *Config) {
		sources(c)
		c.Notifications.NewTableGrace = 3 * time.Second
	}
	h.writer = streamwriter.AppendOnly(h.cat, h.ident, nil)
	w := h.start()
	for _, c := range []string{"a", "b c", "Ü", "it's", "a"} {
		h.commit(c, 10)
	}
	h.eventually("the writer's commits applied", func() bool {
		snap, _ := w.Planner.TableCounters("db.events")
		return snap == h.load().CurrentSnapshot().SnapshotID
	})
	tableKey := h.tableKey()
	orphanKey := tableKey + "/data/category=a/00000-0-genuine-orphan.parquet"
	put(t, h, orphanKey, "left by a failed write")
	h.eventually("the genuine orphan tracked", func() bool {
		return testutil.ToFloat64(w.Metrics.Objects.WithLabelValues(string(planner.ObjectTracked))) >= 6
	})
	ageBucket(t, h.bucket, 2*time.Hour) // every file is older than the margin by the store's clock
	live := h.liveKeys()
	before := h.contents().Total

	rng := rand.New(rand.NewPCG(12, 2026))
	published := 0
	// Every spelling once with a random eventTime and once with an old one,
	// so that every spelling tracking accepts is nominated.
	spellings := map[string][]string{}
	for _, key := range live {
		spellings[key] = spellingsOf(rng, key)
		for _, spelled := range spellings[key] {
			h.publishForged(rng, spelled, "")
			h.publishForged(rng, spelled, "2000-01-01T00:00:00Z")
			published += 2
		}
	}
	// The genuine orphan, nominated by a forged old eventTime: deleted
	// because the store says it is old and nothing references it.
	h.publishForged(rng, orphanKey, "2000-01-01T00:00:00Z")
	h.eventually("the genuine orphan deleted", func() bool { return !h.exists(orphanKey) })
	h.waitOrphanJobsSettled(w)

	h.checkLive(live, before)
	refused := testutil.ToFloat64(w.Metrics.OrphansRefused.WithLabelValues("db.events", executor.RefusedNotCanonical))
	if refused == 0 || !strings.Contains(h.logs.String(), "object key not in canonical form: not tracked") {
		t.Errorf("no refusal counted (%v) or logged for %d forged spellings", refused, published)
	}
	t.Logf("%d forged notifications for %d live files: %v refused as not canonical, %v confirmed, %v ignored, %v tracked",
		published, len(live), refused,
		testutil.ToFloat64(w.Metrics.Objects.WithLabelValues(string(planner.ObjectConfirmed))),
		testutil.ToFloat64(w.Metrics.Objects.WithLabelValues(string(planner.ObjectIgnored))),
		testutil.ToFloat64(w.Metrics.Objects.WithLabelValues(string(planner.ObjectTracked))))

	// The executor's own guard, without the planner's filters in front of
	// it: a job naming every spelling (and scheme alias) directly.
	second := tableKey + "/data/category=b+c/00000-0-second-orphan.parquet"
	put(t, h, second, "left by another failed write")
	ageBucket(t, h.bucket, 2*time.Hour)
	var cands []jobs.OrphanCandidate
	old := time.Now().Add(-1000 * time.Hour)
	for _, key := range live {
		for _, spelled := range spellings[key] {
			for _, scheme := range []string{"s3", []string{"s3a", "s3n", "S3", "S3A"}[rng.IntN(4)]} {
				cands = append(cands, jobs.OrphanCandidate{Location: scheme + "://" + h.bucket + "/" + spelled, Size: 1, Created: old})
			}
		}
		for _, scheme := range []string{"s3a", "s3n", "S3", "S3A"} {
			cands = append(cands, jobs.OrphanCandidate{Location: scheme + "://" + h.bucket + "/" + key, Created: old})
		}
	}
	cands = append(cands, jobs.OrphanCandidate{Location: "s3a://" + h.bucket + "/" + second})
	cfg, err := thresholds.Parse([]byte(orphanThresholds))
	if err != nil {
		t.Fatal(err)
	}
	exec, err := executor.New(executor.Options{Catalog: h.cat, Logger: h.logger(), Metrics: w.Metrics})
	if err != nil {
		t.Fatal(err)
	}
	res, rep := exec.Run(h.ctx, jobs.Job{ID: "forged", Kind: jobkind.RemoveOrphans, Table: tablename.Of(h.ident),
		Settings: cfg.For("db.events", h.load().Properties()), OrphanSource: jobs.OrphansFromTracking, OrphanCandidates: cands})
	if res.Outcome == jobs.Failed || rep.Orphans.DeletedFiles != 1 || h.exists(second) {
		t.Fatalf("direct job: %v %v, deleted %d (want only the second orphan; it exists: %v)",
			res.Outcome, res.Err, rep.Orphans.DeletedFiles, h.exists(second))
	}
	h.checkLive(live, before)
	if n := testutil.ToFloat64(w.Metrics.OrphansRefused.WithLabelValues("db.events", executor.RefusedNotCanonical)); n <= refused ||
		!strings.Contains(h.logs.String(), `msg="orphan candidate refused: not deleted" table=db.events job_id=forged`) ||
		!strings.Contains(h.logs.String(), "reason=not_canonical") {
		t.Errorf("the direct job's refusals are not counted (%v, %v before) or logged with their reason", n, refused)
	}
	t.Logf("direct job over %d candidates: %d still referenced, %d refused, 1 orphan deleted",
		len(cands), rep.Orphans.StillReferenced, rep.Orphans.RefusedFiles)
}

// An in-flight writer's file — written, not committed — notified with a
// forged eventTime a thousand hours old, survives: the job the forged time
// nominated it for stats the object, finds it younger than the 1h margin,
// keeps it and moves its tracking to the store's LastModified.
func TestInFlightFileSurvivesForgedOldEventTime(t *testing.T) {
	h := newS3Harness(t, orphanThresholds)
	sub, err := h.conn.SubscribeSync(events.JobSubject(events.DefaultJobSubjectPrefix, events.JobSucceeded, "db.events"))
	if err != nil {
		t.Fatal(err)
	}
	w := h.start()
	h.commit("a", 10)
	ageBucket(t, h.bucket, 2*time.Hour)
	key := h.tableKey() + "/data/category=a/00000-7-in-flight.parquet"
	put(t, h, key, "being written")
	h.eventually("the in-flight file tracked", func() bool {
		return testutil.ToFloat64(w.Metrics.Objects.WithLabelValues(string(planner.ObjectTracked))) >= 2
	})
	rng := rand.New(rand.NewPCG(7, 7))
	h.publishForged(rng, key, time.Now().Add(-1000*time.Hour).UTC().Format(time.RFC3339))

	deadline := time.Now().Add(2 * time.Minute)
	for {
		msg, err := sub.NextMsg(time.Until(deadline))
		if err != nil {
			t.Fatalf("no remove_orphans job judged the file: %v\nlogs:\n%s", err, h.logs.String())
		}
		var ev events.JobEvent
		if err := json.Unmarshal(msg.Data, &ev); err != nil {
			t.Fatal(err)
		}
		if ev.Kind == jobkind.RemoveOrphans.String() && ev.Counts["too_young_files_count"] == 1 {
			if ev.Counts["deleted_files_count"] != 0 {
				t.Fatalf("job event %+v", ev)
			}
			break
		}
	}
	if !h.exists(key) {
		t.Fatal("the in-flight file was deleted")
	}
	// Tracked from the store's clock now: a candidate in an hour, not before.
	now := time.Now()
	if c, _, err := w.Planner.OrphanCandidates(h.ctx, "db.events", now.Add(50*time.Minute)); err != nil || len(c) != 0 {
		t.Errorf("candidates in 50 min = %+v, %v; want none", c, err)
	}
	if c, _, err := w.Planner.OrphanCandidates(h.ctx, "db.events", now.Add(70*time.Minute)); err != nil || len(c) != 1 {
		t.Errorf("candidates in 70 min = %+v, %v; want the in-flight file", c, err)
	}
}

// A table created after reactor started, written to within a second of its
// creation (no commit events, bucket notifications only), has its first
// commits applied: nothing of it is dropped as "outside every watched
// table" while the location index catches up, the planner's state reaches
// its current snapshot, and its small files get compacted.
func TestNewTableFirstCommitsAreApplied(t *testing.T) {
	h := newS3Harness(t, testThresholds)
	w := h.start()
	h.commit("a", 10)
	h.eventually("the first table applied", func() bool {
		snap, _ := w.Planner.TableCounters("db.events")
		return snap == h.load().CurrentSnapshot().SnapshotID
	})

	fresh := table.Identifier{"db", "fresh"}
	if _, err := streamwriter.CreateTable(h.ctx, h.cat, fresh, nil); err != nil {
		t.Fatal(err)
	}
	writer := streamwriter.New(h.cat, fresh, nil)
	for range 6 {
		if _, err := writer.Commit(h.ctx, "x", 10); err != nil {
			t.Fatal(err)
		}
	}
	tbl := func() *table.Table {
		tb, err := h.cat.LoadTable(h.ctx, fresh)
		if err != nil {
			t.Fatal(err)
		}
		return tb
	}
	written := tbl().CurrentSnapshot().SnapshotID
	h.eventually("the new table's commits applied", func() bool {
		snap, _ := w.Planner.TableCounters("db.fresh")
		return snap == written || snap == tbl().CurrentSnapshot().SnapshotID
	})
	h.eventually("the new table compacted", func() bool {
		tasks, err := tbl().Scan().PlanFiles(h.ctx)
		return err == nil && len(tasks) < 6
	})
	c, err := streamwriter.Read(h.ctx, tbl())
	if err != nil {
		t.Fatal(err)
	}
	if c.Total != writer.Written() {
		t.Errorf("new table holds %v, its writer wrote %v", c.Total, writer.Written())
	}
	for line := range strings.SplitSeq(h.logs.String(), "\n") {
		if (strings.Contains(line, "outside every watched table") || strings.Contains(line, "dropped")) && strings.Contains(line, "/fresh/") {
			t.Errorf("an object of the new table was dropped: %s", line)
		}
	}
	t.Logf("objects held while the index caught up: %v", testutil.ToFloat64(w.Metrics.Objects.WithLabelValues(string(planner.ObjectHeld))))
}

// tableKey is the table's location as a key in its bucket.
func (h *harness) tableKey() string {
	_, key, _ := strings.Cut(strings.TrimPrefix(h.load().Location(), "s3://"), "/")
	return key
}

// liveKeys lists the bucket keys of every file the table's metadata,
// snapshots and manifests reference.
func (h *harness) liveKeys() []string {
	h.t.Helper()
	tbl := h.load()
	fs, err := tbl.FS(h.ctx)
	if err != nil {
		h.t.Fatal(err)
	}
	locs := []string{tbl.MetadataLocation()}
	for entry := range tbl.Metadata().PreviousFiles() {
		locs = append(locs, entry.MetadataFile)
	}
	for _, snap := range tbl.Metadata().Snapshots() {
		locs = append(locs, snap.ManifestList)
		ms, err := snap.Manifests(fs)
		if err != nil {
			h.t.Fatal(err)
		}
		for _, m := range ms {
			locs = append(locs, m.FilePath())
			for e, err := range m.Entries(fs, true) {
				if err != nil {
					h.t.Fatal(err)
				}
				locs = append(locs, e.DataFile().FilePath())
			}
		}
	}
	var keys []string
	seen := map[string]bool{}
	for _, l := range locs {
		if k := strings.TrimPrefix(l, "s3://"+h.bucket+"/"); !seen[k] {
			seen[k] = true
			keys = append(keys, k)
		}
	}
	return keys
}

// checkLive fails unless every key exists and the table reads back rows.
func (h *harness) checkLive(keys []string, rows streamwriter.Tally) {
	h.t.Helper()
	for _, k := range keys {
		if !h.exists(k) {
			h.t.Errorf("live file %s was deleted", k)
		}
	}
	if got := h.contents().Total; got != rows {
		h.t.Errorf("table reads %v, %v before", got, rows)
	}
}

func (h *harness) exists(key string) bool {
	_, err := sharedGateway.Client().HeadObject(h.ctx, &s3.HeadObjectInput{Bucket: aws.String(h.bucket), Key: aws.String(key)})
	return err == nil
}

// publishForged publishes an ObjectCreated notification for key with
// eventTime (random from old, future, zero, missing and garbage when
// empty), as versitygw (raw key) or as MinIO (URL-encoded key, envelope).
func (h *harness) publishForged(rng *rand.Rand, key, eventTime string) {
	h.t.Helper()
	if eventTime == "" {
		eventTime = []string{"", "2000-01-01T00:00:00Z", "0001-01-01T00:00:00Z", "1970-01-01T00:00:00Z",
			time.Now().Add(-2 * time.Hour).UTC().Format(time.RFC3339Nano), time.Now().Add(1000 * time.Hour).UTC().Format(time.RFC3339),
			time.Now().UTC().Format(time.RFC3339), "yesterday", "2026-13-45T99:99:99Z"}[rng.IntN(9)]
	}
	name := []string{"s3:ObjectCreated:Put", "s3:ObjectCreated:CompleteMultipartUpload", "ObjectCreated:Copy"}[rng.IntN(3)]
	subject, wireKey := gatewaySubject, key
	if rng.IntN(2) == 0 {
		subject, wireKey = "minio.events", url.QueryEscape(key)
	}
	rec := map[string]any{"eventName": name, "s3": map[string]any{
		"bucket": map[string]any{"name": h.bucket}, "object": map[string]any{"key": wireKey, "size": 26}}}
	if eventTime != "" {
		rec["eventTime"] = eventTime
	}
	msg := map[string]any{"Records": []any{rec}}
	if subject == "minio.events" {
		msg["EventName"], msg["Key"] = name, h.bucket+"/"+key
	}
	data, err := json.Marshal(msg)
	if err != nil {
		h.t.Fatal(err)
	}
	h.publishRaw(subject, string(data))
}

// waitOrphanJobsSettled waits until every notification was handled, every
// remove_orphans job scheduled has finished, and no tracked file is still
// waiting to be judged.
func (h *harness) waitOrphanJobsSettled(w *Worker) {
	h.t.Helper()
	kind := jobkind.RemoveOrphans.String()
	h.eventually("notifications handled and orphan jobs settled", func() bool {
		stream, err := h.js.Stream(h.ctx, triggers.DefaultNotificationStream)
		if err != nil {
			return false
		}
		info, err := stream.Info(h.ctx)
		if err != nil || info.State.Msgs != 0 {
			return false
		}
		var finished float64
		for _, o := range []string{"succeeded", "noop", "gave_up", "failed"} {
			finished += testutil.ToFloat64(w.Metrics.Jobs.WithLabelValues(kind, o))
		}
		if finished != testutil.ToFloat64(w.Metrics.JobsScheduled.WithLabelValues(kind)) {
			return false
		}
		c, _, err := w.Planner.OrphanCandidates(h.ctx, "db.events", time.Now())
		return err == nil && len(c) == 0
	})
	if n := w.Pool.Stats().Failed; n != 0 {
		h.t.Errorf("%d jobs failed", n)
	}
}

// ageBucket makes every object in bucket look modified age ago, by the
// gateway's clock (the posix backend reports file times as LastModified).
func ageBucket(t *testing.T, bucket string, age time.Duration) {
	t.Helper()
	at := time.Now().Add(-age)
	err := filepath.Walk(filepath.Join(sharedGatewayRoot, bucket), func(p string, info os.FileInfo, err error) error {
		if err != nil || info.IsDir() {
			return err
		}
		return os.Chtimes(p, at, at)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// slashForms replace one slash of a key by another spelling of it.
var slashForms = []string{"//", "/./", "/zz/../", "/%2E/", "/zz/%2e%2e/", "%2F", `\`, "/./zz/%2E%2E/"}

// spellingsOf returns other spellings of key, each one some object store or
// IO resolves to the same object: every slash form at every slash, every
// other transformation once, and random compositions of two or three.
// Data files (what tracking can nominate) get them all; other keys only
// the random compositions.
func spellingsOf(rng *rand.Rand, key string) []string {
	var out []string
	if strings.Contains(key, "/data/") {
		for i := range len(key) {
			if key[i] != '/' {
				continue
			}
			for _, f := range slashForms {
				out = append(out, key[:i]+f+key[i+1:])
			}
		}
		for _, t := range otherSpellings(rng) {
			out = append(out, t(key))
		}
	}
	for range 4 {
		k := key
		for range 2 + rng.IntN(2) {
			k = spell(rng, k)
		}
		out = append(out, k)
	}
	return slices.DeleteFunc(out, func(k string) bool { return k == key })
}

// spell applies one random transformation.
func spell(rng *rand.Rand, key string) string {
	if rng.IntN(2) == 0 {
		var at []int
		for i := range len(key) {
			if key[i] == '/' {
				at = append(at, i)
			}
		}
		if len(at) > 0 {
			i := at[rng.IntN(len(at))]
			return key[:i] + slashForms[rng.IntN(len(slashForms))] + key[i+1:]
		}
	}
	others := otherSpellings(rng)
	return others[rng.IntN(len(others))](key)
}

func otherSpellings(rng *rand.Rand) []func(string) string {
	lastSegment := func(s string, f func(string) string) string {
		i := strings.LastIndexByte(s, '/')
		return s[:i+1] + f(s[i+1:])
	}
	return []func(string) string{
		func(s string) string { return "/" + s },
		func(s string) string { return s + "/" },
		func(s string) string { // one character of the file name percent-encoded
			return lastSegment(s, func(seg string) string {
				if seg == "" {
					return seg
				}
				i := rng.IntN(len(seg))
				return seg[:i] + fmt.Sprintf([]string{"%%%02X", "%%%02x"}[rng.IntN(2)], seg[i]) + seg[i+1:]
			})
		},
		func(s string) string { return lastSegment(s, url.PathEscape) },
		func(s string) string { return strings.ReplaceAll(s, "%", "%25") }, // double-escaped
		func(s string) string { return lastSegment(s, strings.ToUpper) },
		func(s string) string { return strings.ToUpper(s) },
		func(s string) string { return strings.NewReplacer("+", " ", " ", "+").Replace(s) },
		func(s string) string { return strings.NewReplacer("+", "%20", "'", "%27").Replace(s) },
		func(s string) string { return strings.ReplaceAll(s, "Ü", "U\u0308") }, // NFD
		func(s string) string { return strings.ReplaceAll(s, "%C3%9C", "U%CC%88") },
		func(s string) string { return s + "." },
		func(s string) string { return s + "?versionId=1" },
	}
}
