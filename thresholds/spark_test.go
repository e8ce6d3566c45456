package thresholds

import (
	"strings"
	"testing"
	"time"

	"github.com/icereactor/reactor/jobkind"
)

func TestSparkSectionValidation(t *testing.T) {
	for _, tc := range []struct {
		name string
		doc  string
		// want are substrings of the error; none: the document is valid.
		want []string
		// never must not appear in the error (a credential).
		never string
	}{
		{name: "absent", doc: "defaults: {}"},
		{name: "endpoint without rules", doc: "spark: {endpoint: sc://spark:15002}"},
		{name: "full", doc: `
spark:
  endpoint: sc://spark.example:15002/;user_id=reactor;use_ssl=true
  token_file: /var/run/secrets/spark/token
  catalog: lake
  concurrency: 3
  timeout: 4h
  interrupt_grace: 30s
  connect_timeout: 10s
  on_failure: local
  local_max_input_bytes: 10GiB
  rules:
    - match: "db.*"
      kinds: [compact, sort]
      min_input_bytes: 1TiB
    - min_input_files: 100000
`},
		{name: "rules need an endpoint", doc: "spark: {rules: [{kinds: [compact]}]}", want: []string{"spark.endpoint: is required"}},
		{name: "wrong scheme", doc: "spark: {endpoint: 'http://spark:15002', rules: [{}]}", want: []string{"spark.endpoint: must be a Spark Connect URL"}},
		{name: "no host", doc: "spark: {endpoint: 'sc://:15002', rules: [{}]}", want: []string{"spark.endpoint: must name a host"}},
		{name: "bad port", doc: "spark: {endpoint: 'sc://h:99999', rules: [{}]}", want: []string{"spark.endpoint"}},
		{name: "query string", doc: "spark: {endpoint: 'sc://h:1?user_id=x', rules: [{}]}", want: []string{"not a query string"}},
		{
			name: "token in the endpoint is refused and never echoed", doc: "spark: {endpoint: 'sc://h:15002/;token=s3cr3t-value', rules: [{}]}",
			want: []string{"spark.endpoint: must not carry a token", "token_file or token_env"}, never: "s3cr3t-value",
		},
		{
			name: "userinfo is refused and never echoed", doc: "spark: {endpoint: 'sc://bob:pa55word@h:15002', rules: [{}]}",
			want: []string{"spark.endpoint: must not carry user information"}, never: "pa55word",
		},
		{name: "both token sources", doc: "spark: {endpoint: sc://h, token_file: /t, token_env: T}", want: []string{"spark.token_env: set token_file or token_env, not both"}},
		{name: "bad env name", doc: "spark: {endpoint: sc://h, token_env: 'A=B'}", want: []string{"spark.token_env: must be an environment variable name"}},
		{name: "empty catalog", doc: "spark: {endpoint: sc://h, catalog: ''}", want: []string{"spark.catalog: must not be empty"}},
		{name: "concurrency", doc: "spark: {endpoint: sc://h, concurrency: 0}", want: []string{"spark.concurrency: must be >= 1"}},
		{name: "timeout", doc: "spark: {endpoint: sc://h, timeout: 0s}", want: []string{"spark.timeout: must be > 0"}},
		{name: "on_failure value", doc: "spark: {endpoint: sc://h, on_failure: both}", want: []string{"spark.on_failure: must be retry or local"}},
		{name: "local needs a bound", doc: "spark: {endpoint: sc://h, on_failure: local}", want: []string{"spark.on_failure: local needs local_max_input_bytes"}},
		{name: "unknown kind", doc: "spark: {endpoint: sc://h, rules: [{kinds: [compact, delete_expired_files]}]}", want: []string{"spark.rules[0].kinds[1]: must be one of"}},
		{name: "bad glob", doc: "spark: {endpoint: sc://h, rules: [{match: 'db.[x'}]}", want: []string{"spark.rules[0].match: invalid glob"}},
		{name: "negative size", doc: "spark: {endpoint: sc://h, rules: [{min_input_files: -1}]}", want: []string{"spark.rules[0].min_input_files: must not be negative"}},
		{name: "unknown key", doc: "spark: {endpoint: sc://h, tokn_file: /x}", want: []string{"tokn_file"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(tc.doc))
			if len(tc.want) == 0 {
				if err != nil {
					t.Fatalf("Parse: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("Parse accepted %q", tc.doc)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
			if tc.never != "" && strings.Contains(err.Error(), tc.never) {
				t.Errorf("error %q echoes the credential %q", err, tc.never)
			}
		})
	}
}

func TestSparkSettingsDefaults(t *testing.T) {
	s := Default().SparkSettings()
	if s.Enabled || s.Concurrency != DefaultSparkConcurrency || s.Timeout != DefaultSparkTimeout || s.OnFailure != SparkOnFailureRetry {
		t.Fatalf("defaults = %+v", s)
	}
	cfg, err := Parse([]byte("spark: {endpoint: sc://h, timeout: 90m, concurrency: 4, rules: [{kinds: [compact]}]}"))
	if err != nil {
		t.Fatal(err)
	}
	s = cfg.SparkSettings()
	if !s.Enabled || s.Timeout != 90*time.Minute || s.Concurrency != 4 || s.Endpoint != "sc://h" || s.InterruptGrace != DefaultSparkInterruptGrace {
		t.Fatalf("settings = %+v", s)
	}
}

// TestSparkMatch is the offload policy: which jobs go to Spark and why.
func TestSparkMatch(t *testing.T) {
	cfg, err := Parse([]byte(`
spark:
  endpoint: sc://h
  rules:
    - match: "db.big_*"
      kinds: [compact, sort]
      min_input_bytes: 100GiB
    - match: "*.logs"
      min_input_files: 10000
`))
	if err != nil {
		t.Fatal(err)
	}
	s := cfg.SparkSettings()
	for _, tc := range []struct {
		table, kind string
		bytes       int64
		files       int
		rule        int
		why         string
	}{
		{"db.big_events", "compact", 200 * int64(GiB), 10, 0, `rules[0] matches: table matches "db.big_*", kind in [compact sort], input 200GiB >= 100GiB`},
		{"db.big_events", "compact", 99 * int64(GiB), 10, -1, "rules[0]: input 99GiB < min_input_bytes 100GiB"},
		{"db.big_events", "expire_snapshots", 200 * int64(GiB), 10, -1, "rules[0]: kind expire_snapshots not in [compact sort]"},
		{"db.small", "compact", 200 * int64(GiB), 10, -1, `rules[0]: table db.small does not match "db.big_*"`},
		{"ops.logs", "remove_orphans", 0, 20000, 1, "rules[1] matches"},
		{"ops.logs", "remove_orphans", 0, 9999, -1, "rules[1]: input 9999 files < min_input_files 10000"},
		{"ops.logs", "delete_expired_files", 0, 20000, -1, "delete_expired_files has no Spark procedure"},
	} {
		kind, err := jobkind.Parse(tc.kind)
		if err != nil {
			t.Fatal(err)
		}
		m := s.Match(tc.table, kind, tc.bytes, tc.files)
		if m.Rule != tc.rule || !strings.Contains(m.Why, tc.why) {
			t.Errorf("Match(%s, %s, %d, %d) = %+v, want rule %d saying %q", tc.table, tc.kind, tc.bytes, tc.files, m, tc.rule, tc.why)
		}
	}
	if m := Default().SparkSettings().Match("db.t", jobkind.Compact, 1<<60, 1<<30); m.Rule != -1 || m.Why != "no spark rules" {
		t.Errorf("without rules: %+v", m)
	}
}

func TestSparkAllowedLocally(t *testing.T) {
	cfg, err := Parse([]byte("spark: {endpoint: sc://h, on_failure: local, local_max_input_bytes: 1GiB, local_max_input_files: 100}"))
	if err != nil {
		t.Fatal(err)
	}
	s := cfg.SparkSettings()
	for _, tc := range []struct {
		bytes int64
		files int
		ok    bool
	}{{int64(GiB), 100, true}, {int64(GiB) + 1, 1, false}, {1, 101, false}} {
		if ok, why := s.AllowedLocally(tc.bytes, tc.files); ok != tc.ok {
			t.Errorf("AllowedLocally(%d, %d) = %v (%s)", tc.bytes, tc.files, ok, why)
		}
	}
	if ok, why := Default().SparkSettings().AllowedLocally(1, 1); ok || !strings.Contains(why, "retry") {
		t.Errorf("retry policy allowed a local run: %s", why)
	}
}
