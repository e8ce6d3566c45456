package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"

	"github.com/icereactor/reactor/embedded"
	"github.com/icereactor/reactor/jobkind"
	"github.com/icereactor/reactor/jobs"
	"github.com/icereactor/reactor/planner"
	"github.com/icereactor/reactor/redact/redacttest"
	"github.com/icereactor/reactor/streamwriter"
)

// oneShotTable is a table in an embedded catalog under dir, written by a
// streaming writer: 6 small files in partition a, 2 in b.
type oneShotTable struct {
	t      *testing.T
	ctx    context.Context
	dir    string
	cat    catalog.Catalog
	ident  table.Identifier
	writer *streamwriter.Writer
}

func newOneShotTable(t *testing.T) *oneShotTable {
	t.Helper()
	ctx := context.Background()
	dir := t.TempDir()
	cat, err := embedded.OpenCatalog(ctx, filepath.Join(dir, "catalog"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if c, ok := cat.(interface{ Close() error }); ok {
			c.Close()
		}
	})
	o := &oneShotTable{t: t, ctx: ctx, dir: dir, cat: cat, ident: table.Identifier{"db", "t"}}
	if _, err := streamwriter.CreateTable(ctx, cat, o.ident, nil); err != nil {
		t.Fatal(err)
	}
	o.writer = streamwriter.New(cat, o.ident, nil)
	for i := range 8 {
		category := "a"
		if i >= 6 {
			category = "b"
		}
		if _, err := o.writer.Commit(ctx, category, 7); err != nil {
			t.Fatal(err)
		}
	}
	return o
}

func (o *oneShotTable) load() *table.Table {
	o.t.Helper()
	tbl, err := o.cat.LoadTable(o.ctx, o.ident)
	if err != nil {
		o.t.Fatal(err)
	}
	return tbl
}

// run executes reactor with args (the catalog flags are added) and checks
// the exit code.
func (o *oneShotTable) run(code int, args ...string) (stdout, stderr string) {
	o.t.Helper()
	args = append(args, "--data-dir", o.dir)
	var out, errOut bytes.Buffer
	if got := execute(o.ctx, args, &out, &errOut); got != code {
		o.t.Fatalf("reactor %v: exit %d, want %d\nstdout:\n%s\nstderr:\n%s", args, got, code, out.String(), errOut.String())
	}
	return out.String(), errOut.String()
}

// filesPer counts live data files per partition value.
func (o *oneShotTable) filesPer() map[string]int {
	o.t.Helper()
	tasks, err := o.load().Scan().PlanFiles(o.ctx)
	if err != nil {
		o.t.Fatal(err)
	}
	n := map[string]int{}
	for _, task := range tasks {
		for _, v := range task.File.Partition() {
			n[v.(string)]++
		}
	}
	return n
}

// checkRows asserts the table still holds exactly what the writer wrote.
func (o *oneShotTable) checkRows() {
	o.t.Helper()
	got, err := streamwriter.Read(o.ctx, o.load())
	if err != nil {
		o.t.Fatal(err)
	}
	if got.Total != o.writer.Written() {
		o.t.Fatalf("table holds %v, writer wrote %v", got.Total, o.writer.Written())
	}
}

func counts(t *testing.T, stdout string) map[string]int64 {
	t.Helper()
	var res oneShotResult
	if err := json.Unmarshal([]byte(stdout), &res); err != nil {
		t.Fatalf("output is not a JSON result: %v\n%s", err, stdout)
	}
	return res.Counts
}

func TestPlanShowsThresholdsAndDueJobs(t *testing.T) {
	o := newOneShotTable(t)
	cfg := filepath.Join(o.dir, "t.yaml")
	if err := os.WriteFile(cfg, []byte("defaults: {small_file_count: 5, min_input_files: 2, quiet_period: 0s}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out, _ := o.run(0, "plan", "db.t", "--thresholds", cfg)
	for _, want := range []string{"category=a", "small_file_count  6", "DUE", "category=b", "job 1: compact [category=a]",
		"manifest_count", "snapshot_count"} {
		if !strings.Contains(strings.Join(strings.Fields(out), " "), strings.Join(strings.Fields(want), " ")) {
			t.Errorf("plan output lacks %q:\n%s", want, out)
		}
	}
	out, _ = o.run(0, "plan", "--json", "--thresholds", cfg, "db.t")
	var plan planner.Plan
	if err := json.Unmarshal([]byte(out), &plan); err != nil {
		t.Fatal(err)
	}
	if len(plan.Jobs) != 1 || plan.Jobs[0].Kind != jobkind.Compact || len(plan.Jobs[0].Partitions) != 1 ||
		len(plan.Partitions) != 2 || plan.Partitions[1].Due || plan.Partitions[1].Checks[0].Measured != 2 {
		t.Errorf("plan = %+v", plan)
	}
	o.run(2, "plan", "db.nosuch")
}

// TestPlanShowsTheBackend: with spark rules, reactor plan says where each
// due job would run and why; the token is never printed.
func TestPlanShowsTheBackend(t *testing.T) {
	o := newOneShotTable(t)
	cfg := filepath.Join(o.dir, "t.yaml")
	for _, tc := range []struct {
		rules, want string
	}{
		{"[{kinds: [compact], min_input_files: 6}]", `runs on spark: rules[0] matches: kind in [compact], input 6 files >= 6`},
		{"[{kinds: [compact], min_input_files: 7}]", `runs on local: no rule matches (rules[0]: input 6 files < min_input_files 7)`},
		{"[{match: 'other.*'}]", `runs on local: no rule matches (rules[0]: table db.t does not match "other.*")`},
	} {
		doc := "defaults: {small_file_count: 5, min_input_files: 2, quiet_period: 0s}\n" +
			"spark: {endpoint: 'sc://spark:15002', token_env: SPARK_TOKEN, rules: " + tc.rules + "}\n"
		if err := os.WriteFile(cfg, []byte(doc), 0o644); err != nil {
			t.Fatal(err)
		}
		out, _ := o.run(0, "plan", "db.t", "--thresholds", cfg)
		if !strings.Contains(out, tc.want) {
			t.Errorf("rules %s: plan output lacks %q:\n%s", tc.rules, tc.want, out)
		}
		out, _ = o.run(0, "plan", "--json", "--thresholds", cfg, "db.t")
		var plan planner.Plan
		if err := json.Unmarshal([]byte(out), &plan); err != nil {
			t.Fatal(err)
		}
		if len(plan.Jobs) != 1 || plan.Jobs[0].InputFiles != 6 || plan.Jobs[0].Backend == "" || plan.Jobs[0].BackendWhy == "" {
			t.Errorf("plan jobs = %+v", plan.Jobs)
		}
	}
}

func TestCompactCommand(t *testing.T) {
	o := newOneShotTable(t)
	before := o.load().CurrentSnapshot().SnapshotID

	out, _ := o.run(0, "compact", "db.t", "--dry-run", "--json")
	if c := counts(t, out); c["rewritten_data_files_count"] != 6 || c["added_data_files_count"] != 0 {
		t.Errorf("dry run counts %v, want 6 files of partition a (b has fewer than min_input_files)", c)
	}
	if o.load().CurrentSnapshot().SnapshotID != before {
		t.Fatal("a dry run committed")
	}
	_, errOut := o.run(2, "compact", "db.t", "--partition", "category=nosuch")
	if !strings.Contains(errOut, `no live files in partition "category=nosuch"`) {
		t.Errorf("stderr %s", errOut)
	}

	out, errOut = o.run(0, "compact", "db.t", "--partition", "category=a", "--json")
	if c := counts(t, out); c["rewritten_data_files_count"] != 6 || c["added_data_files_count"] != 1 || c["failed_data_files_count"] != 0 {
		t.Errorf("counts %v", c)
	}
	if !strings.Contains(errOut, "group rewritten") {
		t.Errorf("no progress line on stderr:\n%s", errOut)
	}
	if n := o.filesPer(); n["a"] != 1 || n["b"] != 2 {
		t.Errorf("files per partition %v, want a=1 b=2", n)
	}
	o.checkRows()
	snap := o.load().CurrentSnapshot()
	if snap.Summary.Properties[jobs.SnapshotJobProperty] == "" {
		t.Errorf("compaction snapshot lacks %s: %v", jobs.SnapshotJobProperty, snap.Summary.Properties)
	}
}

func TestRewriteManifestsCommand(t *testing.T) {
	o := newOneShotTable(t)
	out, _ := o.run(0, "rewrite-manifests", "db.t", "--dry-run")
	if !strings.Contains(out, "rewritten_manifests_count  8") || !strings.Contains(out, "dry run") {
		t.Errorf("dry run output:\n%s", out)
	}
	out, _ = o.run(0, "rewrite-manifests", "db.t", "--json")
	if c := counts(t, out); c["rewritten_manifests_count"] != 8 || c["added_manifests_count"] < 1 || c["added_manifests_count"] > 2 {
		t.Errorf("counts %v, want 8 manifests merged into one per partition at most", c)
	}
	o.checkRows()
}

// reactor expire commits the expiry at any horizon but, with the default
// reader margin, deletes nothing yet: it says when the unlinked files go.
// With a zero margin it deletes them at once; a later run deletes what
// earlier runs left once it is due.
func TestExpireCommand(t *testing.T) {
	o := newOneShotTable(t)
	var lists []string
	for _, snap := range o.load().Metadata().Snapshots() {
		lists = append(lists, strings.TrimPrefix(snap.ManifestList, "file://"))
	}
	time.Sleep(5 * time.Millisecond) // snapshot timestamps have millisecond resolution
	out, _ := o.run(0, "expire", "db.t", "--older-than", "1ms", "--dry-run", "--json")
	if c := counts(t, out); c["expired_snapshots_count"] != 7 || c["deleted_data_files_count"] != 0 {
		t.Errorf("dry run counts %v", c)
	}
	if n := len(o.load().Metadata().Snapshots()); n != 8 {
		t.Fatalf("a dry run expired snapshots: %d left", n)
	}
	out, errOut := o.run(0, "expire", "db.t", "--older-than", "1ms", "--json")
	c := counts(t, out)
	if c["expired_snapshots_count"] != 7 || c["deleted_manifest_lists_count"] != 0 || c["deletion_deferred_files_count"] < 7 {
		t.Errorf("counts %v: 7 snapshots expired, their files deferred", c)
	}
	if !strings.Contains(errOut, "after min_reader_margin") {
		t.Errorf("stderr does not say when the files go:\n%s", errOut)
	}
	if n := len(o.load().Metadata().Snapshots()); n != 1 {
		t.Errorf("%d snapshots left, want 1 (retain_last)", n)
	}
	for _, f := range lists {
		if _, err := os.Stat(f); err != nil {
			t.Errorf("a manifest list expiry unlinked was deleted inside the reader margin: %v", err)
		}
	}
	o.checkRows()

	// A zero margin deletes at once.
	o2 := newOneShotTable(t)
	cfg := filepath.Join(o2.dir, "t.yaml")
	if err := os.WriteFile(cfg, []byte("defaults: {min_reader_margin: 0s}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	time.Sleep(5 * time.Millisecond)
	out, _ = o2.run(0, "expire", "db.t", "--thresholds", cfg, "--older-than", "1ms", "--json")
	if c := counts(t, out); c["expired_snapshots_count"] != 7 || c["deleted_manifest_lists_count"] != 7 || c["deletion_deferred_files_count"] != 0 {
		t.Errorf("counts %v", c)
	}
	o2.checkRows()
}

func TestOrphansCommand(t *testing.T) {
	o := newOneShotTable(t)
	loc := strings.TrimPrefix(o.load().Location(), "file://")
	stray := filepath.Join(loc, "data", "category=a", "failed-write.parquet")
	if err := os.WriteFile(stray, []byte("leftover of a failed write"), 0o644); err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-96 * time.Hour)
	if err := os.Chtimes(stray, old, old); err != nil {
		t.Fatal(err)
	}
	out, _ := o.run(0, "orphans", "db.t")
	if !strings.Contains(out, "orphan_files_count   1") && !strings.Contains(strings.Join(strings.Fields(out), " "), "orphan_files_count 1") {
		t.Errorf("output:\n%s", out)
	}
	if !strings.Contains(out, "failed-write.parquet") || !strings.Contains(out, "dry run") {
		t.Errorf("output:\n%s", out)
	}
	if _, err := os.Stat(stray); err != nil {
		t.Fatalf("a dry run deleted the file: %v", err)
	}
	_, errOut := o.run(2, "orphans", "db.t", "--dry-run=false")
	if !strings.Contains(errOut, "orphan_delete: true") {
		t.Errorf("stderr %s", errOut)
	}
	cfg := filepath.Join(o.dir, "t.yaml")
	if err := os.WriteFile(cfg, []byte("defaults: {orphan_delete: true}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out, _ = o.run(0, "orphans", "db.t", "--thresholds", cfg, "--dry-run=false", "--json")
	if c := counts(t, out); c["orphan_files_count"] != 1 || c["deleted_files_count"] != 1 {
		t.Errorf("counts %v", c)
	}
	if _, err := os.Stat(stray); !os.IsNotExist(err) {
		t.Errorf("orphan still there: %v", err)
	}
	o.checkRows()
}

func TestValidateConfigCommand(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good.yaml")
	bad := filepath.Join(dir, "bad.yaml")
	if err := os.WriteFile(good, []byte("namespaces: [db]\ndefaults: {small_file_count: 20}\ntables:\n  - match: db.hot_*\n    small_file_count: 50\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bad, []byte("defaults: {small_file_ratio: 1.5}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		args   []string
		code   int
		stdout []string
		stderr string
	}{
		{"valid", []string{good}, 0, []string{"good.yaml: valid"}, ""},
		{"override wins", []string{"--table", "db.hot_clicks", good}, 0, []string{"small_file_count", "50"}, ""},
		{"defaults", []string{"--table", "db.cold", good}, 0, []string{"small_file_count", "20"}, ""},
		{"table property", []string{"--table", "db.cold", "--table-property", "write.target-file-size-bytes=134217728", good}, 0,
			[]string{"target_file_size", "128MiB", "table property"}, ""},
		{"unwatched namespace", []string{"--table", "other.t", good}, 0, []string{"not in the file's namespaces"}, ""},
		{"invalid", []string{bad}, 2, nil, "defaults.small_file_ratio"},
		{"no file", nil, 2, nil, "missing FILE"},
		{"flags after FILE", []string{good, "--table", "db.cold"}, 0, []string{"settings for db.cold", "small_file_count", "20"}, ""},
		{"two files", []string{good, bad}, 2, nil, "want one FILE, got 2 arguments"},
		{"property without table", []string{"--table-property", "a=b", good}, 2, nil, "--table-property needs --table"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out, errOut bytes.Buffer
			code := execute(context.Background(), append([]string{"validate-config"}, tt.args...), &out, &errOut)
			ok := code == tt.code && strings.Contains(errOut.String(), tt.stderr)
			for _, s := range tt.stdout {
				ok = ok && strings.Contains(out.String(), s)
			}
			if !ok {
				t.Errorf("exit %d (want %d)\nstdout:\n%s\nstderr:\n%s", code, tt.code, out.String(), errOut.String())
			}
		})
	}
}

func TestRewriteDeletesAndSortCommands(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	cat, err := embedded.OpenCatalog(ctx, filepath.Join(dir, "catalog"))
	if err != nil {
		t.Fatal(err)
	}
	defer cat.(interface{ Close() error }).Close()
	ident := table.Identifier{"db", "t"}
	if _, err := streamwriter.CreateTable(ctx, cat, ident, streamwriter.MergeOnReadProperties); err != nil {
		t.Fatal(err)
	}
	w := streamwriter.New(cat, ident, nil)
	for range 4 {
		if _, err := w.Commit(ctx, "a", 20); err != nil {
			t.Fatal(err)
		}
	}
	for _, id := range []int64{3, 9, 27, 41, 55, 70} {
		if _, err := w.DeleteRows(ctx, id); err != nil {
			t.Fatal(err)
		}
	}
	o := &oneShotTable{t: t, ctx: ctx, dir: dir, cat: cat, ident: ident, writer: w}

	out, _ := o.run(0, "rewrite-deletes", "db.t", "--dry-run", "--json")
	if c := counts(t, out); c["rewritten_delete_files_count"] != 6 || c["added_delete_files_count"] != 1 {
		t.Errorf("dry run counts %v", c)
	}
	out, _ = o.run(0, "rewrite-deletes", "db.t", "--json")
	if c := counts(t, out); c["rewritten_delete_files_count"] != 6 || c["added_delete_files_count"] != 1 || c["added_bytes_count"] <= 0 {
		t.Errorf("counts %v", c)
	}
	o.checkRows()

	_, errOut := o.run(2, "compact", "db.t", "--sort-order", "id")
	if !strings.Contains(errOut, "--sort-order needs --strategy") {
		t.Errorf("stderr %s", errOut)
	}
	_, errOut = o.run(1, "compact", "db.t", "--strategy", "sort", "--sort-order", "nosuch")
	if !strings.Contains(errOut, `"nosuch"`) {
		t.Errorf("an unknown sort column is not named: %s", errOut)
	}
	out, _ = o.run(0, "compact", "db.t", "--strategy", "sort", "--sort-order", "id DESC", "--json")
	if c := counts(t, out); c["rewritten_data_files_count"] != 4 || c["added_data_files_count"] != 1 || c["removed_delete_files_count"] != 1 {
		t.Errorf("sort counts %v, want 4 files sorted into 1 and the merged delete file gone", c)
	}
	o.checkRows()
	snap := o.load().CurrentSnapshot()
	if got := snap.Summary.Properties[jobs.SortSnapshotProperty]; got != "id DESC NULLS LAST" {
		t.Errorf("sort snapshot property %q", got)
	}
}

// `reactor plan` masks secrets wherever they come from, here partition
// values holding every shape package redact knows; --json stays JSON.
func TestPlanMasksSecrets(t *testing.T) {
	o := newOneShotTable(t)
	for _, s := range redacttest.Shapes {
		if _, err := o.writer.Commit(o.ctx, s.Text, 3); err != nil {
			t.Fatal(err)
		}
	}
	out, _ := o.run(0, "plan", "db.t")
	redacttest.AssertMasked(t, "plan", out)
	out, _ = o.run(0, "plan", "--json", "db.t")
	redacttest.AssertMasked(t, "plan --json", out)
	var plan planner.Plan
	if err := json.Unmarshal([]byte(out), &plan); err != nil || len(plan.Partitions) != len(redacttest.Shapes)+2 {
		t.Fatalf("plan --json: %v, %d partitions\n%s", err, len(plan.Partitions), out)
	}
}

// `reactor plan` with a metadata limit below the table's metadata.json
// fails, naming the file, its size, the limit and the flag, and reads
// nothing else.
func TestPlanRefusesOversizedMetadata(t *testing.T) {
	o := newOneShotTable(t)
	props, err := embedded.CatalogProperties(filepath.Join(o.dir, "catalog"))
	if err != nil {
		t.Fatal(err)
	}
	args := []string{"plan", "db.t", "--catalog-type", "sql", "--catalog-uri", props["uri"], "--warehouse", props["warehouse"]}
	for k, v := range props {
		if k != "type" && k != "uri" && k != "warehouse" {
			args = append(args, "--catalog-prop", k+"="+v)
		}
	}
	o.run(0, args...)
	_, stderr := o.run(1, append(args, "--max-metadata-bytes", "100")...)
	for _, want := range []string{"metadata file file://", ".metadata.json is ", "over reactor's limit of 100 bytes (--max-metadata-bytes"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr)
		}
	}
}
