package main

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestSoakWithDeletes writes with position deletes and nothing maintaining
// the table: the deletes must land as delete files and the rows left must
// be what the writer's tally says.
func TestSoakWithDeletes(t *testing.T) {
	out := t.TempDir()
	cfg, err := parseConfig([]string{"-duration", "4s", "-interval", "1s", "-warmup", "1s", "-window", "1s",
		"-rate", "5", "-partitions", "2", "-rows", "20", "-out", out, "-grace", "2s",
		"-maintainer", "none", "-delete-every", "4", "-delete-rows", "5"}, io.Discard)
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
	if !strings.Contains(string(summary), "OK       soak.events") || strings.Contains(string(summary), "deletes: 0 position-delete commits") ||
		!strings.Contains(string(summary), "position-delete commits") {
		t.Errorf("summary:\n%s", summary)
	}
	var names []string
	for _, c := range sampleColumns() {
		names = append(names, c.name)
	}
	samples := readCSV(t, filepath.Join(out, "samples.csv"), names, map[string]bool{})
	if last := samples[len(samples)-1]; last["delete_files"] == "0" {
		t.Errorf("no delete file in the last sample: %v", last)
	}
}

func TestParseDeletes(t *testing.T) {
	for _, args := range [][]string{{"-delete-every", "1"}, {"-delete-every", "-2"}, {"-delete-every", "4", "-delete-rows", "0"}} {
		if _, err := parseConfig(append([]string{"-out", t.TempDir()}, args...), io.Discard); err == nil || !strings.Contains(err.Error(), "-delete-every") {
			t.Errorf("%v: err = %v", args, err)
		}
	}
}
