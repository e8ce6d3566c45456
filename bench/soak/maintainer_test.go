package main

import (
	"bytes"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestParseMaintainer(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		name    string
		args    []string
		want    string
		wantErr string
	}{
		{name: "reactor by default", args: nil, want: maintainerReactor},
		{name: "none", args: []string{"-maintainer", "none"}, want: maintainerNone},
		{name: "a named command", args: []string{"-maintainer", "flink", "-maintainer-cmd", "java X"}, want: "flink"},
		{name: "a name without command", args: []string{"-maintainer", "flink"}, wantErr: "needs -maintainer-cmd"},
		{name: "a command for reactor", args: []string{"-maintainer-cmd", "java X"}, wantErr: "a -maintainer name of its own"},
		{name: "a name with a slash", args: []string{"-maintainer", "a/b", "-maintainer-cmd", "x"}, wantErr: "without spaces or slashes"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := parseConfig(append([]string{"-out", dir}, tt.args...), io.Discard)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || c.maintainer != tt.want {
				t.Fatalf("maintainer %q, err %v; want %q", c.maintainer, err, tt.want)
			}
		})
	}
}

func TestParseStat(t *testing.T) {
	tests := []struct {
		name, line string
		want       stat
		wantErr    bool
	}{
		{name: "plain", line: "42 (java) S 1 40 40 0 -1 4194560 100 0 0 0 250 50 7 3 20 0 30 0 100",
			want: stat{pgrp: 40, cpu: 3 * time.Second, childCPU: 100 * time.Millisecond}},
		{name: "a name with parentheses and spaces", line: "7 (a) b (c) R 1 9 9 0 -1 0 0 0 0 0 1 1 0 0 20 0 1 0 1",
			want: stat{pgrp: 9, cpu: 20 * time.Millisecond}},
		{name: "no name", line: "7 a R 1", wantErr: true},
		{name: "short", line: "7 (a) R 1 9 9", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseStat(tt.line)
			if (err != nil) != tt.wantErr || got != tt.want {
				t.Fatalf("parseStat = %+v, %v; want %+v (error %v)", got, err, tt.want, tt.wantErr)
			}
		})
	}
}

// TestExternalMaintainer runs the soak with a command in reactor's place
// (one that maintains nothing): it must be told the catalog and tables,
// be waited for, be sampled and stopped, and the rows must check.
func TestExternalMaintainer(t *testing.T) {
	out := t.TempDir()
	envFile := filepath.Join(out, "env.txt")
	cmd := `env | grep ^SOAK_ > ` + envFile + `; touch "$SOAK_READY"; exec sleep 600`
	cfg, err := parseConfig([]string{"-duration", "4s", "-interval", "1s", "-warmup", "1s", "-window", "1s",
		"-rate", "5", "-partitions", "2", "-rows", "20", "-out", out, "-grace", "2s",
		"-maintainer", "idle", "-maintainer-cmd", cmd}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	if err := run(t.Context(), cfg, &stdout, &stderr); err != nil {
		t.Fatalf("soak: %v\nstdout:\n%s\nstderr:\n%s", err, &stdout, &stderr)
	}
	env, err := os.ReadFile(envFile)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"SOAK_CATALOG_DB=", "SOAK_CATALOG_NAME=reactor", "SOAK_WAREHOUSE=file://", "SOAK_TABLES=soak.events",
		"SOAK_TARGET_FILE_SIZE=", "SOAK_READY="} {
		if !strings.Contains(string(env), want) {
			t.Errorf("the command's environment lacks %q:\n%s", want, env)
		}
	}
	data, err := os.ReadFile(filepath.Join(out, "result.json"))
	if err != nil {
		t.Fatal(err)
	}
	var r result
	if err := json.Unmarshal(data, &r); err != nil {
		t.Fatal(err)
	}
	if r.Maintainer != "idle" || !r.RowsOK || r.RowsWritten == 0 || r.RowsRead != r.RowsWritten || r.Commits == 0 {
		t.Errorf("result.json: %s", data)
	}
	if r.RewrittenBytes != 0 || r.PeakRSS == 0 {
		t.Errorf("an idle maintainer rewrites nothing and has some memory: %s", data)
	}
	summary, err := os.ReadFile(filepath.Join(out, "summary.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(summary), "idle sends no job events") || !strings.Contains(string(summary), "OK       soak.events") {
		t.Errorf("summary:\n%s", summary)
	}
}
