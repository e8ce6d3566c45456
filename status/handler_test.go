package status

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/icereactor/reactor/deletions"
	"github.com/icereactor/reactor/events"
	"github.com/icereactor/reactor/planner"
)

// fakeSource is a worker's state held in plain values.
type fakeSource struct {
	replica  string
	health   map[string]planner.Health
	parts    map[string][]planner.PartitionCounters
	jobs     Jobs
	perTable map[string][]Job
	lastKind map[string][]Job
	owner    string
	inspect  func(name string) (Inspection, error)
	plans    map[string]planner.Plan
}

func (f *fakeSource) Replica() string { return f.replica }
func (f *fakeSource) Tables() []string {
	out := make([]string, 0, len(f.health))
	for n := range f.health {
		out = append(out, n)
	}
	slices.Sort(out)
	return out
}
func (f *fakeSource) Health(t string) (planner.Health, bool) { h, ok := f.health[t]; return h, ok }
func (f *fakeSource) TableCounters(t string) (int64, []planner.PartitionCounters) {
	return f.health[t].SnapshotID, f.parts[t]
}
func (f *fakeSource) Jobs() Jobs                   { return f.jobs }
func (f *fakeSource) TableJobs(t string) []Job     { return f.perTable[t] }
func (f *fakeSource) TableLastJobs(t string) []Job { return f.lastKind[t] }
func (f *fakeSource) Outlook(t string) (planner.Plan, bool) {
	p, ok := f.plans[t]
	return p, ok
}
func (f *fakeSource) Owners() func(string) string { return func(string) string { return f.owner } }

func (f *fakeSource) LastPoll(table string) (time.Time, string, bool) {
	if table == "db.events" {
		return testNow.Add(-30 * time.Second), "unchanged", true
	}
	return time.Time{}, "", false
}
func (f *fakeSource) Inspect(_ context.Context, t string) (Inspection, error) {
	if f.inspect == nil {
		return Inspection{}, nil
	}
	return f.inspect(t)
}

var testNow = time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)

// Hostile strings tablename allows: a namespace and a table level holding
// markup, quotes and ampersands (only "." and empty levels are refused).
const (
	hostileTable     = `ns"<b>&amp;.t<script>alert('x')</script>`
	hostilePartition = `category=<img src=x onerror=alert(1)>&"`
	secretURL        = "https://admin:hunter2@catalog.internal/v1/config?token=s3cr3tT0ken"
)

func newFake() *fakeSource {
	h := planner.Health{Table: "db.events", SnapshotID: 42, DataFiles: 9, DataBytes: 3 << 20, TargetFileSize: 1 << 20,
		SmallFiles: 8, TinyFiles: 1, Snapshots: 12, DataManifests: 4, DeleteFiles: 2, Healthy: true}
	bad := planner.Health{Table: hostileTable, SnapshotID: 7, DataFiles: 1, DataBytes: 10, TargetFileSize: 1 << 20,
		Snapshots: 80, Problems: []string{`80 snapshots (limit 50) <i>"x"</i>`}}
	failed := Job{JobEvent: events.JobEvent{Phase: events.JobFailed, JobID: "j-3", Kind: "compact", Table: hostileTable,
		Partitions: []string{hostilePartition}, Outcome: "failed", Time: testNow.Add(-time.Minute),
		Error: "load table: GET " + secretURL + ": 503 <b>unavailable</b>", DurationSeconds: 1.5}}
	running := Job{JobEvent: events.JobEvent{Phase: events.JobStarted, JobID: "j-4", Kind: "compact", Table: "db.events",
		Partitions: []string{"category=a"}, ScheduledAt: testNow.Add(-3 * time.Second),
		Reasons: []events.JobReason{{Partition: "category=a", Threshold: "small_files", Measured: 8, Limit: 5}}},
		StartedAt: testNow.Add(-2 * time.Second)}
	queued := Job{JobEvent: events.JobEvent{Phase: events.JobScheduled, JobID: "j-5", Kind: "expire_snapshots", Table: hostileTable,
		ScheduledAt: testNow.Add(-time.Second), Reasons: []events.JobReason{{Partition: "(table)", Threshold: "snapshot_count", Measured: 80, Limit: 50}}}}
	done := Job{JobEvent: events.JobEvent{Phase: events.JobSucceeded, JobID: "j-2", Kind: "compact", Table: "db.events",
		Outcome: "succeeded", Time: testNow.Add(-10 * time.Second), DurationSeconds: 0.25,
		Counts:           map[string]int64{"rewritten_data_files_count": 6, "added_data_files_count": 1},
		RefusedDeletions: map[string]int{"other_table": 2}, RefusedRecords: map[string]int{"unsigned": 1}}}
	quiet := planner.Health{Table: "db.quiet", SnapshotID: 3, DataFiles: 2, DataBytes: 20, TargetFileSize: 1 << 20, Snapshots: 2, Healthy: true}
	return &fakeSource{
		replica: "replica-1", owner: "replica-1",
		health: map[string]planner.Health{"db.events": h, hostileTable: bad, "db.quiet": quiet},
		parts: map[string][]planner.PartitionCounters{
			"db.events":  {{Key: "category=a", Counters: planner.Counters{DataFiles: 5, Bytes: 2 << 20}}, {Key: "category=b", Counters: planner.Counters{DataFiles: 4, Bytes: 1 << 20}}},
			hostileTable: {{Key: hostilePartition, Counters: planner.Counters{DataFiles: 1, Bytes: 10}}},
			"db.quiet":   {{Key: hostilePartition, Counters: planner.Counters{DataFiles: 2, Bytes: 20}}},
		},
		// db.quiet has no job queued or running: / says why from the
		// planner's outlook (a partition value holding markup included).
		plans: map[string]planner.Plan{"db.quiet": {Table: "db.quiet", Partitions: []planner.PartitionPlan{{Key: hostilePartition,
			Checks: []planner.Check{{Threshold: "small_file_count", Measured: 2, Limit: 8, Unit: "files"}}}}}},
		jobs: Jobs{Active: []Job{running, queued}, Recent: []Job{failed, done}, Failures: []Job{failed},
			Last: map[string]Job{"db.events": done, hostileTable: failed}},
		perTable: map[string][]Job{"db.events": {done}, hostileTable: {failed}},
		// The last of each kind: a rewrite_manifests older than the
		// recent jobs the table page lists stays visible.
		lastKind: map[string][]Job{"db.events": {done, {JobEvent: events.JobEvent{Phase: events.JobSucceeded, JobID: "j-1",
			Kind: "rewrite_manifests", Table: "db.events", Outcome: "succeeded", Time: testNow.Add(-time.Hour)}}}},
		inspect: func(name string) (Inspection, error) {
			if name == hostileTable {
				return Inspection{}, errors.New("load " + name + ": " + secretURL)
			}
			return Inspection{
				Plan: planner.Plan{Table: name, SnapshotID: 42, Partitions: []planner.PartitionPlan{{Key: "category=a",
					Checks: []planner.Check{{Threshold: "small_files", Measured: 8, Limit: 5, Unit: "files", Over: true}}, Due: true}}},
				Pending: []PendingBatch{{Ref: deletions.Ref{Location: "s3://lake/db/events/metadata/_reactor/pending-deletes/1-j.json?X-Amz-Signature=abcdef123",
					Due: testNow.Add(time.Hour)}, Files: 3, JobID: "j-1"},
					{Ref: deletions.Ref{Location: "s3://lake/db/events/metadata/_reactor/pending-deletes/2-forged.json", Due: testNow}, Files: -1, Refused: "unsigned"}},
			}, nil
		},
	}
}

func get(t *testing.T, h http.Handler, method, path string) (int, http.Header, string) {
	t.Helper()
	req := httptest.NewRequest(method, path, nil)
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	body, _ := io.ReadAll(rec.Result().Body)
	return rec.Code, rec.Header(), string(body)
}

func TestPages(t *testing.T) {
	h := Handler(newFake(), Options{Now: func() time.Time { return testNow }})
	tableURL := func(name string) string { return "/tables/" + url.PathEscape(name) }
	for _, tt := range []struct {
		name, method, path string
		code               int
		want, wantNot      []string
	}{
		{name: "overview lists the tables and their figures", method: "GET", path: "/", code: 200,
			want: []string{`href="/tables/db.events"`, "9 / 3", "healthy", "unhealthy", "replica-1", `<meta http-equiv="refresh" content="5">`,
				"category=a: small_files 8, limit 5", "running", "queued"}},
		{name: "overview says why nothing is due, escaped", method: "GET", path: "/", code: 200,
			want:    []string{"nothing due", "nearest: small_file_count 2 of 8 files (category=&lt;img src=x onerror=alert(1)&gt;&amp;&#34;)"},
			wantNot: []string{"<img"}},
		{name: "a hostile table name and problem render as text", method: "GET", path: "/", code: 200,
			want:    []string{"ns&#34;&lt;b&gt;&amp;amp;.t&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt;", "&lt;i&gt;&#34;x&#34;&lt;/i&gt;"},
			wantNot: []string{"<script>", "<i>", `<b>&amp;`}},
		{name: "a secret in a job error is masked", method: "GET", path: "/jobs", code: 200,
			want:    []string{"j-3", "catalog.internal", "***", "&lt;b&gt;unavailable&lt;/b&gt;", "Running (1)", "Queued (1)", "Recent failures (1)"},
			wantNot: []string{"hunter2", "s3cr3tT0ken", "<b>unavailable"}},
		{name: "table page: partitions, jobs, plan, pending deletions", method: "GET", path: "/tables/db.events", code: 200,
			want: []string{`data-partition="category=a"`, "rewritten_data_files_count 6", "small_files", "DUE", "Pending deletions (2)",
				"Last job of each kind", "rewrite_manifests", "j-1",
				"deletions refused (other_table) 2", "records refused (unsigned) 1", "refused: unsigned", "last poll", "unchanged, ",
				"X-Amz-Signature=***", `content="15"`},
			wantNot: []string{"abcdef123"}},
		{name: "a hostile table's page: name, partition and a failed read, escaped and masked", method: "GET", path: tableURL(hostileTable), code: 200,
			want:    []string{"&lt;script&gt;", "category=&lt;img src=x onerror=alert(1)&gt;&amp;&#34;", "could not read the table", "***"},
			wantNot: []string{"<script>", "<img", "hunter2", "s3cr3tT0ken"}},
		{name: "unknown table", method: "GET", path: "/tables/db.nope", code: 404, want: []string{"unknown table", "replica-1"}},
		{name: "unknown table with markup in its name", method: "GET", path: tableURL("db.<script>x</script>"), code: 404,
			want: []string{"db.&lt;script&gt;x&lt;/script&gt;"}, wantNot: []string{"<script>"}},
		{name: "not a table name", method: "GET", path: "/tables/nodots", code: 400, want: []string{"not a table name"}},
		{name: "empty level", method: "GET", path: "/tables/db..t", code: 400},
		{name: "unknown page", method: "GET", path: "/nope", code: 404},
		{name: "POST is refused", method: "POST", path: "/", code: 405},
		{name: "POST to a table page is refused", method: "POST", path: "/tables/db.events", code: 405},
		{name: "DELETE is refused", method: "DELETE", path: "/jobs", code: 405},
		{name: "PUT to an unknown page is refused", method: "PUT", path: "/nope", code: 405},
		{name: "HEAD answers without a body", method: "HEAD", path: "/", code: 200},
	} {
		t.Run(tt.name, func(t *testing.T) {
			code, hdr, body := get(t, h, tt.method, tt.path)
			if code != tt.code {
				t.Fatalf("%s %s: status %d, want %d\n%s", tt.method, tt.path, code, tt.code, body)
			}
			if code == http.StatusMethodNotAllowed && hdr.Get("Allow") != "GET, HEAD" {
				t.Errorf("Allow = %q", hdr.Get("Allow"))
			}
			if tt.method == "HEAD" && body != "" {
				t.Errorf("HEAD body: %q", body)
			}
			if code == 200 && !strings.Contains(hdr.Get("Content-Security-Policy"), "default-src 'none'") {
				t.Errorf("CSP = %q", hdr.Get("Content-Security-Policy"))
			}
			for _, w := range tt.want {
				if !strings.Contains(body, w) {
					t.Errorf("page lacks %q\n%s", w, body)
				}
			}
			for _, w := range tt.wantNot {
				if strings.Contains(body, w) {
					t.Errorf("page holds %q\n%s", w, body)
				}
			}
		})
	}
}

// An empty worker (nothing read yet, no lease manager) renders every page.
func TestPagesEmpty(t *testing.T) {
	h := Handler(&fakeSource{}, Options{})
	for _, p := range []string{"/", "/jobs"} {
		if code, _, body := get(t, h, "GET", p); code != 200 {
			t.Errorf("%s: %d\n%s", p, code, body)
		}
	}
}
