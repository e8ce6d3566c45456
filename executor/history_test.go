package executor_test

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/apache/iceberg-go"
	iceio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"

	"github.com/icereactor/reactor/streamwriter"
)

// growHistory adds n snapshots to the table, each appending one copy of a
// one-row file to partition z (one manifest each, as a streaming writer's
// fast appends), staged 100 to a transaction: a writer's 1,000 separate
// commits take minutes here, most of it re-reading the growing metadata
// (docs/design.md#pitfall-metadata-size). It returns the tally of the rows it added.
func growHistory(t testing.TB, f *fixture, n int) streamwriter.Tally {
	t.Helper()
	id := f.writer.Written().Rows + 1 // the writer numbers rows from 1; no deletes here
	f.commit("z", 1)
	var src iceberg.DataFile
	tasks, err := f.load().Scan().PlanFiles(f.ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, task := range tasks {
		if task.File.Partition()[1000] == "z" {
			src = task.File
		}
	}
	// Through the table's IO: the warehouse may be s3:// (s3RTTEnv).
	fsys, err := f.load().FS(f.ctx)
	if err != nil {
		t.Fatal(err)
	}
	data, err := fsys.(iceio.ReadFileIO).ReadFile(src.FilePath())
	if err != nil {
		t.Fatal(err)
	}
	dir := src.FilePath()[:strings.LastIndex(src.FilePath(), "/")]
	var added streamwriter.Tally
	for start := 1; start < n; start += 100 {
		tbl := f.load()
		txn := tbl.NewTransaction()
		for i := start; i < min(start+100, n); i++ {
			dst := fmt.Sprintf("%s/filler-%05d.parquet", dir, i)
			if err := fsys.(iceio.WriteFileIO).WriteFile(dst, data); err != nil {
				t.Fatal(err)
			}
			b, err := iceberg.NewDataFileBuilder(tbl.Spec(), iceberg.EntryContentData, dst, iceberg.ParquetFile,
				src.Partition(), nil, nil, src.Count(), src.FileSizeBytes())
			if err != nil {
				t.Fatal(err)
			}
			if err := txn.AddDataFiles(f.ctx, []iceberg.DataFile{b.Build()}, nil, table.WithoutDuplicateCheck()); err != nil {
				t.Fatal(err)
			}
			added.Add(id, "z", streamwriter.Payload(id))
		}
		if _, err := txn.Commit(f.ctx); err != nil {
			t.Fatal(err)
		}
	}
	return added
}

// countingIO records every file reactor opens through a table's IO.
type countingIO struct {
	iceio.WriteFileIO
	mu     sync.Mutex
	opened []string
}

func (c *countingIO) Open(name string) (iceio.File, error) {
	c.mu.Lock()
	c.opened = append(c.opened, name)
	c.mu.Unlock()
	return c.WriteFileIO.Open(name)
}

// wrap is an interleavingCatalog.wrapFS.
func (c *countingIO) wrap(fs iceio.IO) iceio.IO {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.WriteFileIO == nil {
		c.WriteFileIO = fs.(iceio.WriteFileIO)
	}
	return c
}

// mark returns a position in the record; since lists what was opened after.
func (c *countingIO) mark() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.opened)
}

func (c *countingIO) since(mark int) []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.opened[mark:])
}
