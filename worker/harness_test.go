package worker

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/icereactor/reactor/catalogs"
	"github.com/icereactor/reactor/embedded"
	"github.com/icereactor/reactor/events"
	"github.com/icereactor/reactor/streamwriter"
	"github.com/icereactor/reactor/thresholds"
	"github.com/icereactor/reactor/triggers"
)

// harness is the real thing, in-process: an embedded NATS server with
// JetStream, the SQLite catalog shared by a streaming writer and reactor
// (each with its own catalog handle, as two processes would have), and a
// reactor worker.
type harness struct {
	t       testing.TB
	ctx     context.Context
	dir     string
	nats    *embedded.NATS
	conn    *nats.Conn
	js      jetstream.JetStream
	cat     catalog.Catalog
	props   iceberg.Properties
	ident   table.Identifier
	writer  *streamwriter.Writer
	logs    *syncBuffer
	worker  *Worker
	cfgYAML string
	bucket  string
	// workerCfg adjusts the worker's configuration before each start.
	workerCfg func(*Config)
	// started counts the workers started: each gets a replica name of
	// its own unless workerCfg names it (one test process, one host name).
	started int
}

type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

const testThresholds = `
defaults:
  target_file_size: 1MiB
  small_file_count: 5
  min_input_files: 5
  quiet_period: 100ms
  cooldown: 500ms
  conflict_cooldown: 2s
  commit_retry_time: 30s
`

func newHarness(t testing.TB, cfgYAML string, tableProps iceberg.Properties) *harness {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	h := &harness{t: t, ctx: ctx, dir: t.TempDir(), ident: table.Identifier{"db", "events"}, logs: &syncBuffer{}, cfgYAML: cfgYAML}
	var err error
	h.nats, err = embedded.StartNATS(embedded.NATSOptions{StoreDir: h.dir + "/nats"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(h.nats.Shutdown)
	h.conn, err = nats.Connect(h.nats.URL())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(h.conn.Close)
	h.js, err = jetstream.New(h.conn)
	if err != nil {
		t.Fatal(err)
	}
	if err := triggers.EnsureStreams(ctx, h.js, triggers.CommitOptions{}); err != nil {
		t.Fatal(err)
	}
	h.props, err = embedded.CatalogProperties(h.dir + "/catalog")
	if err != nil {
		t.Fatal(err)
	}
	h.cat, err = embedded.OpenCatalog(ctx, h.dir+"/catalog")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := streamwriter.CreateTable(ctx, h.cat, h.ident, tableProps); err != nil {
		t.Fatal(err)
	}
	h.writer = streamwriter.New(h.cat, h.ident, h.publish)
	return h
}

func (h *harness) publish(ctx context.Context, ev events.CommitEvent) error {
	data, err := ev.Encode()
	if err != nil {
		return err
	}
	_, err = h.js.Publish(ctx, "iceberg.commits."+ev.Namespace+"."+ev.Table, data)
	return err
}

func (h *harness) publishRaw(subject, payload string) {
	h.t.Helper()
	if _, err := h.js.Publish(h.ctx, subject, []byte(payload)); err != nil {
		h.t.Fatal(err)
	}
}

// start starts (or restarts) the reactor worker.
func (h *harness) start() *Worker {
	h.t.Helper()
	cfg, err := thresholds.Parse([]byte(h.cfgYAML))
	if err != nil {
		h.t.Fatal(err)
	}
	wc := Config{
		NATSURL:    h.nats.URL(),
		DataDir:    h.dir,
		Catalog:    catalogs.Config{Name: "reactor", Props: h.props},
		Thresholds: cfg,
		Logger:     h.logger(),
	}
	if h.workerCfg != nil {
		h.workerCfg(&wc)
	}
	h.started++
	if wc.Leases.Replica == "" {
		wc.Leases.Replica = fmt.Sprintf("worker-%d", h.started)
	}
	w, err := Start(h.ctx, wc)
	if err != nil {
		h.t.Fatal(err)
	}
	h.worker = w
	h.t.Cleanup(w.Close)
	return w
}

func (h *harness) commit(category string, rows int) int64 {
	h.t.Helper()
	id, err := h.writer.Commit(h.ctx, category, rows)
	if err != nil {
		h.t.Fatal(err)
	}
	return id
}

func (h *harness) load() *table.Table {
	h.t.Helper()
	tbl, err := h.cat.LoadTable(h.ctx, h.ident)
	if err != nil {
		h.t.Fatal(err)
	}
	return tbl
}

// files lists the live data files per partition value.
func (h *harness) files() map[string][]string {
	h.t.Helper()
	tbl := h.load()
	out := map[string][]string{}
	if tbl.CurrentSnapshot() == nil {
		return out
	}
	tasks, err := tbl.Scan().PlanFiles(h.ctx)
	if err != nil {
		h.t.Fatal(err)
	}
	for _, task := range tasks {
		cat := fmt.Sprint(task.File.Partition()[1000])
		out[cat] = append(out[cat], task.File.FilePath())
	}
	return out
}

// bytes sums the sizes of the live data files of one partition.
func (h *harness) bytes(category string) int64 {
	h.t.Helper()
	tasks, err := h.load().Scan().PlanFiles(h.ctx)
	if err != nil {
		h.t.Fatal(err)
	}
	var n int64
	for _, task := range tasks {
		if fmt.Sprint(task.File.Partition()[1000]) == category {
			n += task.File.FileSizeBytes()
		}
	}
	return n
}

func (h *harness) contents() streamwriter.Contents {
	h.t.Helper()
	c, err := streamwriter.Read(h.ctx, h.load())
	if err != nil {
		h.t.Fatal(err)
	}
	return c
}

// eventually polls cond until it holds. The deadline is a hang guard, not a
// performance assertion: it is far above what any condition needs.
func (h *harness) eventually(what string, cond func() bool) {
	h.t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			h.t.Fatalf("gave up waiting for: %s\nlogs:\n%s", what, h.logs.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// deadLetters reads every message on the dead-letter stream.
func (h *harness) deadLetters() []events.DeadLetter {
	h.t.Helper()
	stream, err := h.js.Stream(h.ctx, triggers.DefaultDeadLetterStream)
	if err != nil {
		h.t.Fatal(err)
	}
	info, err := stream.Info(h.ctx)
	if err != nil {
		h.t.Fatal(err)
	}
	var out []events.DeadLetter
	for seq := info.State.FirstSeq; seq <= info.State.LastSeq && info.State.Msgs > 0; seq++ {
		msg, err := stream.GetMsg(h.ctx, seq)
		if err != nil {
			continue
		}
		dl, err := events.DecodeDeadLetter(msg.Header, msg.Data)
		if err != nil {
			h.t.Fatalf("dead letter %d: %v", seq, err)
		}
		out = append(out, dl)
	}
	return out
}
