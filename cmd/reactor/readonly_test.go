package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/icereactor/reactor/embedded"
)

// readOnlyCommands are the commands that only read: plan, health and
// every dry run (orphans is one unless told otherwise).
var readOnlyCommands = [][]string{
	{"plan", "demo.events"},
	{"health", "demo.events"},
	{"compact", "demo.events", "--dry-run"},
	{"compact", "demo.events", "--dry-run", "--strategy", "sort", "--sort-order", "id"},
	{"rewrite-deletes", "demo.events", "--dry-run"},
	{"convert-equality-deletes", "demo.events", "--dry-run"},
	{"expire", "demo.events", "--dry-run"},
	{"orphans", "demo.events"},
	{"rewrite-manifests", "demo.events", "--dry-run"},
}

// A read-only command run where there is no catalog creates nothing (it
// used to create ./reactor-data/catalog with an empty SQLite catalog, then
// say the table was not found), and says where it looked.
func TestReadOnlyCommandsInAnEmptyDirectoryLeaveItEmpty(t *testing.T) {
	th := filepath.Join(t.TempDir(), "t.yaml")
	if err := os.WriteFile(th, []byte("defaults: {small_file_count: 8}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	t.Chdir(dir)
	for _, args := range readOnlyCommands {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			var out, errOut bytes.Buffer
			code := execute(t.Context(), args, &out, &errOut)
			if code != 2 || !strings.Contains(errOut.String(), "no embedded catalog in "+filepath.Join(dir, "reactor-data")) {
				t.Errorf("exit %d, stderr:\n%s", code, errOut.String())
			}
			if strings.Contains(errOut.String(), "for usage") {
				t.Errorf("no usage hint for a missing catalog:\n%s", errOut.String())
			}
			assertEmpty(t, dir)
		})
	}
	t.Run("validate-config", func(t *testing.T) {
		var out, errOut bytes.Buffer
		if code := execute(t.Context(), []string{"validate-config", th, "--table", "demo.events"}, &out, &errOut); code != 0 {
			t.Fatalf("exit %d: %s", code, errOut.String())
		}
		assertEmpty(t, dir)
	})
}

func assertEmpty(t *testing.T, dir string) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		t.Errorf("%s left %s behind", t.Name(), e.Name())
	}
}

// On a catalog with a table, the read-only commands change no file of the
// table, the catalog or the data directory.
func TestReadOnlyCommandsWriteNothing(t *testing.T) {
	o := newOneShotTable(t)
	before := fileSet(t, o.dir)
	for _, args := range readOnlyCommands {
		args = append([]string{args[0], "db.t"}, args[2:]...)
		var out, errOut bytes.Buffer
		code := execute(o.ctx, append(args, "--data-dir", o.dir), &out, &errOut)
		if code != 0 && !(args[0] == "health" && code == 1) {
			t.Fatalf("%v: exit %d\n%s%s", args, code, out.String(), errOut.String())
		}
		if args[0] != "plan" && args[0] != "health" && !strings.Contains(out.String(), dryRunLine) {
			t.Errorf("%v: no %q line:\n%s", args, dryRunLine, out.String())
		}
		if after := fileSet(t, o.dir); after != before {
			t.Fatalf("%v changed the files:\nbefore:\n%s\nafter:\n%s", args, before, after)
		}
	}
}

// fileSet lists every file under dir with its size and modification time,
// leaving out SQLite's write-ahead log and shared memory files (they come
// and go with any connection, a reader's too).
func fileSet(t *testing.T, dir string) string {
	t.Helper()
	var lines []string
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || strings.HasSuffix(path, "-wal") || strings.HasSuffix(path, "-shm") {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		lines = append(lines, fmt.Sprintf("%s %d %s", rel, info.Size(), info.ModTime()))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}

// "Not found" names the catalog it searched and lists its tables (no raw
// Go list such as [db nosuch]); an empty catalog says it has none.
func TestTableNotFoundNamesTheCatalogAndItsTables(t *testing.T) {
	o := newOneShotTable(t)
	_, errOut := o.run(2, "plan", "db.nosuch")
	want := "reactor plan: table db.nosuch not found in the embedded SQLite catalog in " + filepath.Join(o.dir, "catalog") + "; its tables: db.t\n"
	if errOut != want {
		t.Errorf("stderr\n%q\nwant\n%q", errOut, want)
	}
	_, errOut = o.run(2, "health", "other.t")
	if !strings.Contains(errOut, "table other.t not found in the embedded SQLite catalog") || !strings.Contains(errOut, "its tables: db.t") ||
		strings.Contains(errOut, "[") || strings.Contains(errOut, "for usage") {
		t.Errorf("stderr %q", errOut)
	}

	empty := t.TempDir()
	cat, err := embedded.OpenCatalog(o.ctx, filepath.Join(empty, "catalog"))
	if err != nil {
		t.Fatal(err)
	}
	cat.(interface{ Close() error }).Close()
	var out, stderr bytes.Buffer
	if code := execute(o.ctx, []string{"plan", "demo.events", "--data-dir", empty}, &out, &stderr); code != 2 ||
		!strings.HasSuffix(stderr.String(), "catalog in "+filepath.Join(empty, "catalog")+", which has no tables\n") {
		t.Errorf("exit %d, stderr %q", code, stderr.String())
	}
}

// A usage hint follows usage errors only: a bad flag, not a thresholds
// file that does not parse or a table that does not exist. An error names
// its file once ("thresholds file X: invalid YAML", not "thresholds: load
// X: thresholds: invalid YAML").
func TestUsageHintOnlyOnUsageErrors(t *testing.T) {
	o := newOneShotTable(t)
	bad := filepath.Join(o.dir, "bad.yaml")
	if err := os.WriteFile(bad, []byte("defaults:\n  small_file_count: [\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args   []string
		stderr string
		hint   bool
	}{
		{[]string{"plan", "db.t", "--thresholds", bad}, "reactor plan: thresholds file " + bad + ": invalid YAML at line 2", false},
		{[]string{"validate-config", bad}, "reactor validate-config: thresholds file " + bad + ": invalid YAML at line 2", false},
		{[]string{"plan", "db.t", "--thresholds", bad + ".missing"}, "thresholds file " + bad + ".missing: no such file or directory", false},
		{[]string{"compact", "db.t", "--partition", "category=zz", "--dry-run"}, `has no live files in partition "category=zz"`, false},
		{[]string{"plan", "db.nosuch"}, "table db.nosuch not found", false},
		{[]string{"plan", "db.t", "--no-such-flag"}, "flag provided but not defined: -no-such-flag", true},
		{[]string{"plan"}, "missing TABLE", true},
		{[]string{"orphans", "db.t", "--older-than", "1h"}, "below the orphan margin floor", true},
	} {
		args := tc.args
		if args[0] != "validate-config" {
			args = append(args, "--data-dir", o.dir)
		}
		var out, errOut bytes.Buffer
		code := execute(o.ctx, args, &out, &errOut)
		if code != 2 || !strings.Contains(errOut.String(), tc.stderr) || strings.Contains(errOut.String(), "Run 'reactor") != tc.hint {
			t.Errorf("%v: exit %d, stderr:\n%s(want %q, hint %v)", tc.args, code, errOut.String(), tc.stderr, tc.hint)
		}
		if strings.Count(errOut.String(), "thresholds") > 1 {
			t.Errorf("%v: a repeated prefix: %s", tc.args, errOut.String())
		}
	}
}

// Every command takes its flags before, between or after its arguments.
func TestFlagsAfterArguments(t *testing.T) {
	o := newOneShotTable(t)
	th := filepath.Join(o.dir, "t.yaml")
	if err := os.WriteFile(th, []byte("defaults: {small_file_count: 6}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"validate-config", th, "--table", "db.t"},
		{"validate-config", "--table", "db.t", th},
		{"plan", "db.t", "--data-dir", o.dir, "--thresholds", th},
		{"plan", "--data-dir", o.dir, "db.t", "--thresholds", th},
		{"health", "db.t", "--data-dir", o.dir, "--json"},
		{"compact", "db.t", "--dry-run", "--data-dir", o.dir, "--partition", "category=a"},
		{"expire", "db.t", "--data-dir", o.dir, "--dry-run", "--retain-last", "2"},
	} {
		var out, errOut bytes.Buffer
		if code := execute(o.ctx, args, &out, &errOut); code != 0 {
			t.Errorf("%v: exit %d\n%s", args, code, errOut.String())
		}
	}
	var out, errOut bytes.Buffer
	if code := execute(o.ctx, []string{"validate-config", th, "--table", "db.t"}, &out, &errOut); !strings.Contains(out.String(), "settings for db.t") ||
		!strings.Contains(strings.Join(strings.Fields(out.String()), " "), "small_file_count 6") {
		t.Errorf("exit %d, stdout:\n%s", code, out.String())
	}
}

// An orphan dry run right after a write shows the unreferenced files too
// young to be orphans, with their age and when they become eligible (it
// used to count none: the listing dropped every file younger than the
// margin before the guard saw it).
func TestOrphansDryRunShowsYoungCandidates(t *testing.T) {
	o := newOneShotTable(t)
	loc := strings.TrimPrefix(o.load().Location(), "file://")
	young := filepath.Join(loc, "data", "category=a", "attempt-that-lost-its-commit.parquet")
	if err := os.WriteFile(young, []byte("a writer's file whose commit failed"), 0o644); err != nil {
		t.Fatal(err)
	}
	written := time.Now().Add(-time.Hour)
	if err := os.Chtimes(young, written, written); err != nil {
		t.Fatal(err)
	}
	out, _ := o.run(0, "orphans", "db.t")
	fields := strings.Join(strings.Fields(out), " ")
	eligible := written.Add(72 * time.Hour).UTC().Format(time.RFC3339)
	for _, want := range []string{"orphan_files_count 0", "too_young_files_count 1",
		"too_young_file_location " + young + " (1h0m0s old; eligible from " + eligible + ", in 71h0m0s)", dryRunLine} {
		if !strings.Contains(fields, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	out, _ = o.run(0, "orphans", "db.t", "--json")
	var res oneShotResult
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatal(err)
	}
	if len(res.Young) != 1 || res.Young[0].Location != young || !res.Young[0].EligibleAt.Equal(written.Add(72*time.Hour)) ||
		res.Counts["too_young_files_count"] != 1 {
		t.Errorf("json %+v", res)
	}
	if _, err := os.Stat(young); err != nil {
		t.Fatal(err)
	}
}

// A dry run says what it cannot know instead of a 0 that reads as "none":
// the manifests a merge writes exist only once written.
func TestDryRunCountsReadUnambiguously(t *testing.T) {
	o := newOneShotTable(t)
	out, _ := o.run(0, "rewrite-manifests", "db.t", "--dry-run")
	fields := strings.Join(strings.Fields(out), " ")
	if !strings.Contains(fields, "rewritten_manifests_count 8") ||
		!strings.Contains(fields, "added_manifests_count not known until written: 1 (together they fit in one manifest of the target size)") {
		t.Errorf("output:\n%s", out)
	}
	out, _ = o.run(0, "rewrite-manifests", "db.t", "--dry-run", "--json")
	var res oneShotResult
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatal(err)
	}
	if _, ok := res.Counts["added_manifests_count"]; ok || len(res.NotKnownInDryRun) != 1 || !res.DryRun {
		t.Errorf("json %+v", res)
	}
	out, _ = o.run(0, "compact", "db.t", "--dry-run")
	if fields := strings.Join(strings.Fields(out), " "); !strings.Contains(fields, "rewritten_data_files_count 6") ||
		!strings.Contains(fields, "added_data_files_count not known until written: about 1") || !strings.Contains(out, dryRunLine) {
		t.Errorf("output:\n%s", out)
	}
}
