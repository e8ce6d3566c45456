package status_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/apache/iceberg-go/table"

	"github.com/icereactor/reactor/embedded"
	"github.com/icereactor/reactor/jobkind"
	"github.com/icereactor/reactor/planner"
	"github.com/icereactor/reactor/streamwriter"
	"github.com/icereactor/reactor/thresholds"
	"github.com/icereactor/reactor/worker"
)

// The browser test's policy: a partition is compacted at 5 small files.
const browserThresholds = `
namespaces: [db]
defaults:
  target_file_size: 1MiB
  small_file_count: 5
  min_input_files: 5
  quiet_period: 100ms
  cooldown: 500ms
`

// A table name and a partition value tablename and the catalog allow,
// made of markup.
const (
	hostileName      = `<img src=x onerror=alert(1)>"q"&`
	hostilePartition = `<i>&"x"`
)

// chromium finds the browser, or skips (fails under
// REACTOR_REQUIRE_TOOLS=1, as in CI).
func chromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("REACTOR_REQUIRE_TOOLS") == "1" {
		t.Fatal("chromium is not installed and REACTOR_REQUIRE_TOOLS=1 (apt-get install chromium)")
	}
	t.Skip("chromium is not installed: the status page's browser test needs it (apt-get install chromium)")
	return ""
}

// browse runs headless Chromium on url with args (--dump-dom,
// --screenshot=...) and returns its standard output.
func browse(t *testing.T, bin, profile string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	all := append([]string{"--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-dev-shm-usage",
		"--user-data-dir=" + profile}, args...)
	cmd := exec.CommandContext(ctx, bin, all...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("chromium %v: %v\n%s", args, err, stderr.String())
	}
	return stdout.String()
}

// TestStatusPageInBrowser runs a real worker (embedded NATS and SQLite
// catalog) beside a writer until a partition was compacted, then loads
// every page in headless Chromium and checks that the rendered page holds
// the worker's figures. It saves a screenshot of / in t.TempDir(), or, with
// REACTOR_UPDATE_SCREENSHOT=1, as docs/status-page.png.
func TestStatusPageInBrowser(t *testing.T) {
	bin := chromium(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	dir := t.TempDir()
	cat, err := embedded.OpenCatalog(ctx, filepath.Join(dir, "catalog"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if c, ok := cat.(io.Closer); ok {
			_ = c.Close()
		}
	})
	// db.events gets a compaction; db.clicks stays below the threshold;
	// the third's name and partition value are markup, which must arrive
	// as text.
	hot, quiet, hostile := table.Identifier{"db", "events"}, table.Identifier{"db", "clicks"}, table.Identifier{"db", hostileName}
	for _, id := range []table.Identifier{hot, quiet, hostile} {
		if _, err := streamwriter.CreateTable(ctx, cat, id, nil); err != nil {
			t.Fatal(err)
		}
	}
	th, err := thresholds.Parse([]byte(browserThresholds))
	if err != nil {
		t.Fatal(err)
	}
	w, err := worker.Start(ctx, worker.Config{DataDir: dir, Thresholds: th,
		HTTPAddr: "127.0.0.1:0", Logger: slog.New(slog.DiscardHandler), Leases: worker.LeaseConfig{Replica: "browser-test"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Close)
	// The subject only routes the event (a NATS subject takes no spaces);
	// the table is named in the event.
	writer := func(id table.Identifier) *streamwriter.Writer {
		return streamwriter.New(cat, id, streamwriter.JetStreamPublisher(w.JetStream(), "iceberg.commits.browser.test", nil))
	}
	events, clicks := writer(hot), writer(quiet)
	if _, err := writer(hostile).Commit(ctx, hostilePartition, 5); err != nil {
		t.Fatal(err)
	}
	for i := range 7 {
		if _, err := events.Commit(ctx, "a", 20); err != nil {
			t.Fatal(err)
		}
		if i < 2 {
			if _, err := clicks.Commit(ctx, "b", 20); err != nil {
				t.Fatal(err)
			}
		}
	}
	src := w.Status()
	settled := func() bool {
		jobs := src.Jobs()
		last, ok := jobs.Last["db.events"]
		_, quietSeen := src.Health("db.clicks")
		_, hostileSeen := src.Health("db." + hostileName)
		return ok && last.Kind == jobkind.Compact.String() && last.Outcome == "succeeded" && len(jobs.Active) == 0 && quietSeen && hostileSeen
	}
	for deadline := time.Now().Add(2 * time.Minute); !settled(); time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("no compaction of db.events within two minutes; jobs: %+v", src.Jobs())
		}
	}
	hEvents, _ := src.Health("db.events")
	hClicks, _ := src.Health("db.clicks")
	_, parts := src.TableCounters("db.events")
	_, clickParts := src.TableCounters("db.clicks")
	// ideal is ceil(bytes/target) per partition.
	ideal := func(parts []planner.PartitionCounters) int {
		n := 0
		for _, p := range parts {
			n += int((p.Bytes + hEvents.TargetFileSize - 1) / hEvents.TargetFileSize)
		}
		return n
	}
	base := "http://" + w.HTTPAddr()
	profile := t.TempDir()

	overview := browse(t, bin, profile, "--dump-dom", base+"/")
	for _, want := range []string{
		`<a href="/tables/db.events">db.events</a>`, `<a href="/tables/db.clicks">db.clicks</a>`,
		fmt.Sprintf(`<td class="n">%d / %d</td><td class="n">%d</td><td class="n">%d</td><td class="n">%d</td>
<td class="n">%d</td>`, hEvents.DataFiles, ideal(parts), hEvents.SmallFiles, hEvents.TinyFiles, hEvents.DeleteFiles, hEvents.Snapshots),
		fmt.Sprintf(`<td class="n">%d / %d</td>`, hClicks.DataFiles, ideal(clickParts)),
		"<b>compact</b> succeeded", "nothing due", "browser-test",
		`>db.&lt;img src=x onerror=alert(1)&gt;"q"&amp;</a>`,
	} {
		if !strings.Contains(overview, want) {
			t.Errorf("/ lacks %q\n%s", want, overview)
		}
	}
	page := browse(t, bin, profile, "--dump-dom", base+"/tables/"+url.PathEscape("db.events"))
	wantTable := []string{`<h1 id="name">db.events</h1>`, "rewritten_data_files_count", "What is due, and why", "Pending deletions (0)"}
	for _, p := range parts {
		wantTable = append(wantTable, fmt.Sprintf(`<tr data-partition="%s">`, p.Key),
			fmt.Sprintf(`<td class="mono">%s</td><td class="n">%d</td>`, p.Key, p.DataFiles))
	}
	for _, want := range wantTable {
		if !strings.Contains(page, want) {
			t.Errorf("/tables/db.events lacks %q\n%s", want, page)
		}
	}
	page = browse(t, bin, profile, "--dump-dom", base+"/tables/"+url.PathEscape("db."+hostileName))
	for _, want := range []string{`<h1 id="name">db.&lt;img src=x onerror=alert(1)&gt;"q"&amp;</h1>`, `category=&lt;i&gt;&amp;"x"`} {
		if !strings.Contains(page, want) {
			t.Errorf("the hostile table's page lacks %q\n%s", want, page)
		}
	}
	for _, dom := range []string{overview, page} {
		if strings.Contains(dom, "<img") || strings.Contains(dom, "<i>") {
			t.Errorf("markup from a table name or partition value became an element:\n%s", dom)
		}
	}
	jobs := browse(t, bin, profile, "--dump-dom", base+"/jobs")
	for _, want := range []string{"Running (0)", "Queued (0)", "<b>compact</b>", `<a href="/tables/db.events">db.events</a>`} {
		if !strings.Contains(jobs, want) {
			t.Errorf("/jobs lacks %q\n%s", want, jobs)
		}
	}
	missing := browse(t, bin, profile, "--dump-dom", base+"/tables/db.nope")
	if !strings.Contains(missing, "unknown table") {
		t.Errorf("/tables/db.nope: %s", missing)
	}

	shot := filepath.Join(t.TempDir(), "status-page.png")
	if os.Getenv("REACTOR_UPDATE_SCREENSHOT") == "1" {
		shot, err = filepath.Abs(filepath.Join("..", "docs", "status-page.png"))
		if err != nil {
			t.Fatal(err)
		}
	}
	browse(t, bin, profile, "--screenshot="+shot, "--window-size=1280,900", "--hide-scrollbars", base+"/")
	png, err := os.ReadFile(shot)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(png, []byte("\x89PNG\r\n\x1a\n")) {
		t.Fatalf("%s is not a PNG (%d bytes)", shot, len(png))
	}
	t.Logf("screenshot of / saved as %s (%d bytes)", shot, len(png))
}
