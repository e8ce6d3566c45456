package sparkrun

import (
	"strings"
	"testing"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/icereactor/reactor/executor"
	"github.com/icereactor/reactor/jobkind"
	"github.com/icereactor/reactor/jobs"
	"github.com/icereactor/reactor/tablename"
	"github.com/icereactor/reactor/thresholds"
)

func sparkConfig(t *testing.T, doc string) *thresholds.Config {
	t.Helper()
	cfg, err := thresholds.Parse([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

const rulesDoc = `
spark:
  endpoint: sc://spark:15002
  rules:
    - match: "db.*"
      kinds: [compact, sort, remove_orphans, expire_snapshots]
      min_input_bytes: 1TiB
    - match: "db.bucket"
      kinds: [remove_orphans]
      min_input_files: 1000000
`

func testMetadata(t *testing.T) table.Metadata {
	t.Helper()
	sc := iceberg.NewSchema(0,
		iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64, Required: true},
		iceberg.NestedField{ID: 2, Name: "category", Type: iceberg.PrimitiveTypes.String, Required: true})
	spec := iceberg.NewPartitionSpec(iceberg.PartitionField{SourceIDs: []int{2}, FieldID: 1000, Name: "category", Transform: iceberg.IdentityTransform{}})
	meta, err := table.NewMetadata(sc, &spec, table.UnsortedSortOrder, "file:///tmp/wh/db/t", iceberg.Properties{"format-version": "2"})
	if err != nil {
		t.Fatal(err)
	}
	return meta
}

func job(kind jobkind.Kind, tbl string, bytes int64, files int) jobs.Job {
	i := strings.LastIndex(tbl, ".")
	return jobs.Job{ID: "j1", Kind: kind, Table: tablename.Of(table.Identifier{tbl[:i], tbl[i+1:]}),
		InputBytes: bytes, InputFiles: files, ScheduledAt: time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC),
		Settings: thresholds.Default().For(tbl, nil)}
}

// TestDecide is the offload policy applied to jobs: which backend, and
// why.
func TestDecide(t *testing.T) {
	set := sparkConfig(t, rulesDoc).SparkSettings()
	const tib = int64(thresholds.TiB)
	dry := job(jobkind.Compact, "db.t", 2*tib, 10)
	dry.DryRun = true
	for _, tc := range []struct {
		name    string
		job     jobs.Job
		backend string
		why     string
	}{
		{"big compaction", job(jobkind.Compact, "db.t", 2*tib, 10), executor.BackendSpark, "rules[0] matches"},
		{"small compaction", job(jobkind.Compact, "db.t", tib-1, 10), executor.BackendLocal, "min_input_bytes"},
		{"other namespace", job(jobkind.Compact, "ops.t", 2*tib, 10), executor.BackendLocal, `does not match "db.*"`},
		{"kind not in the rule", job(jobkind.RewriteManifests, "db.t", 2*tib, 10), executor.BackendLocal, "not in"},
		{"second rule by files", job(jobkind.RemoveOrphans, "db.bucket", 1, 2000000), executor.BackendSpark, "rules[1] matches"},
		{"no Spark form", job(jobkind.DeleteExpiredFiles, "db.t", 2*tib, 10), executor.BackendLocal, "no Spark procedure"},
		{"dry run", dry, executor.BackendLocal, "dry run"},
	} {
		d := Decide(tc.job, set)
		if d.Backend != tc.backend || !strings.Contains(d.Why, tc.why) {
			t.Errorf("%s: Decide = %+v, want %s saying %q", tc.name, d, tc.backend, tc.why)
		}
	}
	if d := Decide(job(jobkind.Compact, "db.t", 1<<62, 1<<30), thresholds.Default().SparkSettings()); d.Backend != executor.BackendLocal {
		t.Errorf("without a spark section: %+v", d)
	}
}

// TestExplain: a job the rules send to Spark that sparkcall cannot
// express faithfully stays local, and the decision says why.
func TestExplain(t *testing.T) {
	set := sparkConfig(t, rulesDoc).SparkSettings()
	meta := testMetadata(t)
	const big = int64(2 * thresholds.TiB)
	compact := job(jobkind.Compact, "db.t", big, 10)
	compact.Partitions = []jobs.Partition{{Key: "category=a", Values: map[int]any{1000: "a"}}}
	tracked := job(jobkind.RemoveOrphans, "db.t", big, 10)
	tracked.OrphanSource = jobs.OrphansFromTracking
	listing := job(jobkind.RemoveOrphans, "db.t", big, 10)
	listing.OrphanSource = jobs.OrphansFromListing
	deferred := job(jobkind.ExpireSnapshots, "db.t", big, 10)
	deferred.ExpireOlderThan = 24 * time.Hour
	deferred.Settings.ExpireDeletionDelay = 96 * time.Hour
	oldSpec := job(jobkind.Compact, "db.t", big, 10)
	oldSpec.Partitions = []jobs.Partition{{Key: "spec=7/category=a", SpecID: 7, Values: map[int]any{1000: "a"}}}
	empty := job(jobkind.Compact, "db.t", big, 10)
	for _, tc := range []struct {
		name    string
		job     jobs.Job
		backend string
		why     string
	}{
		{"compaction", compact, executor.BackendSpark, "rules[0] matches"},
		{"orphans from a listing", listing, executor.BackendSpark, "rules[0] matches"},
		{"tracked orphan candidates", tracked, executor.BackendLocal, "Spark cannot run it faithfully"},
		{"deferred expiry deletion", deferred, executor.BackendLocal, "expire_deletion_delay"},
		{"partition of another spec", oldSpec, executor.BackendLocal, "Spark cannot run it faithfully"},
		{"no partition", empty, executor.BackendLocal, "nothing to send"},
	} {
		d := Explain(tc.job, meta, set, "lake")
		if d.Backend != tc.backend || !strings.Contains(d.Why, tc.why) {
			t.Errorf("%s: Explain = %+v, want %s saying %q", tc.name, d, tc.backend, tc.why)
		}
	}
}
