package catalogs

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/icereactor/reactor/conflict"
	"github.com/icereactor/reactor/embedded/s3gateway"
	"github.com/icereactor/reactor/redact"
)

// TestHadoopObjectStoreRefused: a Hadoop catalog whose warehouse is on an
// object store is refused for writing, with iceberg-go's
// allow-unsafe-commits or without, and the error says why and what to do.
func TestHadoopObjectStoreRefused(t *testing.T) {
	for _, wh := range []string{"s3://lake/warehouse", "s3a://lake/wh", "gs://lake/wh", "abfs://c@acct.dfs.core.windows.net/wh"} {
		for _, unsafe := range []bool{false, true} {
			props := iceberg.Properties{"type": "hadoop", "warehouse": wh}
			if unsafe {
				props[allowUnsafeCommits] = "true"
			}
			for _, open := range []func(context.Context, Config) (*Catalog, error){Open, OpenWaiting} {
				_, err := open(context.Background(), Config{Name: "h", Props: props, Logger: slog.New(slog.DiscardHandler)})
				if !errors.Is(err, ErrHadoopObjectStore) || !errors.Is(err, ErrConfig) {
					t.Fatalf("%s (allow-unsafe-commits %v): err = %v, want ErrHadoopObjectStore", wh, unsafe, err)
				}
				for _, want := range []string{
					"hadoop catalog on an object store refused: the warehouse " + redact.String(wh) + " is on an object store",
					"commits by check, copy and delete, which is not atomic",
					"a commit reported as done can be lost, one reported as a conflict can have landed",
					"reactor deletes the files of an attempt that lost a conflict",
					"allow-unsafe-commits does not change that",
					"Use a catalog with atomic commits (hive, glue, sql or rest)",
					"plan, health and dry runs may read it as it is",
					"set --accept-hadoop-object-store-risk as well (docs/operations.md#hadoop-on-an-object-store)",
				} {
					if !strings.Contains(err.Error(), want) {
						t.Errorf("%s: the error lacks %q:\n%v", wh, want, err)
					}
				}
			}
		}
	}
}

// TestHadoopLocal: on a local file system the Hadoop catalog opens and
// commits without any setting (a hard link makes its commit atomic), and a
// lost race is a conflict.
func TestHadoopLocal(t *testing.T) {
	ctx := context.Background()
	wh := t.TempDir()
	cat, err := Open(ctx, Config{Name: "h", Logger: slog.New(slog.DiscardHandler),
		Props: iceberg.Properties{"type": "hadoop", "warehouse": "file://" + wh}})
	if err != nil {
		t.Fatal(err)
	}
	defer cat.Close()
	if err := cat.CreateNamespace(ctx, table.Identifier{"db"}, nil); err != nil {
		t.Fatal(err)
	}
	tbl, err := cat.CreateTable(ctx, table.Identifier{"db", "t"}, testSchema)
	if err != nil {
		t.Fatal(err)
	}
	// Another writer has claimed the next version.
	claim := filepath.Join(wh, "db", "t", "metadata", "v2.metadata.json.claim")
	if err := os.WriteFile(claim, []byte("{}"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := setProperty(ctx, tbl, "k", "v"); !conflict.Is(err) {
		t.Fatalf("commit against a claimed version: err = %v, want a conflict", err)
	}
	if err := os.Remove(claim); err != nil {
		t.Fatal(err)
	}
	if _, err := setProperty(ctx, tbl, "k", "v"); err != nil {
		t.Fatal(err)
	}
}

// TestHadoopObjectStore: on an object store (the embedded S3 gateway) a
// read-only open needs no setting and refuses commits; with the risk
// accepted the catalog commits, and a conflict it reports comes back as
// an unknown outcome (it may have landed), not a conflict, so that the
// executor keeps the attempt's files.
func TestHadoopObjectStore(t *testing.T) {
	ctx := context.Background()
	gw, err := s3gateway.Start(ctx, s3gateway.Options{RootDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer gw.Close()
	if err := gw.CreateBucket(ctx, "lake"); err != nil {
		t.Fatal(err)
	}
	props := iceberg.Properties(gw.IcebergProperties())
	props["type"] = "hadoop"
	props["warehouse"] = "s3://lake/wh"

	writable := maps.Clone(props)
	writable[allowUnsafeCommits] = "true"
	cat, err := Open(ctx, Config{Name: "h", Props: writable, AcceptHadoopObjectStoreRisk: true, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer cat.Close()
	if err := cat.CreateNamespace(ctx, table.Identifier{"db"}, nil); err != nil {
		t.Fatal(err)
	}
	tbl, err := cat.CreateTable(ctx, table.Identifier{"db", "t"}, testSchema)
	if err != nil {
		t.Fatal(err)
	}
	if tbl, err = setProperty(ctx, tbl, "k", "1"); err != nil {
		t.Fatal(err)
	}
	// Another writer has claimed the next version (v3).
	if _, err := gw.Client().PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("lake"),
		Key: aws.String("wh/db/t/metadata/v3.metadata.json.claim"), Body: bytes.NewReader([]byte("{}"))}); err != nil {
		t.Fatal(err)
	}
	_, err = setProperty(ctx, tbl, "k", "2")
	if !errors.Is(err, ErrUnknownOutcome) || conflict.Is(err) || !strings.Contains(err.Error(), "which may have landed") {
		t.Fatalf("a conflict on an object store: err = %v, want ErrUnknownOutcome and no conflict", err)
	}

	// Read only: no setting, no allow-unsafe-commits; reads work,
	// changes are refused.
	ro, err := Open(ctx, Config{Name: "h", Props: props, ReadOnly: true, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	got, err := ro.LoadTable(ctx, table.Identifier{"db", "t"})
	if err != nil {
		t.Fatal(err)
	}
	if got.Properties()["k"] != "1" {
		t.Errorf("read-only load: k = %q, want 1", got.Properties()["k"])
	}
	if _, err := setProperty(ctx, got, "k", "3"); !errors.Is(err, ErrReadOnly) {
		t.Fatalf("a commit through a read-only catalog: err = %v, want ErrReadOnly", err)
	}
	if err := ro.CreateNamespace(ctx, table.Identifier{"other"}, nil); !errors.Is(err, ErrReadOnly) {
		t.Fatalf("create namespace read-only: err = %v, want ErrReadOnly", err)
	}
}
