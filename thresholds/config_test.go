package thresholds

import (
	"errors"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

// fieldErrors collects every *FieldError in err's tree, in order.
func fieldErrors(err error) []*FieldError {
	var out []*FieldError
	var walk func(error)
	walk = func(e error) {
		if e == nil {
			return
		}
		if fe, ok := e.(*FieldError); ok {
			out = append(out, fe)
			return
		}
		switch u := e.(type) {
		case interface{ Unwrap() []error }:
			for _, x := range u.Unwrap() {
				walk(x)
			}
		case interface{ Unwrap() error }:
			walk(u.Unwrap())
		}
	}
	walk(err)
	return out
}

func mustParse(t *testing.T, doc string) *Config {
	t.Helper()
	c, err := Parse([]byte(doc))
	if err != nil {
		t.Fatalf("Parse:\n%s\nerror: %v", doc, err)
	}
	return c
}

// builtinEffective is what For returns for any table under the empty config
// when the table has no target-size property.
func builtinEffective(table string) Effective {
	return Effective{
		Table:                      table,
		TargetFileSize:             512 << 20,
		TargetFileSizeSource:       "default",
		SmallFileSize:              402653184, // 0.75 * 512MiB
		MaxFileSize:                966367641, // 1.8 * 512MiB, truncated
		MinInputFiles:              5,
		SmallFileCount:             10,
		TierFanIn:                  10,
		QuietPeriod:                1 * time.Second,
		MaxQuietWait:               1 * time.Second,
		OrphanMargin:               72 * time.Hour,
		OrphanMarginFloor:          24 * time.Hour,
		OrphanListingInterval:      7 * 24 * time.Hour,
		ManifestCount:              20,
		TinyFileSize:               16 << 20,
		HealthMaxTinyFiles:         200,
		HealthMaxSnapshots:         150,
		HealthMaxSnapshotAge:       7 * 24 * time.Hour,
		SnapshotMaxAge:             5 * 24 * time.Hour,
		SnapshotMaxAgeSource:       "config",
		RetainLast:                 1,
		RetainLastSource:           "config",
		MinReaderMargin:            48 * time.Hour,
		ExpireDeletionDelay:        0,
		SnapshotCount:              100,
		Cooldown:                   1 * time.Second,
		ConflictCooldown:           5 * time.Second,
		CommitRetryTime:            60 * time.Second,
		MaxGroupSize:               1 << 30,
		PartialProgressCommits:     10,
		DeleteFileRatio:            0.5,
		DeletedRowRatio:            0.3,
		DeleteFileThreshold:        5,
		DeleteMinInputFiles:        5,
		DeleteTargetFileSize:       int64(64 * MiB),
		DeleteTargetFileSizeSource: SourceDefault,
		Strategy:                   StrategyBinpack,
		SortQuietPeriod:            24 * time.Hour,
	}
}

func TestBuiltinDefaults(t *testing.T) {
	b := Builtin()
	if *b.TargetFileSize != 512*MiB || *b.SmallFileRatio != 0.75 || *b.MaxFileRatio != 1.8 ||
		*b.MinInputFiles != 5 || *b.SmallFileCount != 10 ||
		b.QuietPeriod.D() != time.Second || b.Cooldown.D() != time.Second || b.MaxQuietWait.D() != time.Second ||
		b.ConflictCooldown.D() != 5*time.Second || b.CommitRetryTime.D() != time.Minute ||
		*b.SnapshotCount != 100 || *b.ManifestCount != 20 || *b.HealthMaxSnapshots != 150 ||
		*b.MaxGroupSize != 1*GiB || *b.PartialProgressCommits != 10 {
		t.Fatalf("Builtin() = %+v, does not match the documented defaults", b)
	}
	// Fresh copy each call: mutating one must not affect the next.
	*b.MinInputFiles = 99
	if *Builtin().MinInputFiles != DefaultMinInputFiles {
		t.Fatal("Builtin() returned shared state")
	}
	if err := (&Config{Defaults: Builtin()}).Validate(); err != nil {
		t.Fatalf("built-in defaults do not validate: %v", err)
	}
	// Every Policy field is set by Builtin.
	v := reflect.ValueOf(Builtin())
	for i := range v.NumField() {
		if v.Field(i).IsNil() {
			t.Errorf("Builtin().%s is nil", v.Type().Field(i).Name)
		}
	}
}

func TestEmptyDocumentIsDefault(t *testing.T) {
	for _, doc := range []string{
		"",
		"\n\n",
		"# nothing here\n",
		"---\n",
		"{}",
		"namespaces:\ndefaults:\ntables:\n",
		"namespaces: []\ndefaults: {}\ntables: []\n",
	} {
		c, err := Parse([]byte(doc))
		if err != nil {
			t.Errorf("Parse(%q): %v", doc, err)
			continue
		}
		if !reflect.DeepEqual(c, Default()) {
			t.Errorf("Parse(%q) = %+v, want Default() %+v", doc, c, Default())
		}
		if got, want := c.For("db.t", nil), builtinEffective("db.t"); got != want {
			t.Errorf("Parse(%q).For = %+v, want %+v", doc, got, want)
		}
		if !c.Watches("anything") {
			t.Errorf("Parse(%q) does not watch every namespace", doc)
		}
	}
	if err := Default().Validate(); err != nil {
		t.Fatalf("Default().Validate() = %v", err)
	}
	var nilCfg *Config
	if got := nilCfg.For("db.t", nil); got != builtinEffective("db.t") {
		t.Errorf("nil Config For = %+v", got)
	}
}

const fullDoc = `
namespaces: [db, prod.events]
defaults:
  target_file_size: 256MiB
  small_file_ratio: 0.6
  max_file_ratio: 2
  min_input_files: 3
  small_file_count: 7
  quiet_period: 500ms
  cooldown: 45s
  conflict_cooldown: 10m
  commit_retry_time: 2m
  max_group_size: 5GiB
  partial_progress_max_commits: 4
tables:
  - match: db.*
    cooldown: 1d
  - match: db.clicks
    target_file_size: 1073741824
    small_file_ratio: 0.5
    max_file_ratio: 1.25
    min_input_files: 2
    small_file_count: 4
    quiet_period: 0s
    conflict_cooldown: 1.5d
    commit_retry_time: 90s
    max_group_size: 100 GB
    partial_progress_max_commits: 1
`

func TestParseFullDocument(t *testing.T) {
	c := mustParse(t, fullDoc)

	if !reflect.DeepEqual(c.Namespaces, []string{"db", "prod.events"}) {
		t.Errorf("Namespaces = %q", c.Namespaces)
	}
	d := c.Defaults
	if *d.TargetFileSize != 256*MiB || *d.SmallFileRatio != 0.6 || *d.MaxFileRatio != 2 ||
		*d.MinInputFiles != 3 || *d.SmallFileCount != 7 ||
		d.QuietPeriod.D() != 500*time.Millisecond || d.Cooldown.D() != 45*time.Second ||
		d.ConflictCooldown.D() != 10*time.Minute || d.CommitRetryTime.D() != 2*time.Minute ||
		*d.MaxGroupSize != 5*GiB || *d.PartialProgressCommits != 4 {
		t.Errorf("Defaults decoded wrong: %+v", d)
	}
	if len(c.Tables) != 2 {
		t.Fatalf("got %d overrides, want 2", len(c.Tables))
	}
	glob := c.Tables[0]
	if glob.Match != "db.*" || glob.Cooldown.D() != 24*time.Hour || glob.TargetFileSize != nil || glob.SmallFileRatio != nil {
		t.Errorf("tables[0] decoded wrong: %+v", glob)
	}

	got := c.For("db.clicks", nil)
	want := Effective{
		Table:                      "db.clicks",
		TargetFileSize:             1 << 30,
		TargetFileSizeSource:       "config",
		SmallFileSize:              1 << 29,
		MaxFileSize:                1342177280,
		MinInputFiles:              2,
		SmallFileCount:             4,
		TierFanIn:                  10,
		QuietPeriod:                0,
		MaxQuietWait:               1 * time.Second,
		OrphanMargin:               72 * time.Hour,
		OrphanMarginFloor:          24 * time.Hour,
		OrphanListingInterval:      7 * 24 * time.Hour,
		ManifestCount:              20,
		TinyFileSize:               16 << 20,
		HealthMaxTinyFiles:         200,
		HealthMaxSnapshots:         150,
		HealthMaxSnapshotAge:       7 * 24 * time.Hour,
		SnapshotMaxAge:             5 * 24 * time.Hour,
		SnapshotMaxAgeSource:       "config",
		RetainLast:                 1,
		RetainLastSource:           "config",
		MinReaderMargin:            48 * time.Hour,
		ExpireDeletionDelay:        0,
		SnapshotCount:              100,
		Cooldown:                   24 * time.Hour, // from db.*: the exact override does not set it
		ConflictCooldown:           36 * time.Hour,
		CommitRetryTime:            90 * time.Second,
		MaxGroupSize:               100_000_000_000,
		PartialProgressCommits:     1,
		DeleteFileRatio:            0.5,
		DeletedRowRatio:            0.3,
		DeleteFileThreshold:        5,
		DeleteMinInputFiles:        5,
		DeleteTargetFileSize:       int64(64 * MiB),
		DeleteTargetFileSizeSource: SourceDefault,
		Strategy:                   StrategyBinpack,
		SortQuietPeriod:            24 * time.Hour,
	}
	if got != want {
		t.Errorf("For(db.clicks) =\n%+v\nwant\n%+v", got, want)
	}

	got = c.For("db.views", nil)
	want = Effective{
		Table:                      "db.views",
		TargetFileSize:             256 << 20,
		TargetFileSizeSource:       "config",
		SmallFileSize:              161061273, // 0.6 * 256MiB, truncated
		MaxFileSize:                512 << 20,
		MinInputFiles:              3,
		SmallFileCount:             7,
		TierFanIn:                  10,
		QuietPeriod:                500 * time.Millisecond,
		MaxQuietWait:               1 * time.Second,
		OrphanMargin:               72 * time.Hour,
		OrphanMarginFloor:          24 * time.Hour,
		OrphanListingInterval:      7 * 24 * time.Hour,
		ManifestCount:              20,
		TinyFileSize:               16 << 20,
		HealthMaxTinyFiles:         200,
		HealthMaxSnapshots:         150,
		HealthMaxSnapshotAge:       7 * 24 * time.Hour,
		SnapshotMaxAge:             5 * 24 * time.Hour,
		SnapshotMaxAgeSource:       "config",
		RetainLast:                 1,
		RetainLastSource:           "config",
		MinReaderMargin:            48 * time.Hour,
		ExpireDeletionDelay:        0,
		SnapshotCount:              100,
		Cooldown:                   24 * time.Hour,
		ConflictCooldown:           10 * time.Minute,
		CommitRetryTime:            2 * time.Minute,
		MaxGroupSize:               5 << 30,
		PartialProgressCommits:     4,
		DeleteFileRatio:            0.5,
		DeletedRowRatio:            0.3,
		DeleteFileThreshold:        5,
		DeleteMinInputFiles:        5,
		DeleteTargetFileSize:       int64(64 * MiB),
		DeleteTargetFileSizeSource: SourceDefault,
		Strategy:                   StrategyBinpack,
		SortQuietPeriod:            24 * time.Hour,
	}
	if got != want {
		t.Errorf("For(db.views) =\n%+v\nwant\n%+v", got, want)
	}
}

func TestExampleYAML(t *testing.T) {
	c, err := Load("example.yaml")
	if err != nil {
		t.Fatalf("example.yaml: %v", err)
	}
	if err := c.Validate(); err != nil {
		t.Fatalf("example.yaml does not validate: %v", err)
	}
	// The example documents the built-in defaults in its defaults section.
	if !reflect.DeepEqual(c.Defaults, Builtin()) {
		t.Errorf("example.yaml defaults = %+v, want exactly the built-in defaults", c.Defaults)
	}
	// Every field of the document appears in it (Builtin equality above
	// already proves every Policy field is set under defaults).
	text, err := os.ReadFile("example.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, typ := range []reflect.Type{reflect.TypeFor[Config](), reflect.TypeFor[Override](), reflect.TypeFor[Spark](), reflect.TypeFor[SparkRule]()} {
		for _, name := range yamlFieldNames(typ) {
			if !strings.Contains(string(text), name+":") {
				t.Errorf("example.yaml does not show %q", name)
			}
		}
	}
	if len(c.Tables) != 3 || c.Tables[0].Match != "db.*" || c.Tables[1].Match != "*.events_*" || c.Tables[2].Match != "db.clicks" {
		t.Errorf("example overrides = %+v", c.Tables)
	}
	if !c.Watches("db") || !c.Watches("prod.events") || c.Watches("prod") {
		t.Errorf("example namespaces = %q", c.Namespaces)
	}

	clicks := c.For("db.clicks", nil)
	if clicks.TargetFileSize != 1<<30 || clicks.SmallFileSize != 1<<29 || clicks.MaxFileSize != 2684354560 ||
		clicks.Cooldown != 24*time.Hour || clicks.QuietPeriod != 5*time.Minute || clicks.MaxGroupSize != 50<<30 ||
		clicks.PartialProgressCommits != 20 || clicks.ConflictCooldown != 15*time.Minute || clicks.CommitRetryTime != 2*time.Minute {
		t.Errorf("example For(db.clicks) = %+v", clicks)
	}
	ev := c.For("db.events_raw", nil) // matches db.* and *.events_*
	if ev.TargetFileSize != 128<<20 || ev.SmallFileCount != 20 || ev.MinInputFiles != 8 ||
		ev.Cooldown != time.Minute || ev.QuietPeriod != 10*time.Second {
		t.Errorf("example For(db.events_raw) = %+v", ev)
	}
}

func TestUnknownFieldRejected(t *testing.T) {
	tests := []struct {
		name, doc, path, msg string
	}{
		{"top level", "namespace: [db]\n", "namespace", `namespace: unknown field (did you mean "namespaces"?) (line 1, column 1)`},
		{"in defaults", "defaults:\n  cooldown: 1s\n  small_file_ration: 0.5\n", "defaults.small_file_ration", `defaults.small_file_ration: unknown field (did you mean "small_file_ratio"?) (line 3, column 3)`},
		{"in override", "tables:\n  - match: db.a\n  - match: db.b\n    colldown: 5s\n", "tables[1].colldown", `tables[1].colldown: unknown field (did you mean "cooldown"?) (line 4, column 5)`},
		{"no close match", "tables:\n  - match: db.a\n    zzzzzzzz: 1\n", "tables[0].zzzzzzzz", "unknown field (valid fields: match, target_file_size, small_file_ratio"},
		{"no close match in defaults", "defaults:\n  match: db.a\n", "defaults.match", "unknown field (valid fields: target_file_size, small_file_ratio"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := Parse([]byte(tt.doc))
			if err == nil {
				t.Fatalf("Parse succeeded: %+v", c)
			}
			if !strings.Contains(err.Error(), tt.msg) {
				t.Errorf("error %q does not contain %q", err, tt.msg)
			}
			var fe *FieldError
			if !errors.As(err, &fe) {
				t.Fatalf("error %v is not a *FieldError", err)
			}
			if fe.Path != tt.path {
				t.Errorf("FieldError.Path = %q, want %q", fe.Path, tt.path)
			}
		})
	}
}

func TestDecodeErrors(t *testing.T) {
	tests := []struct {
		name, doc string
		path      string // "" if the error is not a FieldError
		msg       string
	}{
		{"int type", "defaults:\n  min_input_files: abc\n", "defaults.min_input_files", `defaults.min_input_files: must be an integer, got "abc" (line 2, column 20)`},
		{"int overflow", "defaults:\n  min_input_files: 99999999999999999999\n", "defaults.min_input_files", "defaults.min_input_files: out of range for an integer"},
		{"float type", "tables:\n  - match: db.a\n    small_file_ratio: lots\n", "tables[0].small_file_ratio", `tables[0].small_file_ratio: must be a number, got "lots"`},
		{"size unit", "tables:\n  - match: db.a\n  - match: db.b\n    target_file_size: 12XB\n", "tables[1].target_file_size", `tables[1].target_file_size: invalid size: unknown unit "XB"`},
		{"size negative", "defaults:\n  max_group_size: -1GiB\n", "defaults.max_group_size", `defaults.max_group_size: invalid size: must not be negative, got "-1GiB" (line 2, column 19)`},
		{"duration", "defaults:\n  cooldown: 30\n", "defaults.cooldown", "defaults.cooldown: invalid duration: missing unit"},
		{"duration negative", "tables:\n  - match: db.a\n    quiet_period: -2s\n", "tables[0].quiet_period", `tables[0].quiet_period: invalid duration: must not be negative, got "-2s"`},
		{"namespaces not a list", "namespaces: db\n", "namespaces", "namespaces: must be a list, got a string"},
		{"defaults not a mapping", "defaults: [1]\n", "defaults", "defaults: must be a mapping, got a list"},
		{"match not a string", "tables:\n  - match: [a]\n", "tables[0].match", "tables[0].match: must be a string"},
		{"scalar document", "hello\n", "", "must be a mapping, got a string"},
		{"duplicate key", "defaults:\n  cooldown: 1s\n  cooldown: 2s\n", "", `thresholds: invalid YAML at line 3, column 3: mapping key "cooldown" already defined`},
		{"syntax", "defaults: {\n", "", "thresholds: invalid YAML at line 1"},
		{"two documents", "defaults: {}\n---\ntables: []\n", "", "expected a single YAML document"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := Parse([]byte(tt.doc))
			if err == nil {
				t.Fatalf("Parse succeeded: %+v", c)
			}
			if c != nil {
				t.Errorf("Parse returned a config with an error")
			}
			if !strings.Contains(err.Error(), tt.msg) {
				t.Errorf("error %q does not contain %q", err, tt.msg)
			}
			if strings.Contains(err.Error(), "\n") {
				t.Errorf("error is not one line: %q", err)
			}
			var fe *FieldError
			if errors.As(err, &fe) != (tt.path != "" || tt.name == "scalar document") {
				t.Fatalf("errors.As(%v, *FieldError) = %v", err, fe)
			}
			if fe != nil && fe.Path != tt.path {
				t.Errorf("FieldError.Path = %q, want %q", fe.Path, tt.path)
			}
		})
	}
}

func TestValidationRules(t *testing.T) {
	tests := []struct {
		name  string
		doc   string
		path  string
		value any
		msg   string
	}{
		{"target zero", "defaults:\n  target_file_size: 0\n", "defaults.target_file_size", Size(0), "defaults.target_file_size: must be > 0, got 0B"},
		{"small ratio high", "tables:\n  - match: db.a\n  - match: db.b\n    small_file_ratio: 1.5\n", "tables[1].small_file_ratio", 1.5, "tables[1].small_file_ratio: must be between 0 and 1 (exclusive), got 1.5"},
		{"small ratio one", "defaults:\n  small_file_ratio: 1\n", "defaults.small_file_ratio", 1.0, "defaults.small_file_ratio: must be between 0 and 1 (exclusive), got 1"},
		{"small ratio zero", "defaults:\n  small_file_ratio: 0\n", "defaults.small_file_ratio", 0.0, "must be between 0 and 1 (exclusive), got 0"},
		{"small ratio negative", "defaults:\n  small_file_ratio: -0.5\n", "defaults.small_file_ratio", -0.5, "got -0.5"},
		{"small ratio nan", "defaults:\n  small_file_ratio: .nan\n", "defaults.small_file_ratio", math.NaN(), "must be between 0 and 1 (exclusive), got NaN"},
		{"max ratio one", "defaults:\n  max_file_ratio: 1\n", "defaults.max_file_ratio", 1.0, "defaults.max_file_ratio: must be a finite number > 1, got 1"},
		{"max ratio low", "tables:\n  - match: db.a\n    max_file_ratio: 0.9\n", "tables[0].max_file_ratio", 0.9, "tables[0].max_file_ratio: must be a finite number > 1, got 0.9"},
		{"max ratio inf", "defaults:\n  max_file_ratio: .inf\n", "defaults.max_file_ratio", math.Inf(1), "got +Inf"},
		{"min input zero", "defaults:\n  min_input_files: 0\n", "defaults.min_input_files", 0, "defaults.min_input_files: must be >= 1, got 0"},
		{"small count zero", "tables:\n  - match: db.a\n    small_file_count: 0\n", "tables[0].small_file_count", 0, "tables[0].small_file_count: must be >= 1, got 0"},
		{"manifest count one", "defaults:\n  manifest_count: 1\n", "defaults.manifest_count", 1, "defaults.manifest_count: must be >= 2 (one manifest cannot be merged; a partitioned table needs more than one per partition), got 1"},
		{"count below min, same level", "defaults:\n  min_input_files: 8\n  small_file_count: 6\n", "defaults.small_file_count", 6, "defaults.small_file_count: must be >= min_input_files (8) or a triggered job would plan nothing, got 6"},
		{"count below builtin min", "defaults:\n  small_file_count: 3\n", "defaults.small_file_count", 3, "defaults.small_file_count: must be >= min_input_files (5, from built-in default)"},
		{"min above builtin count", "defaults:\n  min_input_files: 11\n", "defaults.min_input_files", 11, "defaults.min_input_files: must be <= small_file_count (10, from built-in default)"},
		{"override count below defaults min", "defaults:\n  min_input_files: 6\n  small_file_count: 20\ntables:\n  - match: db.a\n    small_file_count: 4\n", "tables[0].small_file_count", 4, "tables[0].small_file_count: must be >= min_input_files (6, from defaults) or a triggered job would plan nothing, got 4"},
		{"override min above defaults count", "defaults:\n  small_file_count: 12\ntables:\n  - match: db.a\n    min_input_files: 13\n", "tables[0].min_input_files", 13, "tables[0].min_input_files: must be <= small_file_count (12, from defaults) or a triggered job would plan nothing, got 13"},
		{"commit retry zero", "defaults:\n  commit_retry_time: 0s\n", "defaults.commit_retry_time", Duration(0), "defaults.commit_retry_time: must be > 0, got 0s"},
		{"max group zero", "tables:\n  - match: db.a\n    max_group_size: 0\n", "tables[0].max_group_size", Size(0), "tables[0].max_group_size: must be > 0, got 0B"},
		{"partial commits zero", "defaults:\n  partial_progress_max_commits: 0\n", "defaults.partial_progress_max_commits", 0, "defaults.partial_progress_max_commits: must be >= 1, got 0"},
		{"empty match", "tables:\n  - match: db.a\n  - cooldown: 1s\n", "tables[1].match", nil, `tables[1].match: must not be empty`},
		{"empty match string", "tables:\n  - match: ''\n", "tables[0].match", nil, `tables[0].match: must not be empty`},
		{"bad glob", "tables:\n  - match: db.a\n  - match: db.b\n  - match: 'db.[a-'\n", "tables[2].match", "db.[a-", `tables[2].match: invalid glob pattern (see Go's path.Match), got "db.[a-"`},
		{"bad glob trailing backslash", "tables:\n  - match: 'db.x\\'\n", "tables[0].match", `db.x\`, "tables[0].match: invalid glob pattern"},
		{"match without dot", "tables:\n  - match: events\n", "tables[0].match", "events", `tables[0].match: must be "namespace.table" or a glob; a name without a dot never matches, got "events"`},
		{"duplicate match", "tables:\n  - match: db.a\n    cooldown: 1s\n  - match: db.b\n  - match: db.a\n", "tables[2].match", "db.a", `tables[2].match: duplicates tables[0].match, got "db.a"`},
		{"empty namespace", "namespaces: [db, '']\n", "namespaces[1]", "", `namespaces[1]: must not be empty, got ""`},
		{"glob namespace", "namespaces: ['prod.*']\n", "namespaces[0]", "prod.*", `namespaces[0]: must be a namespace name (globs are not supported), got "prod.*"`},
		{"malformed namespace", "namespaces: [db, 'prod..events']\n", "namespaces[1]", "prod..events", "namespaces[1]: must be dot-joined namespace levels without empty parts"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := Parse([]byte(tt.doc))
			if err == nil {
				t.Fatalf("Parse succeeded: %+v", c)
			}
			if !strings.Contains(err.Error(), tt.msg) {
				t.Errorf("error %q does not contain %q", err, tt.msg)
			}
			var fe *FieldError
			if !errors.As(err, &fe) {
				t.Fatalf("error %v is not a *FieldError", err)
			}
			fes := fieldErrors(err)
			if len(fes) != 1 {
				t.Errorf("got %d field errors, want 1: %v", len(fes), err)
			}
			if fe.Path != tt.path {
				t.Errorf("FieldError.Path = %q, want %q", fe.Path, tt.path)
			}
			if f, ok := tt.value.(float64); ok && math.IsNaN(f) {
				if g, ok := fe.Value.(float64); !ok || !math.IsNaN(g) {
					t.Errorf("FieldError.Value = %#v, want NaN", fe.Value)
				}
			} else if fe.Value != tt.value {
				t.Errorf("FieldError.Value = %#v, want %#v", fe.Value, tt.value)
			}
		})
	}
}

func TestValidateProgrammaticConfig(t *testing.T) {
	// Configs built in Go bypass the decoder's negativity checks.
	neg := Duration(-time.Second)
	negSize := Size(-1)
	c := &Config{
		Defaults: Policy{QuietPeriod: &neg, MaxQuietWait: &neg, OrphanMargin: &neg, Cooldown: &neg, ConflictCooldown: &neg, CommitRetryTime: &neg, TargetFileSize: &negSize},
	}
	err := c.Validate()
	want := []string{
		"defaults.target_file_size: must be > 0, got -1B",
		"defaults.quiet_period: must not be negative, got -1s",
		"defaults.max_quiet_wait: must not be negative, got -1s",
		"defaults.orphan_margin: must be > 0, got -1s",
		"defaults.cooldown: must not be negative, got -1s",
		"defaults.conflict_cooldown: must not be negative, got -1s",
		"defaults.commit_retry_time: must be > 0, got -1s",
	}
	fes := fieldErrors(err)
	if len(fes) != len(want) {
		t.Fatalf("got %d errors, want %d: %v", len(fes), len(want), err)
	}
	for i, w := range want {
		if fes[i].Error() != w {
			t.Errorf("error %d = %q, want %q", i, fes[i].Error(), w)
		}
	}
}

func TestValidateCollectsAllErrors(t *testing.T) {
	doc := `
namespaces: ['']
defaults:
  small_file_ratio: 1.5
  min_input_files: 0
tables:
  - match: ''
  - match: 'db.['
    max_file_ratio: 0.5
  - match: db.x
    partial_progress_max_commits: 0
`
	_, err := Parse([]byte(doc))
	want := []string{
		"namespaces[0]",
		"defaults.small_file_ratio",
		"defaults.min_input_files",
		"tables[0].match",
		"tables[1].match",
		"tables[1].max_file_ratio",
		"tables[2].partial_progress_max_commits",
	}
	fes := fieldErrors(err)
	var got []string
	for _, fe := range fes {
		got = append(got, fe.Path)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("error paths = %q, want %q\nerror: %v", got, want, err)
	}
	if lines := strings.Count(err.Error(), "\n") + 1; lines != len(want) {
		t.Errorf("error has %d lines, want one per problem:\n%v", lines, err)
	}
}

func TestFieldErrorFormat(t *testing.T) {
	tests := []struct {
		fe   FieldError
		want string
	}{
		{FieldError{"defaults.min_input_files", 0, "must be >= 1"}, "defaults.min_input_files: must be >= 1, got 0"},
		{FieldError{"tables[1].small_file_ratio", 1.5, "must be between 0 and 1 (exclusive)"}, "tables[1].small_file_ratio: must be between 0 and 1 (exclusive), got 1.5"},
		{FieldError{"tables[2].match", "db.[", "invalid glob"}, `tables[2].match: invalid glob, got "db.["`},
		{FieldError{"x", nil, "unknown field"}, "x: unknown field"},
		{FieldError{"", 3, "bad"}, "bad, got 3"},
		{FieldError{"d", Duration(time.Minute), "r"}, "d: r, got 1m0s"},
		{FieldError{"s", 64 * MiB, "r"}, "s: r, got 64MiB"},
	}
	for _, tt := range tests {
		if got := tt.fe.Error(); got != tt.want {
			t.Errorf("Error() = %q, want %q", got, tt.want)
		}
	}
}

func TestPrecedence(t *testing.T) {
	doc := `
defaults:
  cooldown: 1m
  min_input_files: 2
  small_file_count: 5
tables:
  - match: db.events        # exact, listed first
    cooldown: 2m
  - match: db.*             # 3 literals
    cooldown: 3m
    quiet_period: 3s
    max_group_size: 3GiB
  - match: db.event?        # 7 literals: more specific glob
    cooldown: 4m
    quiet_period: 4s
  - match: "*.ev*"          # 3 literals, same as db.* but later in the file
    max_group_size: 5GiB
    conflict_cooldown: 5m
  - match: "[d]b.events"    # glob (class), 8 literals
    partial_progress_max_commits: 6
  - match: other.t
    cooldown: 9m
`
	c := mustParse(t, doc)
	tests := []struct {
		table                 string
		cooldown, quiet       time.Duration
		maxGroup              int64
		conflict              time.Duration
		partial, minIn, count int
	}{
		// exact beats every glob; other fields fall through in specificity order.
		{"db.events", 2 * time.Minute, 4 * time.Second, 5 << 30, 5 * time.Minute, 6, 2, 5},
		// db.event? (more literals) beats db.*; *.ev* (tie with db.*, later) wins max_group_size.
		{"db.eventz", 4 * time.Minute, 4 * time.Second, 5 << 30, 5 * time.Minute, 10, 2, 5},
		// only db.* matches.
		{"db.clicks", 3 * time.Minute, 3 * time.Second, 3 << 30, 5 * time.Second, 10, 2, 5},
		// only *.ev* matches; the rest from defaults, then built-ins.
		{"prod.evictions", time.Minute, 1 * time.Second, 5 << 30, 5 * time.Minute, 10, 2, 5},
		// nothing matches: defaults, then built-ins.
		{"prod.clicks", time.Minute, 1 * time.Second, 1 << 30, 5 * time.Second, 10, 2, 5},
		// * matches dots: db.* matches a nested namespace.
		{"db.sub.t", 3 * time.Minute, 3 * time.Second, 3 << 30, 5 * time.Second, 10, 2, 5},
		{"other.t", 9 * time.Minute, 1 * time.Second, 1 << 30, 5 * time.Second, 10, 2, 5},
	}
	for _, tt := range tests {
		e := c.For(tt.table, nil)
		if e.Table != tt.table || e.Cooldown != tt.cooldown || e.QuietPeriod != tt.quiet || e.MaxGroupSize != tt.maxGroup ||
			e.ConflictCooldown != tt.conflict || e.PartialProgressCommits != tt.partial ||
			e.MinInputFiles != tt.minIn || e.SmallFileCount != tt.count {
			t.Errorf("For(%q) = %+v\nwant cooldown=%v quiet=%v maxGroup=%d conflict=%v partial=%d min=%d count=%d",
				tt.table, e, tt.cooldown, tt.quiet, tt.maxGroup, tt.conflict, tt.partial, tt.minIn, tt.count)
		}
	}
}

func TestPrecedenceTieGoesToLaterOverride(t *testing.T) {
	c := mustParse(t, `
tables:
  - match: "db.a*"
    cooldown: 1m
  - match: "db.*b"
    cooldown: 2m
`)
	if got := c.For("db.ab", nil).Cooldown; got != 2*time.Minute {
		t.Errorf("tie: cooldown = %v, want 2m from the later override", got)
	}
	c.Tables[0], c.Tables[1] = c.Tables[1], c.Tables[0]
	if got := c.For("db.ab", nil).Cooldown; got != time.Minute {
		t.Errorf("tie, swapped: cooldown = %v, want 1m from the later override", got)
	}
}

func TestTargetFileSizeResolution(t *testing.T) {
	const prop = "write.target-file-size-bytes"
	withDefaults := mustParse(t, "defaults:\n  target_file_size: 256MiB\n")
	withOverride := mustParse(t, "tables:\n  - match: db.a\n    target_file_size: 64MiB\n")
	empty := Default()

	tests := []struct {
		name       string
		cfg        *Config
		table      string
		props      map[string]string
		want       int64
		wantSource string
	}{
		{"built-in default", empty, "db.a", nil, 512 << 20, "default"},
		{"unrelated properties", empty, "db.a", map[string]string{"format-version": "2"}, 512 << 20, "default"},
		{"table property beats built-in", empty, "db.a", map[string]string{prop: "134217728"}, 128 << 20, "table property write.target-file-size-bytes"},
		{"table property with spaces", empty, "db.a", map[string]string{prop: " 1000 "}, 1000, "table property write.target-file-size-bytes"},
		{"config defaults beat table property", withDefaults, "db.a", map[string]string{prop: "134217728"}, 256 << 20, "config"},
		{"config override beats table property", withOverride, "db.a", map[string]string{prop: "134217728"}, 64 << 20, "config"},
		{"override not matching: defaults", withOverride, "db.b", nil, 512 << 20, "default"},
		{"override not matching: property", withOverride, "db.b", map[string]string{prop: "1048576"}, 1 << 20, "table property write.target-file-size-bytes"},
		{"malformed property ignored", empty, "db.a", map[string]string{prop: "512MiB"}, 512 << 20, `default (ignored malformed table property write.target-file-size-bytes="512MiB")`},
		{"zero property ignored", empty, "db.a", map[string]string{prop: "0"}, 512 << 20, `default (ignored malformed table property write.target-file-size-bytes="0")`},
		{"negative property ignored", empty, "db.a", map[string]string{prop: "-5"}, 512 << 20, `default (ignored malformed table property write.target-file-size-bytes="-5")`},
		{"empty property ignored", empty, "db.a", map[string]string{prop: ""}, 512 << 20, `default (ignored malformed table property write.target-file-size-bytes="")`},
		{"malformed property irrelevant under config", withDefaults, "db.a", map[string]string{prop: "junk"}, 256 << 20, "config"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := tt.cfg.For(tt.table, tt.props)
			if e.TargetFileSize != tt.want || e.TargetFileSizeSource != tt.wantSource {
				t.Errorf("target = %d (%q), want %d (%q)", e.TargetFileSize, e.TargetFileSizeSource, tt.want, tt.wantSource)
			}
			if e.SmallFileSize != int64(float64(tt.want)*0.75) || e.MaxFileSize != int64(float64(tt.want)*1.8) {
				t.Errorf("derived sizes = %d, %d; want 0.75x and 1.8x of %d", e.SmallFileSize, e.MaxFileSize, tt.want)
			}
		})
	}
	if !strings.HasPrefix(empty.For("db.a", map[string]string{prop: "x"}).TargetFileSizeSource, SourceDefault) {
		t.Error("malformed-property source does not start with SourceDefault")
	}
}

func TestDerivedSizesCapped(t *testing.T) {
	c := mustParse(t, "defaults:\n  target_file_size: 9223372036854775807\n  max_file_ratio: 3\n")
	e := c.For("db.a", nil)
	if e.MaxFileSize != math.MaxInt64 {
		t.Errorf("MaxFileSize = %d, want capped at MaxInt64", e.MaxFileSize)
	}
	if e.SmallFileSize <= 0 {
		t.Errorf("SmallFileSize = %d, want positive", e.SmallFileSize)
	}
	e = Default().For("db.a", map[string]string{TargetFileSizeProperty: "9223372036854775807"})
	if e.MaxFileSize != math.MaxInt64 {
		t.Errorf("MaxFileSize from property = %d, want capped", e.MaxFileSize)
	}
}

func TestSmallFileCountNeverBelowMinInputFiles(t *testing.T) {
	// Each override is valid on its own (over defaults), but a table matching
	// both combines min_input_files 9 (exact) with small_file_count 6 (glob).
	c := mustParse(t, `
tables:
  - match: db.*
    small_file_count: 6
    min_input_files: 6
  - match: db.big
    min_input_files: 9
`)
	e := c.For("db.big", nil)
	if e.MinInputFiles != 9 || e.SmallFileCount != 9 {
		t.Errorf("min=%d count=%d, want count raised to min 9", e.MinInputFiles, e.SmallFileCount)
	}
	if e := c.For("db.small", nil); e.MinInputFiles != 6 || e.SmallFileCount != 6 {
		t.Errorf("db.small: min=%d count=%d, want 6, 6", e.MinInputFiles, e.SmallFileCount)
	}
}

func TestWatches(t *testing.T) {
	c := mustParse(t, "namespaces: [db, prod.events]\n")
	tests := []struct {
		ns   string
		want bool
	}{
		{"db", true},
		{"prod.events", true},
		{"prod", false},          // parent of a watched namespace
		{"db.sub", false},        // child of a watched namespace
		{"prod.events.x", false}, // child
		{"DB", false},            // case-sensitive
		{"", false},
		{"other", false},
	}
	for _, tt := range tests {
		if got := c.Watches(tt.ns); got != tt.want {
			t.Errorf("Watches(%q) = %v, want %v", tt.ns, got, tt.want)
		}
	}
	for _, ns := range []string{"db", "prod.events", "anything.else", ""} {
		if !Default().Watches(ns) {
			t.Errorf("Default().Watches(%q) = false, want true", ns)
		}
	}
	var nilCfg *Config
	if !nilCfg.Watches("db") {
		t.Error("nil config does not watch everything")
	}
}

func TestSpecificity(t *testing.T) {
	tests := []struct {
		pattern  string
		literals int
		glob     bool
	}{
		{"db.events", 9, false},
		{"db.*", 3, true},
		{"*.events_*", 8, true},
		{"db.event?", 8, true},
		{"db.[a-z]x", 4, true},
		{`db.\*`, 4, false},
		{"db.é", 4, false},
		{"*", 0, true},
	}
	for _, tt := range tests {
		lit, glob := specificity(tt.pattern)
		if lit != tt.literals || glob != tt.glob {
			t.Errorf("specificity(%q) = %d, %v; want %d, %v", tt.pattern, lit, glob, tt.literals, tt.glob)
		}
	}
}

func TestLoad(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good.yaml")
	if err := os.WriteFile(good, []byte("namespaces: [db]\ndefaults:\n  cooldown: 5d\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := Load(good)
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	if got := c.For("db.t", nil).Cooldown; got != 5*24*time.Hour {
		t.Errorf("cooldown = %v, want 120h", got)
	}

	bad := filepath.Join(dir, "bad.yaml")
	if err := os.WriteFile(bad, []byte("defaults:\n  min_input_files: 0\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err = Load(bad)
	if err == nil || !strings.Contains(err.Error(), bad) || !strings.Contains(err.Error(), "defaults.min_input_files: must be >= 1, got 0") {
		t.Errorf("Load(bad) error = %v, want it to name the file and the field", err)
	}
	var fe *FieldError
	if !errors.As(err, &fe) || fe.Path != "defaults.min_input_files" {
		t.Errorf("Load(bad) error does not wrap the FieldError: %v", err)
	}

	missing := filepath.Join(dir, "missing.yaml")
	_, err = Load(missing)
	if err == nil || !strings.Contains(err.Error(), missing) || !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Load(missing) error = %v, want it to name the file and wrap ErrNotExist", err)
	}
}

func TestRetentionResolution(t *testing.T) {
	cfg := mustParse(t, "defaults:\n  snapshot_max_age: 2d\n  retain_last: 3\n  min_reader_margin: 6h\n")
	e := cfg.For("db.a", nil)
	if e.SnapshotMaxAge != 48*time.Hour || e.RetainLast != 3 || e.MinReaderMargin != 6*time.Hour || e.SnapshotMaxAgeSource != "config" {
		t.Errorf("config only: %+v", e)
	}
	e = cfg.For("db.a", map[string]string{
		MaxSnapshotAgeProperty:     "3600000",
		MinSnapshotsToKeepProperty: "7",
	})
	if e.SnapshotMaxAge != time.Hour || e.RetainLast != 7 ||
		e.SnapshotMaxAgeSource != "table property history.expire.max-snapshot-age-ms" ||
		e.RetainLastSource != "table property history.expire.min-snapshots-to-keep" {
		t.Errorf("table properties win: %+v", e)
	}
	e = cfg.For("db.a", map[string]string{MaxSnapshotAgeProperty: "soon", MinSnapshotsToKeepProperty: "0"})
	if e.SnapshotMaxAge != 48*time.Hour || e.RetainLast != 3 {
		t.Errorf("malformed properties are ignored: %+v", e)
	}
	if err := mustFail(t, "defaults:\n  retain_last: 0\n"); !strings.Contains(err, "defaults.retain_last: must be >= 1") {
		t.Errorf("retain_last 0: %s", err)
	}
	if err := mustFail(t, "defaults:\n  snapshot_max_age: 0s\n"); !strings.Contains(err, "defaults.snapshot_max_age: must be > 0") {
		t.Errorf("snapshot_max_age 0: %s", err)
	}
	if err := mustFail(t, "defaults:\n  min_reader_margin: soon\n"); !strings.Contains(err, "defaults.min_reader_margin") {
		t.Errorf("bad duration: %s", err)
	}
}

func mustFail(t *testing.T, doc string) string {
	t.Helper()
	_, err := Parse([]byte(doc))
	if err == nil {
		t.Fatalf("Parse(%q) succeeded, want an error", doc)
	}
	return err.Error()
}

func TestOrphanMarginFloor(t *testing.T) {
	if err := mustFail(t, "defaults:\n  orphan_margin: 1h\n"); !strings.Contains(err, "defaults.orphan_margin: must be >= orphan_margin_floor (24h") {
		t.Errorf("margin below the built-in floor: %s", err)
	}
	if err := mustFail(t, "defaults:\n  orphan_margin_floor: 48h\ntables:\n  - match: db.a\n    orphan_margin: 36h\n"); !strings.Contains(err, "tables[0].orphan_margin: must be >= orphan_margin_floor (48h") {
		t.Errorf("override below the configured floor: %s", err)
	}
	cfg := mustParse(t, "defaults:\n  orphan_margin_floor: 1h\n  orphan_margin: 2h\ntables:\n  - match: db.a\n    orphan_delete: true\n")
	if e := cfg.For("db.a", nil); e.OrphanMargin != 2*time.Hour || !e.OrphanDelete {
		t.Errorf("db.a: %+v", e)
	}
	if e := cfg.For("db.b", nil); e.OrphanDelete {
		t.Errorf("orphan cleanup must default to a dry run: %+v", e)
	}
}

// orphan_margin_floor is a floor whatever level sets it: an override can
// raise it, never lower it below the defaults' floor, and no effective
// margin is ever below the effective floor, even when one override sets
// the margin and another, overlapping one, the floor.
func TestOrphanMarginFloorIsAFloor(t *testing.T) {
	for _, tt := range []struct{ doc, want string }{
		// An override lowering the floor to sneak a short margin through.
		{"tables:\n  - match: db.a\n    orphan_margin_floor: 1s\n    orphan_margin: 1s\n",
			"tables[0].orphan_margin_floor: must be >= the defaults' orphan_margin_floor (24h0m0s, from built-in default): an override may raise the floor, never lower it, got 1s"},
		{"defaults: {orphan_margin_floor: 48h}\ntables:\n  - match: \"db.*\"\n    orphan_margin_floor: 36h\n",
			"tables[0].orphan_margin_floor: must be >= the defaults' orphan_margin_floor (48h0m0s, from defaults)"},
		// A glob raises the floor; an exact override for one of its tables
		// sets a margin below it.
		{"tables:\n  - match: \"db.*\"\n    orphan_margin_floor: 96h\n  - match: db.a\n    orphan_margin: 30h\n",
			`tables[1].orphan_margin: is below orphan_margin_floor 96h0m0s (from tables[0]) for tables matching "db.a"`},
		// Two overlapping globs.
		{"tables:\n  - match: \"db.ev*\"\n    orphan_margin: 25h\n  - match: \"db.*\"\n    orphan_margin_floor: 48h\n",
			`tables[0].orphan_margin: is below orphan_margin_floor 48h0m0s (from tables[1]) for tables matching "db.ev*"`},
	} {
		if err := mustFail(t, tt.doc); !strings.Contains(err, tt.want) {
			t.Errorf("%s\nerror %q\nwant it to contain %q", tt.doc, err, tt.want)
		}
	}

	// A raised floor raises the margin inherited from the defaults.
	cfg := mustParse(t, "defaults: {orphan_margin: 30h}\ntables:\n  - match: db.keep\n    orphan_margin_floor: 96h\n")
	if e := cfg.For("db.keep", nil); e.OrphanMargin != 96*time.Hour || e.OrphanMarginFloor != 96*time.Hour {
		t.Errorf("db.keep: margin %s floor %s, want both 96h", e.OrphanMargin, e.OrphanMarginFloor)
	}
	if e := cfg.For("db.other", nil); e.OrphanMargin != 30*time.Hour || e.OrphanMarginFloor != DefaultOrphanMarginFloor {
		t.Errorf("db.other: margin %s floor %s", e.OrphanMargin, e.OrphanMarginFloor)
	}

	// Globs whose overlap Validate cannot see (neither pattern matches the
	// other read as a name): For still never returns a margin below the
	// floor.
	cfg = mustParse(t, "tables:\n  - match: \"*.events\"\n    orphan_margin: 25h\n  - match: \"db.*\"\n    orphan_margin_floor: 48h\n")
	if e := cfg.For("db.events", nil); e.OrphanMargin != 48*time.Hour || e.OrphanMarginFloor != 48*time.Hour {
		t.Errorf("db.events: margin %s floor %s, want 48h both", e.OrphanMargin, e.OrphanMarginFloor)
	}
	if e := cfg.For("x.events", nil); e.OrphanMargin != 25*time.Hour || e.OrphanMarginFloor != DefaultOrphanMarginFloor {
		t.Errorf("x.events: margin %s floor %s", e.OrphanMargin, e.OrphanMarginFloor)
	}
}

// Delete-maintenance keys: defaults, the delete target size's precedence
// (configuration, then the table property, then 64MiB), and validation.
func TestDeleteSettings(t *testing.T) {
	cfg, err := Parse([]byte("defaults: {delete_file_ratio: 0.2}\ntables:\n  - match: db.cdc\n    delete_target_file_size: 8MiB\n    deleted_row_ratio: 0.1\n"))
	if err != nil {
		t.Fatal(err)
	}
	e := cfg.For("db.other", map[string]string{DeleteTargetFileSizeProperty: "1048576"})
	if e.DeleteFileRatio != 0.2 || e.DeletedRowRatio != DefaultDeletedRowRatio || e.DeleteFileThreshold != 5 ||
		e.DeleteMinInputFiles != 5 || e.DeleteTargetFileSize != MiB.Bytes() ||
		e.DeleteTargetFileSizeSource != "table property "+DeleteTargetFileSizeProperty {
		t.Errorf("db.other = %+v", e)
	}
	e = cfg.For("db.cdc", map[string]string{DeleteTargetFileSizeProperty: "1048576"})
	if e.DeleteTargetFileSize != 8*MiB.Bytes() || e.DeleteTargetFileSizeSource != SourceConfig || e.DeletedRowRatio != 0.1 {
		t.Errorf("db.cdc: configuration beats the table property: %+v", e)
	}
	if e := cfg.For("db.x", nil); e.DeleteTargetFileSize != 64*MiB.Bytes() || e.DeleteTargetFileSizeSource != SourceDefault {
		t.Errorf("db.x: built-in 64MiB: %+v", e)
	}
	for doc, want := range map[string]string{
		"defaults: {delete_file_ratio: 0}":             "defaults.delete_file_ratio: must be a finite number > 0",
		"defaults: {deleted_row_ratio: 1.5}":           "defaults.deleted_row_ratio: must be > 0 and <= 1",
		"defaults: {delete_file_threshold: 0}":         "defaults.delete_file_threshold: must be >= 1",
		"defaults: {delete_min_input_files: 0}":        "defaults.delete_min_input_files: must be >= 1",
		"defaults: {delete_target_file_size: 0}":       "defaults.delete_target_file_size: must be > 0",
		"concurrency: 0":                               "concurrency: must be >= 1",
		"tables: [{match: a.b, deleted_row_ratio: 0}]": "tables[0].deleted_row_ratio",
	} {
		if err := mustFail(t, doc); !strings.Contains(err, want) {
			t.Errorf("%s: %s, want %q", doc, err, want)
		}
	}
}

// sort_memory and spill_dir: defaults, values, and what is refused.
func TestSortMemoryAndSpillDir(t *testing.T) {
	cfg, err := Parse([]byte(""))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.SortMemoryOrDefault() != DefaultSortMemory || !filepath.IsAbs(cfg.SpillDirOrDefault()) {
		t.Errorf("defaults: %s, %q", cfg.SortMemoryOrDefault(), cfg.SpillDirOrDefault())
	}
	cfg, err = Parse([]byte("sort_memory: 1GiB\nspill_dir: /var/spill\n"))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.SortMemoryOrDefault() != GiB || cfg.SpillDirOrDefault() != "/var/spill" {
		t.Errorf("set: %s, %q", cfg.SortMemoryOrDefault(), cfg.SpillDirOrDefault())
	}
	for doc, want := range map[string]string{
		"sort_memory: 1MiB":     "sort_memory: must be >= 16MiB",
		"sort_memory: -1":       "sort_memory: invalid size",
		"sort_memory: lots":     "sort_memory: invalid size",
		"spill_dir: spill":      `spill_dir: must be an absolute path, got "spill"`,
		`spill_dir: ""`:         "spill_dir: must be an absolute path",
		"spill_dir: [/a]":       "spill_dir",
		"sort_memory: [1, 2]":   "sort_memory",
		"spill_dir: ../../etc":  "spill_dir: must be an absolute path",
		"sort_memory: 16777215": "sort_memory: must be >= 16MiB",
	} {
		if err := mustFail(t, doc); !strings.Contains(err, want) {
			t.Errorf("%s: %s, want %q", doc, err, want)
		}
	}
}
