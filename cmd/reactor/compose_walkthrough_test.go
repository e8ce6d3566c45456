package main

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/apache/iceberg-go/table"

	"github.com/icereactor/reactor/embedded"
	"github.com/icereactor/reactor/embedded/embeddedtest"
	"github.com/icereactor/reactor/events"
	"github.com/icereactor/reactor/streamwriter"
	"github.com/icereactor/reactor/triggers"
)

// The compose walkthrough in docs/operations.md quotes reactor's first
// JSON log lines (job scheduled, with its reason; job finished). This runs
// reactor run with the stack's thresholds file on the stack's table, a
// partition given the 8 commits of 100 rows it gets there, and checks that
// every fragment the walkthrough quotes is in the line it names.
func TestComposeWalkthroughQuotesTheLog(t *testing.T) {
	if testing.Short() {
		t.Skip("runs reactor until its first compaction")
	}
	root := repoRoot(t)
	doc, err := os.ReadFile(filepath.Join(root, "docs", "operations.md"))
	if err != nil {
		t.Fatal(err)
	}
	bullet := regexp.MustCompile("(?s)\n- reactor's JSON log:(.*?)\n- ").FindSubmatch(doc)
	if bullet == nil {
		t.Fatal("docs/operations.md has no bullet on reactor's JSON log in its compose walkthrough")
	}
	// Fragments in order: each "msg" starts the quotes of one log line.
	var lines [][]string
	for _, m := range regexp.MustCompile("`(\"[a-z_]+\":[^`]+)`").FindAllSubmatch(bullet[1], -1) {
		frag := string(m[1])
		if strings.HasPrefix(frag, `"msg":`) {
			lines = append(lines, nil)
		}
		if len(lines) == 0 {
			t.Fatalf("%s is quoted before any \"msg\"", frag)
		}
		lines[len(lines)-1] = append(lines[len(lines)-1], frag)
	}
	if len(lines) < 2 {
		t.Fatalf("the walkthrough quotes %d log lines, want job scheduled and job finished:\n%s", len(lines), bullet[1])
	}

	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	dir := t.TempDir()
	srv, _, js := embeddedtest.JetStream(t, filepath.Join(dir, "nats"))
	if err := triggers.EnsureStreams(ctx, js, triggers.CommitOptions{}); err != nil {
		t.Fatal(err)
	}
	cat, err := embedded.OpenCatalog(ctx, filepath.Join(dir, "catalog"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cat.(interface{ Close() error }).Close() })
	ident := table.Identifier{"demo", "events"}
	if _, err := streamwriter.CreateTable(ctx, cat, ident, nil); err != nil {
		t.Fatal(err)
	}
	writer := streamwriter.New(cat, ident, func(ctx context.Context, ev events.CommitEvent) error {
		data, err := ev.Encode()
		if err != nil {
			return err
		}
		_, err = js.Publish(ctx, "iceberg.commits.demo.events", data)
		return err
	})

	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	var log syncBuffer
	done := make(chan int, 1)
	go func() {
		done <- execute(runCtx, []string{"run", "--nats-url", srv.URL(), "--data-dir", dir, "--http-addr", "", "--status-addr", "",
			"--notification-subject", "", "--thresholds", filepath.Join(root, "deploy", "compose", "thresholds.yaml")}, &log, &log)
	}()
	for range 8 {
		if _, err := writer.Commit(ctx, "p0", 100); err != nil {
			t.Fatal(err)
		}
	}
	found := func(frags []string) string {
		for _, l := range strings.Split(log.String(), "\n") {
			if strings.Contains(l, frags[0]) && strings.Contains(l, `"kind":"compact"`) {
				return l
			}
		}
		return ""
	}
	for deadline := time.Now().Add(2 * time.Minute); found(lines[len(lines)-1]) == ""; time.Sleep(200 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("no compaction's %s line:\n%s", lines[len(lines)-1][0], log.String())
		}
	}
	stop()
	within(t, done, time.Minute, "reactor run to stop")
	for _, frags := range lines {
		l := found(frags)
		for _, f := range frags {
			if !strings.Contains(l, f) {
				t.Errorf("the walkthrough quotes %s, reactor's line says:\n%s", f, l)
			}
		}
	}
}
