package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/icereactor/reactor/thresholds"
)

// The demo's thresholds as a file, and what it says to try next on what it
// left: the commands of the CLI pointed at its data directory and that
// file, so `reactor plan` shows the thresholds the status page showed.

// demoThresholdsFile is the file's name in the demo's directory.
const demoThresholdsFile = "thresholds.yaml"

// demoThresholdsYAML is the demo's policy (the constants of demo.go) as a
// thresholds file; the target size is the table's property.
func demoThresholdsYAML() string {
	return fmt.Sprintf(`# reactor demo's thresholds: seconds where the built-ins have minutes and
# days, so that compaction, expiry and deletion happen while you watch.
# The target file size (256KiB) is the table's write.target-file-size-bytes.
namespaces: [%s]
defaults:
  small_file_count: %d
  min_input_files: %d
  quiet_period: %s
  max_quiet_wait: %s
  cooldown: %s
  conflict_cooldown: %s
  commit_retry_time: %s
  manifest_count: %d
  snapshot_max_age: %s          # built-in 5d
  min_reader_margin: %s         # built-in 48h
  compact_when_quiet_after: %s  # built-in 1m
`, demoNamespace, demoSmallFileCount, demoMinInputFiles, demoQuietPeriod, demoMaxQuietWait, demoCooldown,
		demoConflictCooldown, demoCommitRetryTime, demoManifestCount, demoSnapshotMaxAge, demoMinReaderMargin, demoQuietAfter)
}

// writeDemoThresholds writes the demo's thresholds file into dir and
// loads it back: reactor runs on what the file says, so the commands
// printed at the end see the same thresholds.
func writeDemoThresholds(dir string) (string, *thresholds.Config, error) {
	path := filepath.Join(dir, demoThresholdsFile)
	if err := os.WriteFile(path, []byte(demoThresholdsYAML()), 0o644); err != nil {
		return "", nil, fmt.Errorf("demo thresholds: %w", err)
	}
	cfg, err := thresholds.Load(path)
	if err != nil {
		return "", nil, fmt.Errorf("demo thresholds: %w", err)
	}
	return path, cfg, nil
}

// demoStatusAddr is the address the printed `reactor run` serves its
// status pages on (reactor run's default, said aloud).
const demoStatusAddr = "127.0.0.1:9095"

// nextCommands are the commands to try on what a kept demo left in dir,
// each a line a shell takes as it is.
func nextCommands(dir, thresholdsPath string) []string {
	at := "--data-dir " + shellQuote(dir) + " --thresholds " + shellQuote(thresholdsPath)
	table := demoNamespace + "." + demoTableName
	return []string{
		"reactor plan " + table + " " + at,
		"reactor health " + table + " " + at,
		"reactor compact " + table + " " + at + " --dry-run",
		"reactor run " + at + " --status-addr " + demoStatusAddr,
	}
}

// printNext ends the demo: with --keep, the commands to try on the table
// it kept; without, how to keep it (no path that is about to vanish).
func (d *demo) printNext(out io.Writer) {
	if !d.cfg.keep {
		fmt.Fprintln(out, "\nThe demo's files are removed now. `reactor demo --keep` keeps them and ends with the commands to try on its table.")
		return
	}
	fmt.Fprintf(out, "\nKept the demo's files in %s (its NATS store, catalog, table, log and %s).\n", d.dir, demoThresholdsFile)
	if runFromGoRun() {
		fmt.Fprintln(out, "(go run built this reactor and removes it: in the checkout, `go run ./cmd/reactor` stands for reactor, or `go build -o reactor ./cmd/reactor` first)")
	}
	run := "reactor again on the same table; status page on http://" + demoStatusAddr + "/, Ctrl-C stops it"
	if d.cfg.serve {
		run += " (once this demo stopped)"
	}
	why := []string{"what is due now, and why, with the demo's thresholds", "the table's health (exit 1 if unhealthy)",
		"what a compaction would rewrite now; without --dry-run it runs it", run}
	fmt.Fprintln(out, "Try the CLI on them:")
	for i, c := range nextCommands(d.dir, d.thresholdsPath) {
		fmt.Fprintf(out, "  # %s\n  %s\n", why[i], c)
	}
}

// runFromGoRun reports whether this binary lives in go run's temporary
// build directory, which go run removes when it exits.
func runFromGoRun() bool {
	exe, err := os.Executable()
	return err == nil && strings.Contains(exe, string(filepath.Separator)+"go-build")
}

// shellQuote quotes s for a POSIX shell when it needs quoting.
func shellQuote(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("/._-+=:,@", r))
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
