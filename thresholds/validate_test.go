package thresholds

import (
	"errors"
	"math"
	"reflect"
	"strings"
	"testing"
	"time"
)

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
