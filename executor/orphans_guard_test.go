package executor

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/apache/iceberg-go"
	iceio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"

	"github.com/icereactor/reactor/jobs"
	"github.com/icereactor/reactor/location"
	"github.com/icereactor/reactor/scope"
	"github.com/icereactor/reactor/tablename"
)

// The guard judges files on a real local file system the way the listing
// path sees them (bare paths from iceberg-go's local walk) against
// references spelled the way writers spell them. Spark (Iceberg Java)
// writes file:/ and keeps a partition value's percent escapes literally in
// the file name; iceberg-go writes file:/// and its local IO decodes
// escapes (commit 589c7b8): every spelling of a referenced file is kept.
func TestGuardMatchesWriterSpellings(t *testing.T) {
	dir := t.TempDir()
	old := time.Now().Add(-2 * time.Hour)
	write := func(rel string, modified time.Time) string {
		t.Helper()
		p := filepath.Join(dir, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("parquet, honestly"), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(p, modified, modified); err != nil {
			t.Fatal(err)
		}
		return p
	}
	javaEscaped := write("data/category=it%27s/00000-java.parquet", old) // as Spark leaves it on disk
	javaPlain := write("data/category=a/00001-java.parquet", old)
	goWritten := write("data/category=b c/00002-go.parquet", old)
	orphan := write("data/category=a/00003-failed.parquet", old)
	young := write("data/category=a/00004-in-flight.parquet", time.Now())
	refs := []string{
		"file:" + dir + "/data/category=it%27s/00000-java.parquet", // Java: file:/ and the escape in the name
		"file:" + dir + "/data/category=a/00001-java.parquet",
		"file://" + dir + "/data/category=b%20c/00002-go.parquet", // iceberg-go: file:/// with a URL escape
	}
	e, err := New(Options{})
	if err != nil {
		t.Fatal(err)
	}
	meta, err := table.NewMetadata(iceberg.NewSchema(0, iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64}),
		iceberg.UnpartitionedSpec, table.UnsortedSortOrder, dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	known, err := scope.NewKnown()
	if err != nil {
		t.Fatal(err)
	}
	known.Replace(nil)
	rc := &reclaim{e: e, log: e.log, table: "db.t", check: known.Check("db.t", meta), refusals: &Refusals{}}
	g := &deletionGuard{e: e, job: jobs.Job{Table: tablename.MustParseName("db.t")}, tableDir: dir, scope: dir,
		outside: RefusedOutsideTable, hiddenRef: dir, fs: iceio.LocalFS{}, stat: iceio.LocalFS{}, margin: time.Hour,
		refs: &references{ids: map[string]bool{}}, rc: rc}
	for _, r := range refs {
		g.refs.ids[location.Identity(r)] = true
	}
	for _, tt := range []struct {
		path string
		want verdict
	}{
		{javaEscaped, verdictReferenced},
		{"file://" + javaEscaped, verdictReferenced},
		{javaPlain, verdictReferenced},
		{"file://" + javaPlain, verdictReferenced},
		{goWritten, verdictReferenced},
		{orphan, verdictOrphan},
		{"file://" + orphan, verdictOrphan},
		{young, verdictYoung},
		{filepath.Join(dir, "data/category=a/never-written.parquet"), verdictGone},
		{dir + "/data//category=a/00003-failed.parquet", verdictRefused},
		{dir + "/data/./category=a/00003-failed.parquet", verdictRefused},
		{dir + "/data/category=a", verdictRefused}, // a directory
		{"/elsewhere/data/x.parquet", verdictRefused},
		{filepath.Join(dir, "data/category=a/.00003-failed.parquet.crc"), verdictHidden},
	} {
		j, err := g.judge(t.Context(), tt.path, false)
		if err != nil || j.verdict != tt.want {
			t.Errorf("judge(%s) = %+v, %v; want verdict %d", tt.path, j, err, tt.want)
		}
	}
}
