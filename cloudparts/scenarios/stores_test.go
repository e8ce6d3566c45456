package scenarios

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	iceio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"

	"github.com/icereactor/reactor/embedded"
	// gs:// and abfs:// FileIOs, as reactor registers them.
	_ "github.com/icereactor/reactor/objectio"
	"github.com/icereactor/reactor/streamwriter"
)

// Azurite's well-known development account (public, documented by
// Microsoft for the emulator).
const (
	azuriteAccount = "devstoreaccount1"
	azuriteKey     = "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="
)

// store is a warehouse on one of the emulators: where it is and the
// catalog properties that reach it.
type store struct {
	name      string
	warehouse string
	props     iceberg.Properties
}

// gcsStore creates a bucket on fake-gcs-server for the scenario.
func (s *suite) gcsStore(t *testing.T, bucket string) store {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, s.gcsEP+"/storage/v1/b?project=cloudparts",
		strings.NewReader(fmt.Sprintf(`{"name":%q}`, bucket)))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("create GCS bucket %s: %s", bucket, resp.Status)
	}
	return store{name: "gcs", warehouse: "gs://" + bucket + "/wh",
		props: iceberg.Properties{"gcs.service.host": s.gcsEP + "/storage/v1/", "gcs.no-auth": "true"}}
}

// azureStore creates a container on Azurite for the scenario; the
// warehouse is spelt as ADLS Gen2 (abfss://, the dfs endpoint), which
// reaches the same blobs.
func (s *suite) azureStore(t *testing.T, container string) store {
	t.Helper()
	cred, err := azblob.NewSharedKeyCredential(azuriteAccount, azuriteKey)
	if err != nil {
		t.Fatal(err)
	}
	cl, err := azblob.NewClientWithSharedKeyCredential(s.azEP+"/"+azuriteAccount, cred, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cl.CreateContainer(context.Background(), container, nil); err != nil {
		t.Fatalf("create Azure container %s: %v", container, err)
	}
	return store{name: "azure", warehouse: "abfss://" + container + "@" + azuriteAccount + ".dfs.core.windows.net/wh",
		props: iceberg.Properties{
			"adls.auth.shared-key.account.name": azuriteAccount,
			"adls.auth.shared-key.account.key":  azuriteKey,
			"adls.endpoint":                     strings.TrimPrefix(s.azEP, "http://"),
			"adls.protocol":                     "http",
		}}
}

// lake is one scenario's SQLite catalog with its warehouse on a store.
type lake struct {
	t     *testing.T
	s     *suite
	dir   string
	st    store
	props iceberg.Properties
	cat   catalog.Catalog
	io    iceio.IO
}

func (s *suite) openLake(t *testing.T, st store) *lake {
	t.Helper()
	ctx := context.Background()
	dir := filepath.Join(s.work, strings.NewReplacer("/", "_", " ", "_").Replace(t.Name()))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	props, err := embedded.CatalogProperties(dir)
	if err != nil {
		t.Fatal(err)
	}
	props["warehouse"] = st.warehouse
	for k, v := range st.props {
		props[k] = v
	}
	cat, err := catalog.Load(ctx, "reactor", props) // reactor's default --catalog-name
	if err != nil {
		t.Fatalf("open the catalog: %v", err)
	}
	fsys, err := iceio.LoadFS(ctx, props, st.warehouse)
	if err != nil {
		t.Fatalf("open the %s warehouse: %v", st.name, err)
	}
	return &lake{t: t, s: s, dir: dir, st: st, props: props, cat: cat, io: fsys}
}

// oneShot is what a one-shot command prints with --json.
type oneShot struct {
	Outcome string           `json:"outcome"`
	Error   string           `json:"error"`
	Counts  map[string]int64 `json:"counts"`
	Orphans []struct {
		Location string `json:"location"`
	} `json:"orphans"`
}

// reactor runs a one-shot command of the reactor binary on the lake's
// catalog with the thresholds given, and decodes its --json result.
func (l *lake) reactor(thresholdsYAML string, args ...string) oneShot {
	l.t.Helper()
	th := filepath.Join(l.dir, "thresholds.yaml")
	if err := os.WriteFile(th, []byte(thresholdsYAML), 0o644); err != nil {
		l.t.Fatal(err)
	}
	argv := append(slices.Clone(args), "--json", "--thresholds", th, "--data-dir", filepath.Join(l.dir, "reactor-data"))
	keys := make([]string, 0, len(l.props))
	for k := range l.props {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		argv = append(argv, "--catalog-prop", k+"="+l.props[k])
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, l.s.reactorBin, argv...)
	cmd.Env = baseEnv()
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if err := os.WriteFile(filepath.Join(l.dir, "reactor-"+args[0]+".log"), stderr.Bytes(), 0o644); err != nil {
		l.t.Log(err)
	}
	var out oneShot
	if jerr := json.Unmarshal(stdout.Bytes(), &out); jerr != nil {
		l.t.Fatalf("reactor %s: %v (%v)\nstdout: %s\nstderr: %s", strings.Join(args, " "), err, jerr, stdout.String(), tail(stderr.String(), 30))
	}
	if err != nil || out.Outcome == "failed" {
		l.t.Fatalf("reactor %s: %v: %s\nstderr: %s", strings.Join(args, " "), err, out.Error, tail(stderr.String(), 30))
	}
	return out
}

func tail(s string, lines int) string {
	all := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return strings.Join(all[max(len(all)-lines, 0):], "\n")
}

// checkRows reads the whole table and compares it with what was written.
func (l *lake) checkRows(ident table.Identifier, want streamwriter.Tally) {
	l.t.Helper()
	tbl, err := l.cat.LoadTable(context.Background(), ident)
	if err != nil {
		l.t.Fatal(err)
	}
	c, err := streamwriter.Read(context.Background(), tbl)
	if err != nil {
		l.t.Fatal(err)
	}
	if c.Total != want {
		l.t.Fatalf("the table holds %v; the writer committed %v", c.Total, want)
	}
}

// dataFiles lists the data files the table's current snapshot references.
func (l *lake) dataFiles(ident table.Identifier) []string {
	l.t.Helper()
	ctx := context.Background()
	tbl, err := l.cat.LoadTable(ctx, ident)
	if err != nil {
		l.t.Fatal(err)
	}
	tasks, err := tbl.Scan().PlanFiles(ctx)
	if err != nil {
		l.t.Fatal(err)
	}
	var out []string
	for _, task := range tasks {
		out = append(out, task.File.FilePath())
	}
	slices.Sort(out)
	return out
}

// exists stats one object on the store.
func (l *lake) exists(loc string) bool {
	l.t.Helper()
	_, err := l.io.(iceio.StatIO).Stat(loc)
	if errors.Is(err, fs.ErrNotExist) {
		return false
	}
	if err != nil {
		l.t.Fatalf("stat %s: %v", loc, err)
	}
	return true
}

func (l *lake) put(loc string, body []byte) {
	l.t.Helper()
	if err := l.io.(iceio.WriteFileIO).WriteFile(loc, body); err != nil {
		l.t.Fatalf("write %s: %v", loc, err)
	}
}

// storeThresholds makes every job due on a small table and lets the
// margins pass within seconds: min_reader_margin (expiry's deferred
// deletion) and the orphan margin are 3 s.
const storeThresholds = `defaults:
  target_file_size: 64MiB
  min_input_files: 2
  small_file_count: 2
  min_reader_margin: 3s
  orphan_margin: 3s
  orphan_margin_floor: 3s
  orphan_delete: true
`

// TestGCSWarehouse: compaction, expiry with its deferred deletion pass,
// and orphan cleanup through the reactor binary on a gs:// warehouse.
func TestGCSWarehouse(t *testing.T) {
	t.Parallel()
	s := need(t)
	s.storeScenario(t, s.gcsStore(t, "lake-gcs"))
}

// TestAzureWarehouse: the same on an abfss:// warehouse.
func TestAzureWarehouse(t *testing.T) {
	t.Parallel()
	s := need(t)
	s.storeScenario(t, s.azureStore(t, "lake-azure"))
}

func (s *suite) storeScenario(t *testing.T, st store) {
	ctx := context.Background()
	l := s.openLake(t, st)
	ident := table.Identifier{"db", "events"}
	if err := l.cat.CreateNamespace(ctx, table.Identifier{"db"}, nil); err != nil {
		t.Fatal(err)
	}
	tbl, err := streamwriter.CreateTable(ctx, l.cat, ident, nil)
	if err != nil {
		t.Fatal(err)
	}
	loc := strings.TrimRight(tbl.Location(), "/")
	if !strings.HasPrefix(loc, st.warehouse) {
		t.Fatalf("table location %s is not under the warehouse %s", loc, st.warehouse)
	}
	w := streamwriter.New(l.cat, ident, nil)
	const commits, partitions = 24, 4
	for i := range commits {
		if _, err := w.Commit(ctx, fmt.Sprintf("p%d", i%partitions), 50); err != nil {
			t.Fatal(err)
		}
	}
	small := l.dataFiles(ident)
	if len(small) != commits {
		t.Fatalf("the writer left %d data files, want %d", len(small), commits)
	}

	// Compaction: one file per partition, rows exact, the small files
	// still there (only expiry's pass deletes them).
	out := l.reactor(storeThresholds, "compact", "db.events")
	if out.Counts["rewritten_data_files_count"] != commits || out.Counts["added_data_files_count"] != partitions {
		t.Fatalf("compact: %+v; want %d files rewritten into %d", out.Counts, commits, partitions)
	}
	l.checkRows(ident, w.Written())
	compacted := l.dataFiles(ident)
	if len(compacted) != partitions {
		t.Fatalf("after compaction %d data files, want %d", len(compacted), partitions)
	}
	for _, f := range small {
		if !l.exists(f) {
			t.Fatalf("compaction deleted %s", f)
		}
	}

	// Expiry unlinks the small files and defers their deletion by
	// min_reader_margin; the next run after it deletes them.
	out = l.reactor(storeThresholds, "expire", "db.events", "--older-than", "1ms", "--retain-last", "1")
	if out.Counts["expired_snapshots_count"] < commits || out.Counts["deletion_deferred_files_count"] == 0 {
		t.Fatalf("expire: %+v; want %d snapshots expired and their files deferred", out.Counts, commits)
	}
	for _, f := range small {
		if !l.exists(f) {
			t.Fatalf("expiry deleted %s before min_reader_margin", f)
		}
	}
	time.Sleep(4 * time.Second)
	out = l.reactor(storeThresholds, "expire", "db.events", "--older-than", "1ms", "--retain-last", "1")
	if out.Counts["deleted_data_files_count"] != commits {
		t.Fatalf("the deletion pass: %+v; want %d data files deleted", out.Counts, commits)
	}
	for _, f := range small {
		if l.exists(f) {
			t.Fatalf("the deletion pass left %s", f)
		}
	}
	l.checkRows(ident, w.Written())

	// Orphan cleanup lists the table's location (a few directories at
	// once), stats each candidate for its age and deletes the one orphan;
	// a file of a table whose name merely extends this one's is not this
	// table's, and nothing the table references goes.
	orphan := loc + "/data/category=p0/00000-orphan.parquet"
	neighbour := strings.TrimSuffix(loc, "events") + "events_old/data/x.parquet"
	l.put(orphan, []byte("no snapshot references this"))
	l.put(neighbour, []byte("another table's file"))
	time.Sleep(4 * time.Second)
	out = l.reactor(storeThresholds, "orphans", "db.events", "--dry-run=false")
	if out.Counts["deleted_files_count"] != 1 || len(out.Orphans) != 1 || !strings.HasSuffix(out.Orphans[0].Location, "/00000-orphan.parquet") {
		t.Fatalf("orphans: %+v; want the one orphan deleted", out)
	}
	if l.exists(orphan) {
		t.Fatalf("orphan cleanup left %s", orphan)
	}
	if !l.exists(neighbour) {
		t.Fatalf("orphan cleanup deleted %s, outside the table", neighbour)
	}
	for _, f := range l.dataFiles(ident) {
		if !l.exists(f) {
			t.Fatalf("orphan cleanup deleted the table's %s", f)
		}
	}
	l.checkRows(ident, w.Written())
}
