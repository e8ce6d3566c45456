package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/icereactor/reactor/catalogs"
	"github.com/icereactor/reactor/lease"
	"github.com/icereactor/reactor/triggers"
)

func envMap(m map[string]string) func(string) string {
	return func(k string) string { return m[k] }
}

func TestApplyEnvPrecedence(t *testing.T) {
	tests := []struct {
		name    string
		args    []string
		env     map[string]string
		want    string // "nats-url|concurrency|props"
		wantErr string
	}{
		{name: "defaults", want: "|2|"},
		{name: "env over default",
			env:  map[string]string{"REACTOR_NATS_URL": "nats://env:4222", "REACTOR_CONCURRENCY": "5"},
			want: "nats://env:4222|5|"},
		{name: "flag over env",
			args: []string{"--nats-url", "nats://flag:4222", "--concurrency=7"},
			env:  map[string]string{"REACTOR_NATS_URL": "nats://env:4222", "REACTOR_CONCURRENCY": "5"},
			want: "nats://flag:4222|7|"},
		{name: "flag and env mixed",
			args: []string{"--concurrency", "3"},
			env:  map[string]string{"REACTOR_NATS_URL": "nats://env:4222", "REACTOR_CONCURRENCY": "5"},
			want: "nats://env:4222|3|"},
		{name: "empty env is unset",
			env:  map[string]string{"REACTOR_CONCURRENCY": ""},
			want: "|2|"},
		{name: "repeatable from env, comma-separated",
			env:  map[string]string{"REACTOR_CATALOG_PROP": "sql.driver=sqlite, sql.dialect=sqlite"},
			want: "|2|sql.driver=sqlite,sql.dialect=sqlite"},
		{name: "repeatable flag replaces env",
			args: []string{"--catalog-prop", "a=1", "--catalog-prop", "b=2"},
			env:  map[string]string{"REACTOR_CATALOG_PROP": "c=3"},
			want: "|2|a=1,b=2"},
		{name: "bad env value names the variable",
			env:     map[string]string{"REACTOR_CONCURRENCY": "many"},
			wantErr: `invalid value "many" for REACTOR_CONCURRENCY`},
		{name: "bad secret env value is not echoed",
			env:     map[string]string{"REACTOR_CATALOG_PROP": "hunter2"},
			wantErr: "invalid value in REACTOR_CATALOG_PROP: want key=value"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fs := flag.NewFlagSet("test", flag.ContinueOnError)
			fs.SetOutput(&bytes.Buffer{})
			natsURL := fs.String("nats-url", "", "")
			conc := fs.Int("concurrency", 2, "")
			var props propsFlag
			fs.Var(&props, "catalog-prop", "")
			if err := fs.Parse(tt.args); err != nil {
				t.Fatal(err)
			}
			err := applyEnv(fs, envMap(tt.env))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error = %v, want it to contain %q", err, tt.wantErr)
				}
				if strings.Contains(err.Error(), "hunter2") {
					t.Errorf("error leaks the value: %v", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := fmt.Sprintf("%s|%d|%s", *natsURL, *conc, props.String()); got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

func TestEnvName(t *testing.T) {
	for flagName, want := range map[string]string{
		"nats-url":            "REACTOR_NATS_URL",
		"dead-letter-subject": "REACTOR_DEAD_LETTER_SUBJECT",
		"thresholds":          "REACTOR_THRESHOLDS",
	} {
		if got := envName(flagName); got != want {
			t.Errorf("envName(%q) = %q, want %q", flagName, got, want)
		}
	}
}

func TestParseRunConfig(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good.yaml")
	bad := filepath.Join(dir, "bad.yaml")
	if err := os.WriteFile(good, []byte("defaults:\n  small_file_count: 20\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bad, []byte("defaults:\n  small_file_ratio: 1.5\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	withConcurrency := filepath.Join(dir, "concurrency.yaml")
	if err := os.WriteFile(withConcurrency, []byte("concurrency: 5\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		args    []string
		env     map[string]string
		check   func(t *testing.T, c runConfig)
		wantErr string
		input   bool // an *inputError (exit 2, no hint to -h), not a *usageError
	}{
		{name: "embedded defaults", check: func(t *testing.T, c runConfig) {
			if c.natsURL != "" || c.catalog.Props != nil || c.dataDir != "./reactor-data" || c.concurrency != 2 || c.catalog.Name != "reactor" || c.catalog.Timeout != catalogs.DefaultTimeout {
				t.Errorf("config = %+v", c)
			}
		}},
		{name: "concurrency from the thresholds file", args: []string{"--thresholds", withConcurrency},
			check: func(t *testing.T, c runConfig) {
				if c.concurrency != 5 {
					t.Errorf("concurrency = %d, want the file's 5", c.concurrency)
				}
			}},
		{name: "the flag beats the thresholds file", args: []string{"--thresholds", withConcurrency, "--concurrency", "3"},
			check: func(t *testing.T, c runConfig) {
				if c.concurrency != 3 {
					t.Errorf("concurrency = %d, want the flag's 3", c.concurrency)
				}
			}},
		{name: "rest catalog inferred from URI",
			args: []string{"--catalog-uri", "http://rest:8181", "--warehouse", "s3://wh"},
			check: func(t *testing.T, c runConfig) {
				if c.catalog.Props["type"] != "rest" || c.catalog.Props["uri"] != "http://rest:8181" || c.catalog.Props["warehouse"] != "s3://wh" {
					t.Errorf("props = %v", c.catalog.Props)
				}
			}},
		{name: "sql catalog from env",
			env: map[string]string{"REACTOR_CATALOG_TYPE": "sql", "REACTOR_CATALOG_URI": "file:///tmp/c.db",
				"REACTOR_CATALOG_PROP": "sql.driver=sqlite,sql.dialect=sqlite"},
			check: func(t *testing.T, c runConfig) {
				if c.catalog.Props["type"] != "sql" || c.catalog.Props["sql.driver"] != "sqlite" {
					t.Errorf("props = %v", c.catalog.Props)
				}
			}},
		{name: "thresholds file from env",
			env: map[string]string{"REACTOR_THRESHOLDS": good},
			check: func(t *testing.T, c runConfig) {
				if c.thresholds.Defaults.SmallFileCount == nil || *c.thresholds.Defaults.SmallFileCount != 20 {
					t.Errorf("thresholds = %+v", c.thresholds.Defaults)
				}
			}},
		{name: "log level", args: []string{"--log-level", "DEBUG"}, check: func(t *testing.T, c runConfig) {
			if c.logLevel.String() != "DEBUG" {
				t.Errorf("level = %v", c.logLevel)
			}
		}},
		{name: "watch prefixes and the new-table grace",
			args: []string{"--watch-prefix", "s3://lake/warehouse", "--new-table-grace", "30s"},
			env:  map[string]string{"REACTOR_WATCH_PREFIX": "s3://ignored/x"}, // the flag wins
			check: func(t *testing.T, c runConfig) {
				if !slices.Equal(c.watchPrefixes, []string{"s3://lake/warehouse"}) || c.notifications.NewTableGrace != 30*time.Second {
					t.Errorf("watch prefixes %v, grace %s", c.watchPrefixes, c.notifications.NewTableGrace)
				}
			}},
		{name: "watch prefixes from env", env: map[string]string{"REACTOR_WATCH_PREFIX": "s3://a/wh, s3a://b/"},
			check: func(t *testing.T, c runConfig) {
				if !slices.Equal(c.watchPrefixes, []string{"s3://a/wh", "s3a://b/"}) || c.notifications.NewTableGrace != triggers.DefaultNewTableGrace {
					t.Errorf("watch prefixes %v, grace %s", c.watchPrefixes, c.notifications.NewTableGrace)
				}
			}},
		{name: "replica and leases from env", env: map[string]string{"REACTOR_REPLICA": "reactor-0", "REACTOR_LEASE_TTL": "30s",
			"REACTOR_LEASE_SHARDS": "128"}, check: func(t *testing.T, c runConfig) {
			if c.leases.Replica != "reactor-0" || c.leases.TTL != 30*time.Second || c.leases.Shards != 128 || c.leases.KVReplicas != 1 {
				t.Errorf("leases = %+v", c.leases)
			}
		}},
		{name: "lease defaults", check: func(t *testing.T, c runConfig) {
			if c.leases.Replica != "" || c.leases.TTL != lease.DefaultTTL || c.leases.Shards != lease.DefaultShards ||
				c.leases.KVReplicas != 1 || c.commits.StreamReplicas != 1 {
				t.Errorf("leases = %+v", c.leases)
			}
		}},
		{name: "a three-node cluster: streams and the lease bucket at 3", args: []string{"--stream-replicas", "3"},
			check: func(t *testing.T, c runConfig) {
				if c.commits.StreamReplicas != 3 || c.notifications.StreamReplicas != 3 || c.leases.KVReplicas != 3 {
					t.Errorf("commits %d, notifications %d, lease bucket %d", c.commits.StreamReplicas, c.notifications.StreamReplicas, c.leases.KVReplicas)
				}
			}},
		{name: "the lease bucket's replicas given apart", env: map[string]string{"REACTOR_STREAM_REPLICAS": "3", "REACTOR_LEASE_BUCKET_REPLICAS": "5"},
			check: func(t *testing.T, c runConfig) {
				if c.commits.StreamReplicas != 3 || c.leases.KVReplicas != 5 {
					t.Errorf("commits %d, lease bucket %d", c.commits.StreamReplicas, c.leases.KVReplicas)
				}
			}},
		{name: "no stream replicas", args: []string{"--stream-replicas", "0"}, wantErr: "--stream-replicas must be between 1 and 5"},
		{name: "a replica name no KV key can hold", args: []string{"--replica", "pod.1"}, wantErr: "--replica"},
		{name: "a lease TTL too short to renew", args: []string{"--lease-ttl", "1s"}, wantErr: "--lease-ttl must be at least 3s"},
		{name: "no lease shards", args: []string{"--lease-shards", "0"}, wantErr: "--lease-shards"},
		{name: "a local watch prefix", args: []string{"--watch-prefix", "/tmp/wh"}, wantErr: "--watch-prefix"},
		{name: "a zero grace", args: []string{"--new-table-grace", "0s"}, wantErr: "--new-table-grace must be positive"},
		{name: "bad concurrency value", args: []string{"--concurrency", "two"}, wantErr: `invalid value "two" for flag -concurrency`},
		{name: "negative concurrency", args: []string{"--concurrency", "-1"}, wantErr: "--concurrency must not be negative"},
		{name: "unknown flag", args: []string{"--nats"}, wantErr: "flag provided but not defined: -nats"},
		{name: "positional argument", args: []string{"extra"}, wantErr: "unexpected arguments"},
		{name: "bad log level", args: []string{"--log-level", "loud"}, wantErr: "--log-level must be"},
		{name: "hive catalog inferred from URI", args: []string{"--catalog-uri", "thrift://hms:9083"},
			check: func(t *testing.T, c runConfig) {
				if c.catalog.Props["type"] != "hive" {
					t.Errorf("props = %v", c.catalog.Props)
				}
			}},
		{name: "postgres catalog from a JDBC URI", args: []string{"--catalog-uri", "jdbc:postgresql://db:5432/lake",
			"--catalog-name", "lake", "--catalog-prop", "jdbc.user=ice", "--catalog-prop", "jdbc.password=pw"},
			check: func(t *testing.T, c runConfig) {
				p := c.catalog.Props
				if p["type"] != "sql" || p["sql.driver"] != "pgx" || p["sql.dialect"] != "postgres" ||
					p["uri"] != "postgres://ice:pw@db:5432/lake" || c.catalog.Name != "lake" {
					t.Errorf("catalog = %+v", c.catalog)
				}
			}},
		{name: "catalog timeout", args: []string{"--catalog-uri", "http://rest:8181", "--catalog-timeout", "5s"},
			check: func(t *testing.T, c runConfig) {
				if c.catalog.Timeout != 5*time.Second {
					t.Errorf("timeout = %s", c.catalog.Timeout)
				}
			}},
		{name: "bad catalog type", args: []string{"--catalog-type", "nessie", "--catalog-uri", "http://x"}, wantErr: "--catalog-type must be hive, glue, hadoop, sql or rest"},
		{name: "zero catalog timeout", args: []string{"--catalog-timeout", "0s"}, wantErr: "--catalog-timeout must be positive"},
		{name: "hive URI not thrift", args: []string{"--catalog-type", "hive", "--catalog-uri", "http://x"}, wantErr: "thrift://host:port"},
		{name: "hadoop on s3 refused", args: []string{"--catalog-type", "hadoop", "--warehouse", "s3://lake/wh", "--catalog-prop", "allow-unsafe-commits=true"},
			wantErr: "hadoop catalog on an object store refused"},
		{name: "sql driver not linked", args: []string{"--catalog-type", "sql", "--catalog-uri", "sqlserver://x", "--catalog-prop", "sql.driver=sqlserver"},
			wantErr: `the sql driver "sqlserver" is not linked`},
		{name: "catalog type needed", args: []string{"--catalog-uri", "file:///c.db"}, wantErr: "--catalog-type is required"},
		{name: "catalog URI needed", args: []string{"--catalog-type", "rest"}, wantErr: "--catalog-uri is required"},
		{name: "property given twice", args: []string{"--catalog-uri", "http://a", "--catalog-prop", "uri=http://b"}, wantErr: `"uri" is set by both`},
		{name: "invalid thresholds name the field", args: []string{"--thresholds", bad}, wantErr: "thresholds file " + bad + ": defaults.small_file_ratio", input: true},
		{name: "missing thresholds file", args: []string{"--thresholds", filepath.Join(dir, "nope.yaml")},
			wantErr: "thresholds file " + filepath.Join(dir, "nope.yaml") + ": no such file or directory", input: true},
		{name: "bad env value", env: map[string]string{"REACTOR_CONCURRENCY": "x"}, wantErr: "REACTOR_CONCURRENCY"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := parseRunConfig(tt.args, envMap(tt.env), &bytes.Buffer{})
			if tt.wantErr != "" {
				var uerr *usageError
				var ierr *inputError
				if tt.input && (!errors.As(err, &ierr) || !strings.Contains(err.Error(), tt.wantErr)) {
					t.Fatalf("error = %v, want an input error containing %q", err, tt.wantErr)
				}
				if !tt.input && (!errors.As(err, &uerr) || !strings.Contains(err.Error(), tt.wantErr)) {
					t.Fatalf("error = %v, want a usage error containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			tt.check(t, cfg)
		})
	}
}

func TestRedaction(t *testing.T) {
	var props propsFlag
	for _, kv := range []string{"s3.secret-access-key=S3CRET", "sql.driver=sqlite", "token=T0KEN", "rest.password=PW"} {
		if err := props.Set(kv); err != nil {
			t.Fatal(err)
		}
	}
	cfg := runConfig{natsURL: "nats://user:PASS@host:4222", catalog: catalogs.Config{Props: map[string]string{
		"type": "sql", "uri": "postgres://u:DBPW@db/cat?sslmode=disable&password=QPW"}}}
	for k, v := range props.values {
		cfg.catalog.Props[k] = v
	}
	logged := fmt.Sprint(props.String(), cfg.logAttrs())
	for _, secret := range []string{"S3CRET", "T0KEN", "PW@", "PASS", "DBPW", "QPW"} {
		if strings.Contains(logged, secret) {
			t.Errorf("logged configuration contains %q: %s", secret, logged)
		}
	}
	if !strings.Contains(logged, "sqlite") || !strings.Contains(logged, "sslmode=disable") {
		t.Errorf("non-secret values should be shown: %s", logged)
	}
}

func TestExecuteArguments(t *testing.T) {
	tests := []struct {
		name     string
		args     []string
		code     int
		stdout   string
		stderr   string
		noStdout bool
	}{
		{name: "no command", args: nil, code: 2, stderr: "Usage:"},
		{name: "unknown command", args: []string{"compress"}, code: 2, stderr: `unknown command "compress"`},
		{name: "help", args: []string{"help"}, code: 0, stdout: "Commands:"},
		{name: "--help", args: []string{"--help"}, code: 0, stdout: "reactor <command>"},
		{name: "help for run", args: []string{"help", "run"}, code: 0, stdout: "REACTOR_NATS_URL"},
		{name: "help for unknown", args: []string{"help", "nope"}, code: 2, stderr: `unknown command "nope"`},
		{name: "run -h lists flags", args: []string{"run", "-h"}, code: 0, stdout: "-dead-letter-subject"},
		{name: "run --help", args: []string{"run", "--help"}, code: 0, stdout: "-catalog-prop"},
		{name: "demo -h lists flags", args: []string{"demo", "-h"}, code: 0, stdout: "-partitions"},
		{name: "version -h", args: []string{"version", "-h"}, code: 0, stdout: "Usage: reactor version"},
		{name: "run bad flag value", args: []string{"run", "--concurrency", "x"}, code: 2, stderr: "Run 'reactor run -h'", noStdout: true},
		{name: "demo bad flag value", args: []string{"demo", "--rate", "fast"}, code: 2, stderr: `invalid value "fast" for flag -rate`, noStdout: true},
		{name: "demo out of range", args: []string{"demo", "--partitions", "0"}, code: 2, stderr: "--partitions must be between 1 and 100"},
		{name: "demo negative duration", args: []string{"demo", "--duration", "-1s"}, code: 2, stderr: "--duration must be positive"},
		{name: "version", args: []string{"version"}, code: 0, stdout: "iceberg-go"},
		{name: "version extra argument", args: []string{"version", "now"}, code: 2, stderr: "unexpected arguments"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := execute(t.Context(), tt.args, &stdout, &stderr)
			if code != tt.code {
				t.Errorf("exit code = %d, want %d\nstdout: %s\nstderr: %s", code, tt.code, &stdout, &stderr)
			}
			if !strings.Contains(stdout.String(), tt.stdout) {
				t.Errorf("stdout does not contain %q:\n%s", tt.stdout, &stdout)
			}
			if !strings.Contains(stderr.String(), tt.stderr) {
				t.Errorf("stderr does not contain %q:\n%s", tt.stderr, &stderr)
			}
			if tt.noStdout && stdout.Len() > 0 {
				t.Errorf("stdout should be empty on an error, got:\n%s", &stdout)
			}
		})
	}
}

// TestRunStartsAndStops runs `reactor run` embedded until its context ends.
func TestRunStartsAndStops(t *testing.T) {
	dir := t.TempDir()
	ctx, cancel := context.WithCancel(t.Context())
	var stdout, stderr syncBuffer
	done := make(chan error, 1)
	go func() {
		done <- runCmd(ctx, []string{"--data-dir", dir, "--log-level", "info", "--http-addr", "127.0.0.1:0", "--status-addr", "127.0.0.1:0"}, &stdout, &stderr)
	}()
	deadline := time.Now().Add(time.Minute)
	for !strings.Contains(stderr.String(), "reactor running") {
		if time.Now().After(deadline) {
			t.Fatalf("reactor did not start:\n%s", stderr.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("run: %v\n%s", err, stderr.String())
		}
	case <-time.After(time.Minute):
		t.Fatal("run did not stop after its context was cancelled")
	}
	logs := stderr.String()
	if !strings.Contains(logs, `"msg":"reactor stopped"`) || !strings.Contains(logs, `"nats_url":"embedded"`) {
		t.Errorf("expected JSON start and stop lines, got:\n%s", logs)
	}
}

// TestDemo runs a short demo in-process against the real embedded parts.
func TestDemo(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the embedded demo for several seconds")
	}
	var stdout, stderr syncBuffer
	// Long enough that even a slow machine (-race, shared cores) commits
	// enough to the hot partition for a compaction: the writer drops ticks
	// rather than queue them when commits are slow.
	err := demoCmd(t.Context(), []string{"--duration", "6s", "--rate", "5", "--partitions", "2"}, &stdout, &stderr)
	out := stdout.String()
	t.Logf("demo output:\n%s", out)
	if err != nil {
		t.Fatalf("demo: %v\nstderr:\n%s", err, stderr.String())
	}
	if !strings.Contains(out, "OK: table holds exactly the rows written") {
		t.Fatalf("summary does not say OK")
	}
	m := regexp.MustCompile(`data files: (\d+) written by the writer, (\d+) live after compaction`).FindStringSubmatch(out)
	if m == nil {
		t.Fatal("summary has no data files line")
	}
	written, _ := strconv.Atoi(m[1])
	live, _ := strconv.Atoi(m[2])
	commits := regexp.MustCompile(`writer: (\d+) commits`).FindStringSubmatch(out)
	if commits == nil {
		t.Fatal("summary has no writer line")
	}
	n, _ := strconv.Atoi(commits[1])
	if n < 10 || written < n {
		t.Errorf("writer made %d commits writing %d files; want at least 10 commits, one file each", n, written)
	}
	if live >= n {
		t.Errorf("%d live files after compaction, want fewer than the %d commits", live, n)
	}
	for _, want := range []string{"before reactor", "full scan", "  vs compacted", "expiry:", "health:", "reactor's log:"} {
		if !strings.Contains(out, want) {
			t.Errorf("demo output lacks %q", want)
		}
	}
	// Header, about one line per second of writing and settling, summary.
	if lines := strings.Count(out, "\n"); lines > 90 {
		t.Errorf("demo printed %d lines; keep it compact", lines)
	}
	// reactor's log goes to its file, never between the lines (errors
	// excepted, and this run should have none).
	if strings.Contains(out, "level=") || strings.Contains(stderr.String(), "level=") {
		t.Errorf("log lines in the demo's output:\nstdout:\n%s\nstderr:\n%s", out, stderr.String())
	}
}

// syncBuffer is a bytes.Buffer safe for the concurrent writes of a running
// command and the reads of the test.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
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
