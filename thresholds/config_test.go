package thresholds

import (
	"errors"
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
		RefreshInterval:            5 * time.Minute,
		ManifestCount:              20,
		TinyFileSize:               16 << 20, // 1/32 of the 512MiB target
		TinyFileSizeSource:         TinyFromTarget,
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
		CompactWhenQuietAfter:      time.Minute,
	}
}

func TestBuiltinDefaults(t *testing.T) {
	b := Builtin()
	// Every Policy field is set by Builtin.
	v := reflect.ValueOf(b)
	for i := range v.NumField() {
		if v.Field(i).IsNil() {
			t.Errorf("Builtin().%s is nil", v.Type().Field(i).Name)
		}
	}
	if t.Failed() {
		t.FailNow()
	}
	// The documented defaults, one field at a time.
	for _, tt := range []struct {
		field     string
		got, want any
	}{
		{"TargetFileSize", *b.TargetFileSize, 512 * MiB},
		{"SmallFileRatio", *b.SmallFileRatio, 0.75},
		{"MaxFileRatio", *b.MaxFileRatio, 1.8},
		{"MinInputFiles", *b.MinInputFiles, 5},
		{"SmallFileCount", *b.SmallFileCount, 10},
		{"QuietPeriod", b.QuietPeriod.D(), time.Second},
		{"Cooldown", b.Cooldown.D(), time.Second},
		{"MaxQuietWait", b.MaxQuietWait.D(), time.Second},
		{"ConflictCooldown", b.ConflictCooldown.D(), 5 * time.Second},
		{"CommitRetryTime", b.CommitRetryTime.D(), time.Minute},
		{"SnapshotCount", *b.SnapshotCount, 100},
		{"ManifestCount", *b.ManifestCount, 20},
		{"HealthMaxSnapshots", *b.HealthMaxSnapshots, 150},
		{"MaxGroupSize", *b.MaxGroupSize, 1 * GiB},
		{"PartialProgressCommits", *b.PartialProgressCommits, 10},
	} {
		if tt.got != tt.want {
			t.Errorf("Builtin().%s = %v (%T), want the documented %v (%T)", tt.field, tt.got, tt.got, tt.want, tt.want)
		}
	}
	// Fresh copy each call: mutating one must not affect the next.
	*b.MinInputFiles = 99
	if *Builtin().MinInputFiles != DefaultMinInputFiles {
		t.Fatal("Builtin() returned shared state")
	}
	if err := (&Config{Defaults: Builtin()}).Validate(); err != nil {
		t.Fatalf("built-in defaults do not validate: %v", err)
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

// TestEmptyListSpellingsDecodeAlike: an absent list, `key:`, `key: null`
// and `key: []` are one config at every depth, so a marshal round trip
// (which writes `[]`) cannot change it.
func TestEmptyListSpellingsDecodeAlike(t *testing.T) {
	const head = "spark:\n  endpoint: sc://spark:15002\n  rules:\n    - match: db.*\n"
	var want *Config
	for _, kinds := range []string{"", "      kinds:\n", "      kinds: null\n", "      kinds: []\n"} {
		c, err := Parse([]byte(head + kinds))
		if err != nil {
			t.Fatalf("Parse(%q): %v", kinds, err)
		}
		if got := c.Spark.Rules[0].Kinds; got != nil {
			t.Errorf("kinds spelled %q decoded as %#v, want nil", kinds, got)
		}
		if want == nil {
			want = c
		} else if !reflect.DeepEqual(c, want) {
			t.Errorf("kinds spelled %q decodes to a different config", kinds)
		}
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
		RefreshInterval:            5 * time.Minute,
		ManifestCount:              20,
		TinyFileSize:               32 << 20, // 1/32 of the 1GiB target
		TinyFileSizeSource:         TinyFromTarget,
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
		CompactWhenQuietAfter:      time.Minute,
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
		RefreshInterval:            5 * time.Minute,
		ManifestCount:              20,
		TinyFileSize:               8 << 20, // 1/32 of the 256MiB target
		TinyFileSizeSource:         TinyFromTarget,
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
		CompactWhenQuietAfter:      time.Minute,
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
		field     bool   // the error is a *FieldError
		path      string // its Path ("" is the document itself)
		msg       string
	}{
		{"int type", "defaults:\n  min_input_files: abc\n", true, "defaults.min_input_files", `defaults.min_input_files: must be an integer, got "abc" (line 2, column 20)`},
		{"int overflow", "defaults:\n  min_input_files: 99999999999999999999\n", true, "defaults.min_input_files", "defaults.min_input_files: out of range for an integer"},
		{"float type", "tables:\n  - match: db.a\n    small_file_ratio: lots\n", true, "tables[0].small_file_ratio", `tables[0].small_file_ratio: must be a number, got "lots"`},
		{"size unit", "tables:\n  - match: db.a\n  - match: db.b\n    target_file_size: 12XB\n", true, "tables[1].target_file_size", `tables[1].target_file_size: invalid size: unknown unit "XB"`},
		{"size negative", "defaults:\n  max_group_size: -1GiB\n", true, "defaults.max_group_size", `defaults.max_group_size: invalid size: must not be negative, got "-1GiB" (line 2, column 19)`},
		{"duration", "defaults:\n  cooldown: 30\n", true, "defaults.cooldown", "defaults.cooldown: invalid duration: missing unit"},
		{"duration negative", "tables:\n  - match: db.a\n    quiet_period: -2s\n", true, "tables[0].quiet_period", `tables[0].quiet_period: invalid duration: must not be negative, got "-2s"`},
		{"namespaces not a list", "namespaces: db\n", true, "namespaces", "namespaces: must be a list, got a string"},
		{"defaults not a mapping", "defaults: [1]\n", true, "defaults", "defaults: must be a mapping, got a list"},
		{"match not a string", "tables:\n  - match: [a]\n", true, "tables[0].match", "tables[0].match: must be a string"},
		{"scalar document", "hello\n", true, "", "must be a mapping, got a string"},
		{"duplicate key", "defaults:\n  cooldown: 1s\n  cooldown: 2s\n", false, "", `thresholds: invalid YAML at line 3, column 3: mapping key "cooldown" already defined`},
		{"syntax", "defaults: {\n", false, "", "thresholds: invalid YAML at line 1"},
		{"two documents", "defaults: {}\n---\ntables: []\n", false, "", "expected a single YAML document"},
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
			if errors.As(err, &fe) != tt.field {
				t.Fatalf("errors.As(%v, *FieldError) = %v", err, fe)
			}
			if fe != nil && fe.Path != tt.path {
				t.Errorf("FieldError.Path = %q, want %q", fe.Path, tt.path)
			}
		})
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

// The tiny-file size follows the target unless the file sets it: the
// seeds' 16MiB is 1/32 of Spark's 512MiB target, and 16MiB against a
// 256KiB target would call every file tiny.
func TestTinyFileSizeFollowsTheTarget(t *testing.T) {
	for _, tc := range []struct {
		doc        string
		props      map[string]string
		want       int64
		wantSource string
	}{
		{"", nil, 16 << 20, TinyFromTarget},
		{"", map[string]string{TargetFileSizeProperty: "262144"}, 8 << 10, TinyFromTarget},
		{"defaults: {target_file_size: 128MiB}\n", nil, 4 << 20, TinyFromTarget},
		{"defaults: {tiny_file_size: 1MiB}\n", map[string]string{TargetFileSizeProperty: "262144"}, 1 << 20, SourceConfig},
		{"defaults: {target_file_size: 16}\n", nil, 1, TinyFromTarget},
	} {
		cfg, err := Parse([]byte(tc.doc))
		if err != nil {
			t.Fatal(err)
		}
		set := cfg.For("db.t", tc.props)
		if set.TinyFileSize != tc.want || set.TinyFileSizeSource != tc.wantSource {
			t.Errorf("%q %v: tiny %d (%s), want %d (%s)", tc.doc, tc.props, set.TinyFileSize, set.TinyFileSizeSource, tc.want, tc.wantSource)
		}
	}
}
