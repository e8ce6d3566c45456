package executor_test

import (
	"errors"
	iofs "io/fs"
	"log/slog"
	"maps"
	"path"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/apache/iceberg-go/catalog"
	iceio "github.com/apache/iceberg-go/io"

	"github.com/icereactor/reactor/embedded"
	"github.com/icereactor/reactor/embedded/s3gateway"
	"github.com/icereactor/reactor/executor"
)

// s3Fixture is newFixture on the embedded S3 gateway: object keys, the
// store's own listing spelling, s3:// locations in the metadata.
func s3Fixture(t *testing.T) *fixture {
	t.Helper()
	gw, err := s3gateway.Start(t.Context(), s3gateway.Options{RootDir: filepath.Join(t.TempDir(), "s3")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = gw.Close() })
	if err := gw.CreateBucket(t.Context(), "lake"); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	props, err := embedded.CatalogProperties(dir)
	if err != nil {
		t.Fatal(err)
	}
	maps.Copy(props, gw.IcebergProperties())
	props["warehouse"] = "s3://lake/" + filepath.Base(dir)
	cat, err := catalog.Load(t.Context(), embedded.CatalogName, props)
	if err != nil {
		t.Fatal(err)
	}
	return newFixtureOn(t, cat, nil)
}

// objectNames are the base names of the objects under the table's data.
func (f *fixture) objectNames() map[string]bool {
	f.t.Helper()
	tbl := f.load()
	fs, err := tbl.FS(f.ctx)
	if err != nil {
		f.t.Fatal(err)
	}
	out := map[string]bool{}
	err = fs.(iceio.ListableIO).WalkDir(tbl.Location()+"/data", func(p string, d iofs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, iofs.ErrNotExist) {
				return iofs.SkipAll
			}
			return err
		}
		if !d.IsDir() {
			out[path.Base(p)] = true
		}
		return nil
	})
	if err != nil {
		f.t.Fatal(err)
	}
	return out
}

// On object storage the outputs are found by listing (the store's own
// spelling of a key) and deleted by the table's spelling: exactly the
// killed job's, and none of a job that committed.
func TestKilledRewriteOutputsOnObjectStorage(t *testing.T) {
	f := s3Fixture(t)
	for range 6 {
		f.commit("a", 10)
	}
	before, live := f.contents(), f.objectNames()
	yaml := "defaults: {target_file_size: 1MiB, small_file_count: 5}"
	killed := f.leasedExecutor(slog.New(slog.DiscardHandler))
	executor.CrashAt(killed, "before-commit")
	killed.Run(f.ctx, f.job(yaml, "a"))
	if n := len(f.objectNames()) - len(live); n != 1 {
		t.Fatalf("the killed job left %d outputs, want 1", n)
	}
	next, _ := f.nextOwner()
	if rec, err := next.RecoverOutputs(f.ctx, ident); err != nil || rec.Deleted != 1 {
		t.Fatalf("recovery %+v %v; want the output deleted", rec, err)
	}
	if got := f.objectNames(); !maps.Equal(got, live) {
		t.Errorf("objects after recovery: %d, want exactly the %d live ones", len(got), len(live))
	}
	// Committed, then killed before the intent went: nothing deleted.
	executor.CrashAt(killed, "after-commit")
	killed.Run(f.ctx, f.job(yaml, "a"))
	committed := f.objectNames()
	if rec, err := next.RecoverOutputs(f.ctx, ident); err != nil || rec.Deleted != 0 || rec.Kept != 1 {
		t.Fatalf("recovery after a commit %+v %v; want the output kept", rec, err)
	}
	if got := f.objectNames(); !maps.Equal(got, committed) {
		t.Errorf("objects after recovery: %d, want the %d there before", len(got), len(committed))
	}
	if after := f.contents(); !reflect.DeepEqual(before, after) {
		t.Errorf("contents changed: %+v -> %+v", before.Total, after.Total)
	}
	if len(f.dataFiles("a")) != 1 || len(f.outputIntents()) != 0 {
		t.Errorf("%d live files, %d intents; want 1 and 0", len(f.dataFiles("a")), len(f.outputIntents()))
	}
}
