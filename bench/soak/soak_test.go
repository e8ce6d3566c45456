package main

import (
	"bytes"
	"encoding/csv"
	"image/png"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestMain lets the test binary be the soak's reactor process too, as the
// soak binary is.
func TestMain(m *testing.M) {
	if spec := os.Getenv(reactorEnv); spec != "" {
		os.Exit(runReactor(spec))
	}
	os.Exit(m.Run())
}

func TestParseConfig(t *testing.T) {
	dir := t.TempDir()
	otherNS := filepath.Join(dir, "other.yaml")
	if err := os.WriteFile(otherNS, []byte("namespaces: [db]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		args    []string
		check   func(t *testing.T, c config)
		wantErr string
	}{
		{name: "defaults are the first streaming scenario", args: []string{"-out", dir}, check: func(t *testing.T, c config) {
			if c.rate != 5 || c.partitions != 8 || c.tables != 1 || c.rows != 100 || c.duration != 15*time.Minute || c.warmup != 2*time.Minute {
				t.Errorf("config = %+v", c)
			}
		}},
		{name: "smoke shortens what was not given", args: []string{"-smoke", "-interval", "3s", "-out", dir}, check: func(t *testing.T, c config) {
			if c.duration != 20*time.Second || c.interval != 3*time.Second || c.warmup != 4*time.Second || c.window != 5*time.Second {
				t.Errorf("config = %+v", c)
			}
		}},
		{name: "table properties", args: []string{"-out", dir, "-table-prop", "write.target-file-size-bytes = 1048576"},
			check: func(t *testing.T, c config) {
				if c.tableProps["write.target-file-size-bytes"] != "1048576" {
					t.Errorf("props = %v", c.tableProps)
				}
			}},
		{name: "unknown threshold", args: []string{"-out", dir, "-set", "quiet=1s"}, wantErr: "quiet"},
		{name: "invalid threshold value", args: []string{"-out", dir, "-set", "small_file_ratio=2"}, wantErr: "small_file_ratio"},
		{name: "set without value", args: []string{"-out", dir, "-set", "quiet_period"}, wantErr: "want key=value"},
		{name: "namespace not watched", args: []string{"-out", dir, "-thresholds", otherNS}, wantErr: `"soak"`},
		{name: "zero rate", args: []string{"-out", dir, "-rate", "0"}, wantErr: "-rate"},
		{name: "no tables", args: []string{"-out", dir, "-tables", "0"}, wantErr: "-tables"},
		{name: "stray argument", args: []string{"-out", dir, "now"}, wantErr: "unexpected arguments"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := parseConfig(tt.args, io.Discard)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want it to contain %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			tt.check(t, c)
		})
	}
}

func TestSetOverlaysTheFileDefaults(t *testing.T) {
	file := filepath.Join(t.TempDir(), "t.yaml")
	if err := os.WriteFile(file, []byte("defaults:\n  small_file_count: 20\n  cooldown: 9s\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	th, err := loadThresholds(file, []string{"cooldown=2s", "min_reader_margin=2m"})
	if err != nil {
		t.Fatal(err)
	}
	e := th.For("soak.events", nil)
	if e.SmallFileCount != 20 || e.Cooldown != 2*time.Second || e.MinReaderMargin != 2*time.Minute {
		t.Errorf("effective = count %d, cooldown %s, margin %s", e.SmallFileCount, e.Cooldown, e.MinReaderMargin)
	}
}

// TestSoakShort runs the whole soak for a few seconds: reactor in its own
// process, the writer, the samples, the results. It asserts correctness and
// the shape of the results only; the figures are the benchmark's.
func TestSoakShort(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the soak for several seconds")
	}
	out := t.TempDir()
	cfg, err := parseConfig([]string{"-duration", "8s", "-interval", "2s", "-warmup", "2s", "-window", "3s",
		"-rate", "5", "-partitions", "2", "-rows", "20", "-out", out, "-grace", "20s",
		"-set", "quiet_period=200ms", "-set", "max_quiet_wait=1s", "-set", "cooldown=1s", "-set", "small_file_count=5",
		"-table-prop", "write.target-file-size-bytes=65536"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	if err := run(t.Context(), cfg, &stdout, &stderr); err != nil {
		t.Fatalf("soak: %v\nstdout:\n%s\nstderr:\n%s", err, &stdout, &stderr)
	}
	t.Logf("soak output:\n%s", &stdout)
	summary, err := os.ReadFile(filepath.Join(out, "summary.txt"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"OK       soak.events", "targets (docs/design.md#streaming-targets)", "live data files <=", "full scan <=",
		"snapshots <=", "data manifests <=", "writer commit p50", "no job gave up", "write amplification <=",
		"ms per writer commit", "fleet: catalog calls", "load ", "locate "} {
		if !strings.Contains(string(summary), want) {
			t.Errorf("summary lacks %q:\n%s", want, summary)
		}
	}
	if strings.Contains(string(summary), "MISMATCH") {
		t.Errorf("rows differ:\n%s", summary)
	}

	var sampleNames, tableNames []string
	for _, c := range sampleColumns() {
		sampleNames = append(sampleNames, c.name)
	}
	for _, c := range tableColumns() {
		tableNames = append(tableNames, c.name)
	}
	samples := readCSV(t, filepath.Join(out, "samples.csv"), sampleNames, map[string]bool{})
	if len(samples) < 3 {
		t.Errorf("%d samples, want at least 3 in 8 s at one per 2 s", len(samples))
	}
	readCSV(t, filepath.Join(out, "tables.csv"), tableNames, map[string]bool{"table": true})
	last := samples[len(samples)-1]
	if last["commits"] == "0" || last["rows_written"] == "0" || last["bytes_written"] == "0" {
		t.Errorf("last sample shows no writes: %v", last)
	}

	f, err := os.Open(filepath.Join(out, "soak.png"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if img, err := png.Decode(f); err != nil || img.Bounds().Dx() < 500 {
		t.Errorf("soak.png: %v", err)
	}
	if log, err := os.ReadFile(filepath.Join(out, "reactor.log")); err != nil || !strings.Contains(string(log), `"msg":"reactor running"`) {
		t.Errorf("reactor.log: %v\n%s", err, log)
	}
	if _, err := os.Stat(filepath.Join(out, "data")); !os.IsNotExist(err) {
		t.Errorf("the data directory should be removed without -keep-data: %v", err)
	}
}

// readCSV checks that path has exactly the columns want, in order, and that
// every row has every column, numeric unless listed in text; scan columns
// may be empty in samples without a scan. It returns the rows by column.
func readCSV(t *testing.T, path string, want []string, text map[string]bool) []map[string]string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	recs, err := csv.NewReader(f).ReadAll() // also fails on rows of another width
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	if len(recs) < 2 {
		t.Fatalf("%s: %d records", path, len(recs))
	}
	if got := strings.Join(recs[0], ","); got != strings.Join(want, ",") {
		t.Fatalf("%s header:\n got %s\nwant %s", path, got, strings.Join(want, ","))
	}
	var rows []map[string]string
	for i, rec := range recs[1:] {
		row := map[string]string{}
		for j, v := range rec {
			name := want[j]
			row[name] = v
			switch {
			case text[name]:
				if v == "" {
					t.Errorf("%s row %d: %s is empty", path, i+1, name)
				}
			case v == "" && strings.Contains(name, "scan") || v == "" && name == "compacted_files" || v == "" && name == "copy_build_ms":
			default:
				if _, err := strconv.ParseFloat(v, 64); err != nil {
					t.Errorf("%s row %d: %s = %q is not a number", path, i+1, name, v)
				}
			}
		}
		rows = append(rows, row)
	}
	return rows
}
