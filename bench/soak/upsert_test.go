package main

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestSoakWithUpserts writes upserts with nothing maintaining the table:
// every commit's equality delete must stay live (the per-partition count
// grows) and the rows left must be what the writer's tally says.
func TestSoakWithUpserts(t *testing.T) {
	out := t.TempDir()
	cfg, err := parseConfig([]string{"-duration", "4s", "-interval", "1s", "-warmup", "1s", "-window", "1s",
		"-rate", "5", "-partitions", "2", "-rows", "20", "-out", out, "-grace", "2s",
		"-maintainer", "none", "-upsert-keys", "5"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	if err := run(t.Context(), cfg, &stdout, &stderr); err != nil {
		t.Fatalf("soak: %v\nstdout:\n%s\nstderr:\n%s", err, &stdout, &stderr)
	}
	summary, err := os.ReadFile(filepath.Join(out, "summary.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(summary), "OK       soak.events") {
		t.Errorf("summary:\n%s", summary)
	}
	var names []string
	for _, c := range sampleColumns() {
		names = append(names, c.name)
	}
	samples := readCSV(t, filepath.Join(out, "samples.csv"), names, map[string]bool{})
	last := samples[len(samples)-1]
	// About 20 commits over 2 partitions, the first of each with no live
	// key to update: several equality deletes per partition, none removed.
	if n, err := strconv.Atoi(last["eq_deletes_per_partition_max"]); err != nil || n < 3 {
		t.Errorf("equality deletes per partition in the last sample: %q, want at least 3 (%v)", last["eq_deletes_per_partition_max"], last)
	}
}

func TestParseUpserts(t *testing.T) {
	for _, args := range [][]string{{"-upsert-keys", "-1"}, {"-rows", "10", "-upsert-keys", "11"}} {
		if _, err := parseConfig(append([]string{"-out", t.TempDir()}, args...), io.Discard); err == nil || !strings.Contains(err.Error(), "-upsert-keys") {
			t.Errorf("%v: err = %v", args, err)
		}
	}
}
