package main

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestMain lets the test binary be the benchmark's replica processes too,
// as the benchmark binary is.
func TestMain(m *testing.M) {
	if spec := os.Getenv(childEnv); spec != "" {
		os.Exit(runChild(spec))
	}
	os.Exit(m.Run())
}

func TestParseConfig(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		name    string
		args    []string
		check   func(t *testing.T, c config)
		wantErr string
	}{
		{name: "defaults are the replica measurement of BENCHMARKS.md", args: []string{"-out", dir}, check: func(t *testing.T, c config) {
			if len(c.replicas) != 3 || c.replicas[2] != 3 || c.tables != 200 || c.rate != 0.2 || c.leaseTTL != 5*time.Second || !c.kill {
				t.Errorf("config = %+v", c)
			}
		}},
		{name: "smoke shortens what was not given", args: []string{"-smoke", "-tables", "3", "-out", dir}, check: func(t *testing.T, c config) {
			if len(c.replicas) != 1 || c.replicas[0] != 2 || c.tables != 3 || c.duration != 15*time.Second || c.leaseTTL != 2*time.Second {
				t.Errorf("config = %+v", c)
			}
		}},
		{name: "set overrides a benchmark threshold", args: []string{"-out", dir, "-set", "small_file_count = 8"}, check: func(t *testing.T, c config) {
			if !strings.Contains(c.thresholdsYAML(), "  small_file_count: 8\n") {
				t.Errorf("thresholds file:\n%s", c.thresholdsYAML())
			}
		}},
		{name: "unknown threshold", args: []string{"-out", dir, "-set", "quiet=1s"}, wantErr: "quiet"},
		{name: "bad replica count", args: []string{"-out", dir, "-replicas", "1,x"}, wantErr: "-replicas"},
		{name: "kill needs two replicas", args: []string{"-out", dir, "-replicas", "2,1"}, wantErr: "-kill"},
		{name: "one replica without the kill", args: []string{"-out", dir, "-replicas", "1", "-kill=false"}, check: func(t *testing.T, c config) {
			if c.kill || len(c.replicas) != 1 {
				t.Errorf("config = %+v", c)
			}
		}},
		{name: "zero rate", args: []string{"-out", dir, "-rate", "0"}, wantErr: "-rate"},
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

func TestAnalyseCountsOverlapsAndRaces(t *testing.T) {
	at := func(s int) time.Time { return time.Unix(1000+int64(s), 0) }
	runs := []jobRun{
		{id: "a", table: "bench.t0", replica: "r1", started: at(0), finished: at(10), starts: 1, outcome: "succeeded"},
		{id: "b", table: "bench.t0", replica: "r2", started: at(5), finished: at(6), starts: 1, outcome: "failed",
			err: "table lease not held by this replica: bench.t0 (shard 3)"},
		{id: "c", table: "bench.t0", replica: "r1", started: at(20), finished: at(21), starts: 2, outcome: "noop"},
		{id: "d", table: "bench.t1", replica: "r2", started: at(1), starts: 1}, // killed
		{id: "e", table: "bench.t1", replica: "r1", started: at(8), finished: at(9), starts: 1, outcome: "gave_up", err: "conflicts"},
	}
	s := analyse(closeKilled(runs, "r2", at(3)), at(0), at(100))
	if s.overlapsAcross != 1 || s.overlapsWithin != 0 {
		t.Errorf("overlaps across %d within %d, want 1 and 0 (a and b; d died before e)", s.overlapsAcross, s.overlapsWithin)
	}
	if s.ranTwice != 1 || s.raceFailures != 1 || s.otherFailures != 1 || s.unfinished != 1 || s.finished != 4 || s.ok != 2 {
		t.Errorf("stats = %+v", s)
	}
	if s.perReplica["r1"] != 3 || s.perReplica["r2"] != 1 {
		t.Errorf("per replica = %v", s.perReplica)
	}
}

// TestBenchmarkRuns runs the command small: two replica processes, a
// handful of tables, the kill. It checks the rows and the report's shape,
// not speed.
func TestBenchmarkRuns(t *testing.T) {
	if testing.Short() {
		t.Skip("starts replica processes and writes for about half a minute")
	}
	out := t.TempDir()
	cfg, err := parseConfig([]string{"-replicas", "2", "-tables", "4", "-rate", "2", "-duration", "6s",
		"-lease-ttl", "2s", "-lease-shards", "8", "-kill-wait", "15s", "-after-kill", "6s", "-grace", "5s",
		"-set", "quiet_period=200ms", "-out", out}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	if err := run(context.Background(), cfg, &stdout, &stderr); err != nil {
		t.Fatalf("run: %v\nstdout:\n%s\nstderr:\n%s", err, stdout.String(), stderr.String())
	}
	summary, err := os.ReadFile(filepath.Join(out, "summary.txt"))
	if err != nil {
		t.Fatal(err)
	}
	text := string(summary)
	for _, want := range []*regexp.Regexp{
		regexp.MustCompile(`rows: 4 of 4 tables exact`),
		regexp.MustCompile(`target: jobs that ran twice = 0: met \(0 job ids started twice; 0 pairs`),
		regexp.MustCompile(`target: jobs failed from replica races = 0: \w+`),
		regexp.MustCompile(`kill: SIGKILL r2 `),
		regexp.MustCompile(`target: its tables owned again within the lease time: \w+ \(\d+ shards held by r2; \d+ taken by survivors r1 \d+`),
		regexp.MustCompile(`survivors ran \d+ jobs on r2's tables`),
		regexp.MustCompile(`(?m)^ +2 +\d+\.\d+ +1\.00x`),
	} {
		if !want.MatchString(text) {
			t.Errorf("summary lacks %q:\n%s", want, text)
		}
	}
	if strings.Contains(text, "orphan cleanup (remove_orphans") && !strings.Contains(text, "table(s): met") {
		t.Errorf("the killed job's leftovers survived orphan cleanup:\n%s", text)
	}
	if strings.Contains(text, "orphan cleanup of the killed job's table: failed") {
		t.Errorf("orphan cleanup failed:\n%s", text)
	}
	for _, log := range []string{"r1.log", "r2.log"} {
		if _, err := os.Stat(filepath.Join(out, "replicas-2", log)); err != nil {
			t.Errorf("replica log: %v", err)
		}
	}
	if _, err := os.Stat(filepath.Join(out, "replicas-2", "data")); !os.IsNotExist(err) {
		t.Errorf("data directory left behind without -keep-data: %v", err)
	}
}
