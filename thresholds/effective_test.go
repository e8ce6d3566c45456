package thresholds

import (
	"math"
	"strings"
	"testing"
	"time"
)

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
