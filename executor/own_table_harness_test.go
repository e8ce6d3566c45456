package executor_test

import (
	"errors"
	"fmt"
	iofs "io/fs"
	"log/slog"
	"maps"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	iceio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"

	"github.com/icereactor/reactor/embedded"
	"github.com/icereactor/reactor/embedded/s3gateway"
	"github.com/icereactor/reactor/executor"
	"github.com/icereactor/reactor/jobkind"
	"github.com/icereactor/reactor/jobs"
	"github.com/icereactor/reactor/metrics"
	"github.com/icereactor/reactor/streamwriter"
	"github.com/icereactor/reactor/tablename"
	"github.com/icereactor/reactor/thresholds"
)

// shared is one warehouse holding two tables: A, whose writer is hostile
// (it may write A's storage and commit to A, nothing of B's), and B, which
// reactor must never touch while maintaining A. A file outside the
// warehouse stands for everything else the process could reach.
type shared struct {
	t       *testing.T
	cat     catalog.Catalog
	a, b    table.Identifier
	wa, wb  *streamwriter.Writer
	met     *metrics.Metrics
	logs    *syncBuffer
	exec    *executor.Executor // leased: it recovers killed jobs' outputs
	outside string             // a file outside the warehouse
	store   string
	jobs    int
}

// forEachStore runs body on a local warehouse and on the embedded S3
// gateway.
func forEachStore(t *testing.T, body func(t *testing.T, s *shared)) {
	for _, store := range []string{"local", "s3"} {
		t.Run(store, func(t *testing.T) { body(t, newShared(t, store, nil)) })
	}
}

func newShared(t *testing.T, store string, propsA iceberg.Properties) *shared {
	t.Helper()
	ctx := t.Context()
	s := &shared{t: t, a: table.Identifier{"db", "a"}, b: table.Identifier{"db", "b"}, met: metrics.New(), logs: &syncBuffer{},
		store: store}
	dir := t.TempDir()
	props, err := embedded.CatalogProperties(dir)
	if err != nil {
		t.Fatal(err)
	}
	switch store {
	case "local":
		s.outside = "file://" + filepath.Join(t.TempDir(), "precious.parquet")
	case "s3", "s3tables":
		// "s3tables": a bucket named as AWS names a table bucket, on the
		// embedded gateway, a stand-in for S3 Tables that still lists and
		// deletes, so a test can see reactor did neither.
		bucket := "lake"
		if store == "s3tables" {
			bucket = "0f3a9c1e-5b7d-4e2a-9c41-reactortest--table-s3"
		}
		gw, err := s3gateway.Start(ctx, s3gateway.Options{RootDir: filepath.Join(t.TempDir(), "s3")})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = gw.Close() })
		if err := gw.CreateBucket(ctx, bucket); err != nil {
			t.Fatal(err)
		}
		maps.Copy(props, gw.IcebergProperties())
		props["warehouse"] = "s3://" + bucket + "/warehouse"
		s.outside = "s3://" + bucket + "/precious/keep.parquet" // the same bucket, outside the warehouse
	}
	if s.cat, err = catalog.Load(ctx, embedded.CatalogName, props); err != nil {
		t.Fatal(err)
	}
	for _, id := range []table.Identifier{s.a, s.b} {
		p := iceberg.Properties{}
		if id[1] == "a" {
			p = propsA
		}
		if _, err := streamwriter.CreateTable(ctx, s.cat, id, p); err != nil {
			t.Fatal(err)
		}
	}
	s.wa, s.wb = streamwriter.New(s.cat, s.a, nil), streamwriter.New(s.cat, s.b, nil)
	for range 6 {
		if _, err := s.wa.Commit(ctx, "a", 10); err != nil {
			t.Fatal(err)
		}
		if _, err := s.wb.Commit(ctx, "a", 10); err != nil {
			t.Fatal(err)
		}
	}
	s.put(s.outside, []byte("not any table's"))
	s.exec = newTestExecutor(t, s.cat, slog.New(slog.NewTextHandler(s.logs, nil)), s.met)
	executor.GuardCommits(s.exec, leased{})
	return s
}

func (s *shared) load(id table.Identifier) *table.Table {
	s.t.Helper()
	tbl, err := s.cat.LoadTable(s.t.Context(), id)
	if err != nil {
		s.t.Fatal(err)
	}
	return tbl
}

func (s *shared) fs() iceio.IO {
	s.t.Helper()
	fs, err := s.load(s.a).FS(s.t.Context())
	if err != nil {
		s.t.Fatal(err)
	}
	return fs
}

func (s *shared) put(loc string, data []byte) {
	s.t.Helper()
	if err := s.fs().(iceio.WriteFileIO).WriteFile(loc, data); err != nil {
		s.t.Fatal(err)
	}
}

func (s *shared) exists(loc string) bool {
	s.t.Helper()
	f, err := s.fs().Open(loc)
	if errors.Is(err, iofs.ErrNotExist) {
		return false
	}
	if err != nil {
		s.t.Fatal(err)
	}
	f.Close()
	return true
}

// files lists every file under the table's location (data, metadata,
// reactor's records).
func (s *shared) files(id table.Identifier) map[string]bool {
	s.t.Helper()
	tbl := s.load(id)
	out := map[string]bool{}
	err := s.fs().(iceio.ListableIO).WalkDir(tbl.Location(), func(p string, d iofs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			out[p] = true
		}
		return nil
	})
	if err != nil {
		s.t.Fatal(err)
	}
	return out
}

// liveDataFiles are the table's live data files.
func (s *shared) liveDataFiles(id table.Identifier) []iceberg.DataFile {
	s.t.Helper()
	tasks, err := s.load(id).Scan().PlanFiles(s.t.Context())
	if err != nil {
		s.t.Fatal(err)
	}
	var out []iceberg.DataFile
	for _, task := range tasks {
		out = append(out, task.File)
	}
	return out
}

func (s *shared) contents(id table.Identifier) streamwriter.Contents {
	s.t.Helper()
	c, err := streamwriter.Read(s.t.Context(), s.load(id))
	if err != nil {
		s.t.Fatalf("read %v: %v", id, err)
	}
	return c
}

// job is a job of kind on A with the thresholds in yaml (partition
// category=a where the kind works on partitions).
func (s *shared) job(kind jobkind.Kind, yaml string) jobs.Job {
	s.t.Helper()
	cfg, err := thresholds.Parse([]byte(yaml))
	if err != nil {
		s.t.Fatal(err)
	}
	s.jobs++
	j := jobs.Job{ID: fmt.Sprintf("test-%d", s.jobs), Kind: kind, Table: tablename.Of(s.a),
		Settings: cfg.For("db.a", s.load(s.a).Properties())}
	if kind == jobkind.Compact {
		j.Partitions = []jobs.Partition{{Key: "category=a"}}
	}
	return j
}

// compactAndExpire compacts A and expires everything before it with the
// reader margin in yaml: the control, A's own legitimate deletions. It
// returns the files the compaction replaced.
func (s *shared) compactAndExpire(margin string) (replaced []string, res jobs.Result) {
	s.t.Helper()
	for _, df := range s.liveDataFiles(s.a) {
		replaced = append(replaced, df.FilePath())
	}
	yaml := "defaults: {target_file_size: 1MiB, small_file_count: 5, snapshot_max_age: 1ms, retain_last: 1, min_reader_margin: " + margin + "}"
	if r, _ := s.exec.Run(s.t.Context(), s.job(jobkind.Compact, yaml)); r.Outcome != jobs.Succeeded {
		s.t.Fatalf("compaction of A: %v %v", r.Outcome, r.Err)
	}
	time.Sleep(5 * time.Millisecond) // every snapshot before the compaction is past the 1ms horizon
	j := s.job(jobkind.ExpireSnapshots, yaml)
	j.ExpireOlderThan = time.Millisecond
	res, _ = s.exec.Run(s.t.Context(), j)
	if res.Outcome != jobs.Succeeded {
		s.t.Fatalf("expiry of A: %v %v", res.Outcome, res.Err)
	}
	return replaced, res
}

// pass runs A's deletion pass over every record due now.
func (s *shared) pass() (jobs.Result, executor.Report) {
	s.t.Helper()
	j := s.job(jobkind.DeleteExpiredFiles, "defaults: {min_reader_margin: 1ms}")
	due, err := s.exec.DuePendingDeletes(s.t.Context(), s.a, time.Now())
	if err != nil {
		s.t.Fatal(err)
	}
	j.PendingDeletes = due
	return s.exec.Run(s.t.Context(), j)
}

// untouched checks B lost no file and no row, and the outside file is
// there.
func (s *shared) untouched(bFiles map[string]bool, bRows streamwriter.Contents) {
	s.t.Helper()
	if got := s.files(s.b); !reflect.DeepEqual(got, bFiles) {
		var gone []string
		for p := range bFiles {
			if !got[p] {
				gone = append(gone, p)
			}
		}
		s.t.Errorf("table B lost files: %v", gone)
	}
	if got := s.contents(s.b); !reflect.DeepEqual(got.Total, bRows.Total) {
		s.t.Errorf("table B reads %+v, want %+v", got.Total, bRows.Total)
	}
	if !s.exists(s.outside) {
		s.t.Errorf("the file outside the warehouse (%s) was deleted", s.outside)
	}
}

// gone checks each of locs was deleted (A's legitimate deletions).
func (s *shared) gone(what string, locs []string) {
	s.t.Helper()
	for _, l := range locs {
		if s.exists(l) {
			s.t.Errorf("%s: %s is still there", what, l)
		}
	}
}

// recordsLeft are the file names in A's record directory.
func (s *shared) recordsLeft() []string {
	s.t.Helper()
	var out []string
	for p := range s.files(s.a) {
		if strings.Contains(p, "/_reactor/") {
			out = append(out, filepath.Base(p))
		}
	}
	return out
}

func (s *shared) logged(want string) {
	s.t.Helper()
	if !strings.Contains(s.logs.String(), want) {
		s.t.Errorf("no log line saying %q", want)
	}
}

func (s *shared) String() string { return fmt.Sprintf("%s warehouse", s.store) }
