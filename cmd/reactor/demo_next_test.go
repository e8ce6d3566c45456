package main

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/icereactor/reactor/thresholds"
)

// The demo's thresholds file says what the demo ran on: every setting the
// demo's constants name.
func TestDemoThresholdsFile(t *testing.T) {
	path, cfg, err := writeDemoThresholds(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	set := cfg.For("demo.events", map[string]string{thresholds.TargetFileSizeProperty: "262144"})
	if set.SmallFileCount != demoSmallFileCount || set.MinInputFiles != demoMinInputFiles || set.QuietPeriod != demoQuietPeriod ||
		set.MaxQuietWait != demoMaxQuietWait || set.Cooldown != demoCooldown || set.ConflictCooldown != demoConflictCooldown ||
		set.CommitRetryTime != demoCommitRetryTime || set.ManifestCount != demoManifestCount || set.SnapshotMaxAge != demoSnapshotMaxAge ||
		set.MinReaderMargin != demoMinReaderMargin || set.CompactWhenQuietAfter != demoQuietAfter || !cfg.Watches("demo") || cfg.Watches("db") ||
		set.TargetFileSize != demoTargetFileSize.Bytes() {
		t.Errorf("%s resolves to %+v", path, set)
	}
}

// The demo kept with --keep ends with the commands to try on what it left,
// and they run: plan and health read its table with its thresholds, the
// compaction's dry run writes nothing, and reactor run serves the table's
// status page (on a free port instead of the printed one, /metrics off).
func TestDemoLeadsIntoTheCLI(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the embedded demo for several seconds")
	}
	var stdout, stderr syncBuffer
	err := demoCmd(t.Context(), []string{"--duration", "3s", "--rate", "5", "--partitions", "2", "--keep"}, &stdout, &stderr)
	out := stdout.String()
	m := regexp.MustCompile(`Kept the demo's files in (\S+) `).FindStringSubmatch(out)
	if m != nil {
		t.Cleanup(func() { os.RemoveAll(m[1]) })
	}
	if err != nil || m == nil {
		t.Fatalf("demo: %v\n%s\n%s", err, out, stderr.String())
	}
	dir := m[1]
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	var cmds [][]string
	for _, l := range lines[len(lines)-8:] {
		if rest, ok := strings.CutPrefix(l, "  reactor "); ok {
			cmds = append(cmds, strings.Fields(rest))
		}
	}
	if len(cmds) != 4 || !strings.HasPrefix(lines[len(lines)-1], "  reactor run ") {
		t.Fatalf("the demo's last lines are not the four commands:\n%s", strings.Join(lines[len(lines)-10:], "\n"))
	}
	for _, c := range cmds {
		if !strings.Contains(strings.Join(c, " "), "--data-dir "+dir+" --thresholds "+filepath.Join(dir, demoThresholdsFile)) {
			t.Errorf("%v does not point at what the demo left", c)
		}
	}
	run := func(args []string) (string, int) {
		var out, errOut bytes.Buffer
		code := execute(t.Context(), args, &out, &errOut)
		return out.String() + errOut.String(), code
	}
	plan, code := run(cmds[0])
	words := strings.Join(strings.Fields(plan), " ")
	if code != 0 || !strings.Contains(words, "small_file_count 1 8 ok") && !strings.Contains(words, "small_file_count 0 8 ok") ||
		!strings.Contains(words, "snapshot_max_age") || !strings.Contains(plan, "target file size 256KiB") {
		t.Errorf("%v: exit %d\n%s", cmds[0], code, plan)
	}
	if m := regexp.MustCompile(`snapshot_max_age\s+\d+\s+(\d+)\s+seconds`).FindStringSubmatch(plan); m == nil || m[1] != "4" {
		t.Errorf("plan does not show the demo's snapshot_max_age of 4 seconds:\n%s", plan)
	}
	if health, code := run(cmds[1]); code != 0 || !strings.Contains(health, "HEALTHY") {
		t.Errorf("%v: exit %d\n%s", cmds[1], code, health)
	}
	before := fileSet(t, filepath.Join(dir, "catalog"))
	if compact, code := run(cmds[2]); code != 0 || !strings.Contains(compact, dryRunLine) {
		t.Errorf("%v: exit %d\n%s", cmds[2], code, compact)
	}
	if after := fileSet(t, filepath.Join(dir, "catalog")); after != before {
		t.Errorf("the compaction's dry run changed files")
	}

	// reactor run, on a free port.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	args := strings.Join(cmds[3], " ")
	if !strings.Contains(args, "--status-addr "+demoStatusAddr) {
		t.Fatalf("reactor run without --status-addr %s: %s", demoStatusAddr, args)
	}
	// /metrics stays off: its default port may be taken on this machine.
	args = strings.Replace(args, demoStatusAddr, addr, 1) + " --http-addr="
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	var runErr syncBuffer
	done := make(chan int, 1)
	go func() { done <- execute(ctx, strings.Fields(args), io.Discard, &runErr) }()
	var page string
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(200 * time.Millisecond) {
		if resp, err := http.Get("http://" + addr + "/tables/demo.events"); err == nil {
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if page = string(body); resp.StatusCode == http.StatusOK && strings.Contains(page, "small_file_count") {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no status page for demo.events on %s:\n%s\nlog:\n%s", addr, page, runErr.String())
		}
	}
	cancel()
	if code := within(t, done, time.Minute, "reactor run to stop"); code != 0 {
		t.Errorf("reactor run exited %d:\n%s", code, runErr.String())
	}
}
