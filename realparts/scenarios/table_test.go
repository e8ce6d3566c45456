package scenarios

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/icereactor/reactor/streamwriter"
)

// lake is one scenario's table in the REST catalog, seen from the test
// side through its own catalog handle (as another process would).
type lake struct {
	t     *testing.T
	s     *suite
	ctx   context.Context
	cat   catalog.Catalog
	ident table.Identifier
	name  string // namespace.table
}

// openLake opens a catalog handle for the table ns.tbl without creating
// it.
func (s *suite) openLake(t *testing.T, ns, tbl string) *lake {
	t.Helper()
	ctx := context.Background()
	cat, err := s.openCatalog(ctx)
	if err != nil {
		t.Fatalf("open the REST catalog: %v", err)
	}
	return &lake{t: t, s: s, ctx: ctx, cat: cat, ident: table.Identifier{ns, tbl}, name: ns + "." + tbl}
}

// createTable creates the scenario's table (format v2, partitioned by
// identity(category), the streamwriter schema) through the REST catalog.
func (l *lake) createTable(props iceberg.Properties) *table.Table {
	l.t.Helper()
	tbl, err := streamwriter.CreateTable(l.ctx, l.cat, l.ident, props)
	if err != nil {
		l.t.Fatal(err)
	}
	return tbl
}

func (l *lake) load() *table.Table {
	l.t.Helper()
	tbl, err := l.cat.LoadTable(l.ctx, l.ident)
	if err != nil {
		l.t.Fatalf("load %s: %v", l.name, err)
	}
	return tbl
}

// checkRows reads the whole table and compares it with what was written:
// the same row count and checksum, and no id twice.
func (l *lake) checkRows(want streamwriter.Tally) {
	l.t.Helper()
	c, err := streamwriter.Read(l.ctx, l.load())
	if err != nil {
		l.t.Fatal(err)
	}
	if c.Total != want {
		l.t.Errorf("%s holds %v; the writers committed %v", l.name, c.Total, want)
	}
	var dups []int64
	for id, n := range c.IDs {
		if n > 1 {
			dups = append(dups, id)
		}
	}
	if len(dups) > 0 {
		slices.Sort(dups)
		l.t.Errorf("%s: %d ids occur more than once, e.g. %v", l.name, len(dups), dups[:min(len(dups), 10)])
	}
}

// dataFiles lists the live data files of the current snapshot per
// partition value.
func (l *lake) dataFiles() map[string][]string {
	l.t.Helper()
	tbl := l.load()
	out := map[string][]string{}
	if tbl.CurrentSnapshot() == nil {
		return out
	}
	tasks, err := tbl.Scan().PlanFiles(l.ctx)
	if err != nil {
		l.t.Fatal(err)
	}
	for _, task := range tasks {
		cat := fmt.Sprint(task.File.Partition()[1000])
		out[cat] = append(out[cat], task.File.FilePath())
	}
	return out
}

// referenced is every file some part of the table's metadata still needs:
// the metadata files (current and log), every snapshot's manifest list,
// manifests, and the data and delete files their live entries name. The
// walk is the test's own, independent of reactor's.
func (l *lake) referenced() []string {
	l.t.Helper()
	tbl := l.load()
	fs, err := tbl.FS(l.ctx)
	if err != nil {
		l.t.Fatal(err)
	}
	set := map[string]bool{tbl.MetadataLocation(): true}
	for entry := range tbl.Metadata().PreviousFiles() {
		set[entry.MetadataFile] = true
	}
	for _, snap := range tbl.Metadata().Snapshots() {
		set[snap.ManifestList] = true
		manifests, err := snap.Manifests(fs)
		if err != nil {
			l.t.Fatalf("manifest list of snapshot %d: %v", snap.SnapshotID, err)
		}
		for _, m := range manifests {
			if set[m.FilePath()] {
				continue
			}
			set[m.FilePath()] = true
			entries, err := m.FetchEntries(fs, true)
			if err != nil {
				l.t.Fatalf("manifest %s: %v", m.FilePath(), err)
			}
			for _, e := range entries {
				set[e.DataFile().FilePath()] = true
			}
		}
	}
	out := make([]string, 0, len(set))
	for loc := range set {
		out = append(out, loc)
	}
	sort.Strings(out)
	return out
}

// appendedFiles are the data files of partition value category that
// append snapshots (the writer's commits) added, from the history still in
// the table's metadata.
func (l *lake) appendedFiles(category string) []string {
	l.t.Helper()
	tbl := l.load()
	fs, err := tbl.FS(l.ctx)
	if err != nil {
		l.t.Fatal(err)
	}
	var out []string
	for _, snap := range tbl.Metadata().Snapshots() {
		if snap.Summary == nil || snap.Summary.Operation != table.OpAppend {
			continue
		}
		manifests, err := snap.Manifests(fs)
		if err != nil {
			l.t.Fatal(err)
		}
		for _, m := range manifests {
			if m.SnapshotID() != snap.SnapshotID {
				continue
			}
			entries, err := m.FetchEntries(fs, true)
			if err != nil {
				l.t.Fatal(err)
			}
			for _, e := range entries {
				if e.Status() == iceberg.EntryStatusADDED && fmt.Sprint(e.DataFile().Partition()[1000]) == category {
					out = append(out, e.DataFile().FilePath())
				}
			}
		}
	}
	sort.Strings(out)
	return out
}

// checkReferencedExist fails naming every file the table needs that is
// gone from MinIO: the one thing maintenance must never cause.
func (l *lake) checkReferencedExist() {
	l.t.Helper()
	var missing []string
	refs := l.referenced()
	for _, loc := range refs {
		bucket, key, err := splitS3(loc)
		if err != nil {
			l.t.Fatal(err)
		}
		ok, err := l.s.objectExists(l.ctx, bucket, key)
		if err != nil {
			l.t.Fatal(err)
		}
		if !ok {
			missing = append(missing, loc)
		}
	}
	if len(missing) > 0 {
		l.t.Errorf("%s: %d of the %d files its metadata references are gone from MinIO: %v", l.name, len(missing), len(refs), missing)
	}
}

// unreferencedData lists the objects under the table's data/ that its
// metadata does not reference: files a lost commit attempt left behind.
func (l *lake) unreferencedData() []string {
	l.t.Helper()
	refs := map[string]bool{}
	for _, loc := range l.referenced() {
		refs[loc] = true
	}
	bucket, prefix := l.location()
	keys, err := l.s.listKeys(l.ctx, bucket, prefix+"data/")
	if err != nil {
		l.t.Fatal(err)
	}
	var out []string
	for _, k := range keys {
		if loc := "s3://" + bucket + "/" + k; !refs[loc] {
			out = append(out, loc)
		}
	}
	return out
}

// location is the table's location, s3://bucket/prefix.
func (l *lake) location() (bucket, prefix string) {
	l.t.Helper()
	bucket, prefix, err := splitS3(l.load().Location())
	if err != nil {
		l.t.Fatal(err)
	}
	return bucket, strings.TrimSuffix(prefix, "/") + "/"
}

// splitS3 splits s3://bucket/key. Keys are used as Iceberg wrote them:
// iceberg-go and S3FileIO both send the path as the S3 key unescaped.
func splitS3(loc string) (bucket, key string, err error) {
	rest, ok := strings.CutPrefix(loc, "s3://")
	if !ok {
		if rest, ok = strings.CutPrefix(loc, "s3a://"); !ok {
			return "", "", fmt.Errorf("%q is not an s3:// location", loc)
		}
	}
	bucket, key, ok = strings.Cut(rest, "/")
	if !ok || bucket == "" || key == "" {
		return "", "", fmt.Errorf("%q names no object", loc)
	}
	return bucket, key, nil
}

func (s *suite) objectExists(ctx context.Context, bucket, key string) (bool, error) {
	_, err := s.s3.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)})
	var nf *s3types.NotFound
	switch {
	case err == nil:
		return true, nil
	case errors.As(err, &nf):
		return false, nil
	}
	return false, fmt.Errorf("head s3://%s/%s: %w", bucket, key, err)
}

// listKeys lists every key under prefix.
func (s *suite) listKeys(ctx context.Context, bucket, prefix string) ([]string, error) {
	var keys []string
	p := s3.NewListObjectsV2Paginator(s.s3, &s3.ListObjectsV2Input{Bucket: aws.String(bucket), Prefix: aws.String(prefix)})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return nil, fmt.Errorf("list s3://%s/%s: %w", bucket, prefix, err)
		}
		for _, o := range page.Contents {
			keys = append(keys, aws.ToString(o.Key))
		}
	}
	return keys, nil
}
