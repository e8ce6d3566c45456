package thresholds

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"os"
	"path"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/goccy/go-yaml"
	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/parser"

	"github.com/icereactor/reactor/sortorder"
)

// Built-in defaults, used for every field that neither the document nor (for
// the target file size) the table's properties set.
const (
	DefaultTargetFileSize         = 512 * MiB
	DefaultSmallFileRatio         = 0.75
	DefaultMaxFileRatio           = 1.8
	DefaultMinInputFiles          = 5
	DefaultSmallFileCount         = 10
	DefaultTierFanIn              = 10
	DefaultQuietPeriod            = 1 * time.Second
	DefaultMaxQuietWait           = 1 * time.Second
	DefaultOrphanMargin           = 72 * time.Hour
	DefaultOrphanMarginFloor      = 24 * time.Hour
	DefaultOrphanListingInterval  = 7 * Day
	DefaultManifestCount          = 20
	DefaultTinyFileSize           = 16 * MiB
	DefaultHealthMaxTinyFiles     = 200
	DefaultHealthMaxSnapshots     = 150
	DefaultHealthMaxSnapshotAge   = 7 * Day
	DefaultSnapshotMaxAge         = 5 * Day
	DefaultRetainLast             = 1
	DefaultMinReaderMargin        = 48 * time.Hour
	DefaultSnapshotCount          = 100
	DefaultCooldown               = 1 * time.Second
	DefaultConflictCooldown       = 5 * time.Second
	DefaultCommitRetryTime        = 60 * time.Second
	DefaultMaxGroupSize           = 1 * GiB
	DefaultSortQuietPeriod        = 1 * Day
	DefaultPartialProgressCommits = 10
	DefaultDeleteFileRatio        = 0.5
	DefaultDeletedRowRatio        = 0.3
	DefaultDeleteFileThreshold    = 5
	DefaultDeleteMinInputFiles    = 5
	DefaultDeleteTargetFileSize   = 64 * MiB
)

// DeleteTargetFileSizeProperty is the Iceberg table property consulted for
// the size merged position-delete files are written at when the document
// does not set delete_target_file_size.
const DeleteTargetFileSizeProperty = "write.delete.target-file-size-bytes"

// TargetFileSizeProperty is the Iceberg table property consulted for the
// target file size when the document does not set one.
const TargetFileSizeProperty = "write.target-file-size-bytes"

// Snapshot retention properties a table may declare; they win over the
// configuration, as in Spark's expire_snapshots.
const (
	MaxSnapshotAgeProperty     = "history.expire.max-snapshot-age-ms"
	MinSnapshotsToKeepProperty = "history.expire.min-snapshots-to-keep"
)

// Values of Effective.TargetFileSizeSource. When the table property is
// present but malformed, the source is SourceDefault followed by a note,
// e.g. `default (ignored malformed table property write.target-file-size-bytes="abc")`.
const (
	SourceConfig        = "config"
	SourceTableProperty = "table property " + TargetFileSizeProperty
	SourceDefault       = "default"
)

// Config is the whole thresholds document.
type Config struct {
	// Namespaces lists the watched namespaces, dot-joined ("db",
	// "prod.events"). Matching is exact: "prod" does not include
	// "prod.events". Empty means every namespace.
	Namespaces []string `yaml:"namespaces"`
	// Defaults applies to every table unless an override sets a field.
	Defaults Policy `yaml:"defaults"`
	// Tables are per-table overrides; see [Config.For] for precedence.
	Tables []Override `yaml:"tables"`
	// Concurrency bounds the jobs reactor runs at once, across tables.
	// reactor run's --concurrency wins over it; unset in both, 2. It sizes
	// the worker's pool at start, so a reload that changes it is logged and
	// takes effect on restart. Must be >= 1.
	Concurrency *int `yaml:"concurrency"`
	// Spark hands the jobs its rules select to a Spark cluster through
	// Spark Connect (see [Spark]); absent, every job runs in reactor.
	Spark *Spark `yaml:"spark"`
	// SortMemory is the most memory one sort or z-order group holds in
	// decoded rows: a larger group is sorted in runs of this size, spilled
	// to SpillDir and merged. Unset: DefaultSortMemory. Must be >=
	// MinSortMemory. Read at start.
	SortMemory *Size `yaml:"sort_memory"`
	// SpillDir is the local directory sorts spill their runs to (created
	// if missing). Unset: reactor-spill under the system's temporary
	// directory. Must be an absolute path. Read at start.
	SpillDir *string `yaml:"spill_dir"`
}

// DefaultConcurrency is the job concurrency when neither the file nor the
// command line sets one.
const DefaultConcurrency = 2

// DefaultSortMemory and MinSortMemory bound sort_memory.
const (
	DefaultSortMemory = 256 * MiB
	MinSortMemory     = 16 * MiB
)

// SortMemoryOrDefault is sort_memory, or its default.
func (c *Config) SortMemoryOrDefault() Size {
	if c.SortMemory != nil {
		return *c.SortMemory
	}
	return DefaultSortMemory
}

// SpillDirOrDefault is spill_dir, or its default.
func (c *Config) SpillDirOrDefault() string {
	if c.SpillDir != nil {
		return *c.SpillDir
	}
	return filepath.Join(os.TempDir(), "reactor-spill")
}

// Override is a Policy for the tables whose "namespace.table" name matches
// Match.
type Override struct {
	// Match is an exact "namespace.table" name or a path.Match glob over it
	// ("db.*", "*.events_*"). '*' matches any run of characters, dots
	// included, so "db.*" also matches "db.sub.t".
	Match  string `yaml:"match"`
	Policy `yaml:",inline"`
}

// Policy is one set of thresholds. Every field is a pointer so that "unset"
// (inherit) differs from an explicit zero. New thresholds are added as new
// pointer fields.
type Policy struct {
	// TargetFileSize is the size compaction writes files at. Unset: the
	// table property write.target-file-size-bytes, else 512MiB. Must be > 0.
	TargetFileSize *Size `yaml:"target_file_size"`
	// SmallFileRatio: a file is small below SmallFileRatio*target.
	// Default 0.75; must be in (0, 1).
	SmallFileRatio *float64 `yaml:"small_file_ratio"`
	// MaxFileRatio: files above MaxFileRatio*target are never rewritten.
	// Default 1.8; must be > 1.
	MaxFileRatio *float64 `yaml:"max_file_ratio"`
	// MinInputFiles is the fewest files a rewrite group may have (Spark's
	// min-input-files). Default 5; must be >= 1.
	MinInputFiles *int `yaml:"min_input_files"`
	// SmallFileCount: a partition with this many small files is scheduled
	// for compaction. Default 10; must be >= 1 and >= MinInputFiles.
	SmallFileCount *int `yaml:"small_file_count"`
	// TierFanIn: small files are tiered by size from the small size down,
	// each tier TierFanIn times smaller than the one above; a tier holding
	// this many files (at least min_input_files) merges into the next, so a
	// compacted file is not rewritten with every trickle of new ones.
	// Default 10; must be >= 2.
	TierFanIn *int `yaml:"tier_fan_in"`
	// QuietPeriod: partitions written more recently than this wait (cold
	// partitions go first, and a batch writer's burst of commits is not
	// compacted between two of them). Default 1s; must be >= 0.
	QuietPeriod *Duration `yaml:"quiet_period"`
	// OrphanMargin: a file under a table's data/ that no snapshot has
	// referenced for this long is an orphan candidate (Spark's
	// remove_orphan_files older_than). Default 72h; must be > 0.
	OrphanMargin *Duration `yaml:"orphan_margin"`
	// OrphanMarginFloor: no orphan_margin (here or in any override) may be
	// below it; a margin shorter than the longest write would delete an
	// in-flight writer's files. Default 24h; must be > 0.
	OrphanMarginFloor *Duration `yaml:"orphan_margin_floor"`
	// OrphanDelete: false (the default) runs orphan cleanup as a dry run,
	// reporting candidates without deleting; set true per table to delete.
	OrphanDelete *bool `yaml:"orphan_delete"`
	// OrphanListingInterval: how often a table's location is listed in
	// full to find orphans the bucket notifications did not report (or all
	// of them, for tables without notifications). Default 7d; > 0.
	OrphanListingInterval *Duration `yaml:"orphan_listing_interval"`
	// SnapshotMaxAge is expire_snapshots' older_than: snapshots older than
	// this are expired. The table property history.expire.max-snapshot-age-ms
	// wins over it. Default 5d; must be > 0.
	SnapshotMaxAge *Duration `yaml:"snapshot_max_age"`
	// RetainLast is expire_snapshots' retain_last: this many of the newest
	// snapshots are kept whatever their age. The table property
	// history.expire.min-snapshots-to-keep wins over it. Default 1; >= 1.
	RetainLast *int `yaml:"retain_last"`
	// MinReaderMargin is the longest legitimate reader: a file that left
	// the table (expiry removed the last snapshot that referenced it) is
	// deleted only once this long has passed since, whatever the
	// retention (seed 000: a 6-hour horizon deleted files under a
	// 15-minute reader). It protects files, not snapshots: retention bounds
	// the metadata, this margin bounds what a reader can lose. The list of
	// files waiting for it is stored under the table's metadata location
	// and survives restarts. 0 deletes at the expiry. Default 48h.
	MinReaderMargin *Duration `yaml:"min_reader_margin"`
	// ExpireDeletionDelay: files expiry unlinked wait at least this long
	// before deletion, on top of nothing: the wait is the longer of it and
	// min_reader_margin. Kept for configurations written before the margin
	// applied to files; new ones set min_reader_margin. Default 0.
	ExpireDeletionDelay *Duration `yaml:"expire_deletion_delay"`
	// SnapshotCount bounds the history: a table with this many snapshots
	// has its oldest expired (beyond retain_last and branch or tag heads)
	// until the newest half remain, without waiting for snapshot_max_age.
	// A table committing every second carries at most this many snapshots
	// in the metadata every commit reads and writes (at 500, a writer's
	// commit took twice as long as at 50). Default 100; >= 2.
	SnapshotCount *int `yaml:"snapshot_count"`
	// Health check (seed 000's DAG step): a table is unhealthy with more
	// than HealthMaxTinyFiles files below TinyFileSize (default 200 below
	// 16MiB), more than HealthMaxSnapshots snapshots (150: above snapshot_count,
	// so unhealthy means expiry is not keeping up), or a snapshot
	// older than HealthMaxSnapshotAge (7d).
	TinyFileSize         *Size     `yaml:"tiny_file_size"`
	HealthMaxTinyFiles   *int      `yaml:"health_max_tiny_files"`
	HealthMaxSnapshots   *int      `yaml:"health_max_snapshots"`
	HealthMaxSnapshotAge *Duration `yaml:"health_max_snapshot_age"`
	// ManifestCount: a table whose current snapshot has this many data
	// manifests gets its manifests rewritten, clustered by partition (every
	// streaming append adds one, and every later job pays for reading them).
	// A rewrite cannot go below one manifest per partition, so a table is
	// rewritten only while it has more data manifests than partitions with
	// data, whatever this says (a table's partition count is not known
	// here: the planner logs when the value cannot be reached). Default
	// 20: every scan plans by reading every manifest, and at 100 the
	// planning of a small streaming table cost more than reading its rows;
	// must be >= 2.
	ManifestCount *int `yaml:"manifest_count"`
	// MaxQuietWait bounds how long a partition over its threshold waits for
	// a quiet period: a partition that is written continuously (the current
	// hour of a streaming table) is compacted anyway once it has waited this
	// long. Default 1s: a streaming partition written every second never
	// cools, and each second it waits is another file a reader opens (at
	// 10m a 5 commits/s table gathered hundreds per partition, issue 13);
	// the tier rule keeps compacting it early cheap. 0 waits indefinitely;
	// must be >= 0.
	MaxQuietWait *Duration `yaml:"max_quiet_wait"`
	// Cooldown is the minimum time between two jobs on one partition.
	// Default 1s: at 20 commits/s over 8 partitions, 5s (with 5s of
	// max_quiet_wait) let each partition gather 25 files between two jobs;
	// a job that would change nothing is not committed, so a short
	// cool-down cannot loop. Must be >= 0.
	Cooldown *Duration `yaml:"cooldown"`
	// ConflictCooldown is the cooldown after a job gave up on commit
	// conflicts. Default 5s (a partition still over its threshold is
	// planned again soon, not parked for minutes); must be >= 0.
	ConflictCooldown *Duration `yaml:"conflict_cooldown"`
	// CommitRetryTime bounds the total time spent retrying a conflicting
	// commit. Default 60s; must be > 0.
	CommitRetryTime *Duration `yaml:"commit_retry_time"`
	// MaxGroupSize is the most input bytes per rewrite group. Default 10GiB
	// (Spark's max-file-group-size-bytes is 100GiB; reactor is one small
	// worker). Must be > 0.
	MaxGroupSize *Size `yaml:"max_group_size"`
	// PartialProgressCommits: a job with more than one group commits in up
	// to this many batches. Default 10; must be >= 1.
	PartialProgressCommits *int `yaml:"partial_progress_max_commits"`
	// DeleteFileRatio: a partition with at least DeleteMinInputFiles delete
	// files (position, equality, deletion vectors) and this many delete
	// files per data file is scheduled for delete maintenance. Default
	// 0.5; must be > 0.
	DeleteFileRatio *float64 `yaml:"delete_file_ratio"`
	// DeletedRowRatio: a partition whose delete rows are this fraction of
	// its data rows is compacted, dropping the deleted rows (Spark's
	// delete-ratio-threshold). Default 0.3; must be in (0, 1].
	DeletedRowRatio *float64 `yaml:"deleted_row_ratio"`
	// DeleteFileThreshold: a data file with this many delete files applying
	// to it is rewritten by compaction whatever its size (Spark's
	// delete-file-threshold). Default 5; must be >= 1.
	DeleteFileThreshold *int `yaml:"delete_file_threshold"`
	// DeleteMinInputFiles: the fewest position-delete files a partition's
	// delete rewrite merges (Spark's rewrite_position_delete_files
	// min-input-files), and the fewest delete files for DeleteFileRatio to
	// count. Default 5; must be >= 1.
	DeleteMinInputFiles *int `yaml:"delete_min_input_files"`
	// DeleteTargetFileSize is the size merged position-delete files are
	// written at. Unset: the table property
	// write.delete.target-file-size-bytes, else 64MiB. Must be > 0.
	DeleteTargetFileSize *Size `yaml:"delete_target_file_size"`
	// Strategy is how a partition's rows are ordered by the periodic
	// rewrite: binpack (the default: no rewrite beyond small-file
	// compaction), sort, or zorder (Spark's rewrite_data_files strategies).
	Strategy *Strategy `yaml:"strategy"`
	// SortOrder is the order of a sort or zorder rewrite in Spark's syntax:
	// "customer_id ASC NULLS LAST, order_ts DESC" or "zorder(c1, c2)". Empty
	// with strategy sort: the table's default sort order. Columns are checked
	// against the table's schema when a job is planned.
	SortOrder *string `yaml:"sort_order"`
	// SortQuietPeriod: a partition holding files no sort rewrite wrote is
	// sorted once it has not been written for this long (sort and z-order
	// rewrite whole partitions: they run on their own, slower cadence).
	// Default 1d; must be >= 0.
	SortQuietPeriod *Duration `yaml:"sort_quiet_period"`
}

// Strategy is a rewrite strategy.
type Strategy string

// Strategies.
const (
	StrategyBinpack Strategy = "binpack"
	StrategySort    Strategy = "sort"
	StrategyZOrder  Strategy = "zorder"
)

// Sorts reports whether the strategy orders rows (sort or zorder).
func (s Strategy) Sorts() bool { return s == StrategySort || s == StrategyZOrder }

// Effective is the fully resolved, concrete policy for one table.
type Effective struct {
	Table                  string // "namespace.table" it was resolved for
	TargetFileSize         int64
	TargetFileSizeSource   string // SourceConfig, SourceTableProperty or SourceDefault (possibly with a note)
	SmallFileSize          int64  // files below this are small: TargetFileSize * SmallFileRatio
	MaxFileSize            int64  // files above this are never rewritten: TargetFileSize * MaxFileRatio
	MinInputFiles          int
	SmallFileCount         int
	TierFanIn              int
	QuietPeriod            time.Duration
	MaxQuietWait           time.Duration
	OrphanMargin           time.Duration // never below OrphanMarginFloor
	OrphanMarginFloor      time.Duration // the highest floor among the matching levels
	OrphanDelete           bool
	OrphanListingInterval  time.Duration
	ManifestCount          int
	TinyFileSize           int64
	HealthMaxTinyFiles     int
	HealthMaxSnapshots     int
	HealthMaxSnapshotAge   time.Duration
	SnapshotMaxAge         time.Duration
	SnapshotMaxAgeSource   string
	RetainLast             int
	RetainLastSource       string
	MinReaderMargin        time.Duration
	ExpireDeletionDelay    time.Duration
	SnapshotCount          int
	Cooldown               time.Duration
	ConflictCooldown       time.Duration
	CommitRetryTime        time.Duration
	MaxGroupSize           int64
	PartialProgressCommits int
	DeleteFileRatio        float64
	DeletedRowRatio        float64
	DeleteFileThreshold    int
	DeleteMinInputFiles    int
	DeleteTargetFileSize   int64
	// DeleteTargetFileSizeSource: SourceConfig, the table property or
	// SourceDefault.
	DeleteTargetFileSizeSource string
	Strategy                   Strategy
	SortOrder                  string // "" with strategy sort: the table's default order
	SortQuietPeriod            time.Duration
}

// Builtin returns the built-in defaults as a fully populated Policy (a fresh
// copy on every call). It is what the Default* constants describe.
func Builtin() Policy {
	return Policy{
		TargetFileSize:         ptr(DefaultTargetFileSize),
		SmallFileRatio:         ptr(DefaultSmallFileRatio),
		MaxFileRatio:           ptr(DefaultMaxFileRatio),
		MinInputFiles:          ptr(DefaultMinInputFiles),
		SmallFileCount:         ptr(DefaultSmallFileCount),
		TierFanIn:              ptr(DefaultTierFanIn),
		QuietPeriod:            ptr(Duration(DefaultQuietPeriod)),
		MaxQuietWait:           ptr(Duration(DefaultMaxQuietWait)),
		OrphanMargin:           ptr(Duration(DefaultOrphanMargin)),
		OrphanMarginFloor:      ptr(Duration(DefaultOrphanMarginFloor)),
		OrphanDelete:           ptr(false),
		OrphanListingInterval:  ptr(Duration(DefaultOrphanListingInterval)),
		ManifestCount:          ptr(DefaultManifestCount),
		TinyFileSize:           ptr(Size(DefaultTinyFileSize)),
		HealthMaxTinyFiles:     ptr(DefaultHealthMaxTinyFiles),
		HealthMaxSnapshots:     ptr(DefaultHealthMaxSnapshots),
		HealthMaxSnapshotAge:   ptr(Duration(DefaultHealthMaxSnapshotAge)),
		SnapshotMaxAge:         ptr(Duration(DefaultSnapshotMaxAge)),
		RetainLast:             ptr(DefaultRetainLast),
		MinReaderMargin:        ptr(Duration(DefaultMinReaderMargin)),
		ExpireDeletionDelay:    ptr(Duration(0)),
		SnapshotCount:          ptr(DefaultSnapshotCount),
		Cooldown:               ptr(Duration(DefaultCooldown)),
		ConflictCooldown:       ptr(Duration(DefaultConflictCooldown)),
		CommitRetryTime:        ptr(Duration(DefaultCommitRetryTime)),
		MaxGroupSize:           ptr(DefaultMaxGroupSize),
		PartialProgressCommits: ptr(DefaultPartialProgressCommits),
		DeleteFileRatio:        ptr(DefaultDeleteFileRatio),
		DeletedRowRatio:        ptr(DefaultDeletedRowRatio),
		DeleteFileThreshold:    ptr(DefaultDeleteFileThreshold),
		DeleteMinInputFiles:    ptr(DefaultDeleteMinInputFiles),
		DeleteTargetFileSize:   ptr(Size(DefaultDeleteTargetFileSize)),
		Strategy:               ptr(StrategyBinpack),
		SortOrder:              ptr(""),
		SortQuietPeriod:        ptr(Duration(DefaultSortQuietPeriod)),
	}
}

func ptr[T any](v T) *T { return &v }

// Default returns the built-in configuration: the empty document, which
// watches every namespace and uses the built-in defaults for every table.
// Parse of an empty document returns an equal Config.
func Default() *Config { return &Config{} }

// Parse decodes and validates a thresholds document. Decoding is strict:
// unknown or duplicate keys and values of the wrong type are errors naming
// the field path and source line. An empty document is [Default]. The
// document must be a single YAML document.
//
// Errors wrap *FieldError values where a field can be named (see
// [FieldError]); validation errors are all reported, joined. A document
// over [MaxFileSize] or [MaxDepth] is refused with a [*LimitError] before
// it is parsed, and one with a YAML tag (!!str, !x) with a [*FieldError]:
// go-yaml's decoder crashes on some tagged values. Whatever the input,
// Parse returns: a panic inside it (a bug here or in go-yaml) comes back as
// an [*InternalError] carrying the stack.
func Parse(data []byte) (cfg *Config, err error) {
	defer func() {
		if r := recover(); r != nil {
			cfg, err = nil, newInternalError(r)
		}
	}()
	if err := checkLimits(data); err != nil {
		return nil, err
	}
	file, err := parser.ParseBytes(data, 0)
	if err != nil {
		return nil, syntaxError(err)
	}
	var body ast.Node
	for _, doc := range file.Docs {
		if doc == nil || doc.Body == nil {
			continue
		}
		if body != nil {
			return nil, errors.New("thresholds: expected a single YAML document, found more than one")
		}
		body = doc.Body
	}
	cfg = Default()
	if body != nil {
		if err := checkTags(body); err != nil {
			return nil, err
		}
		if err := checkUnknownFields(body, reflect.TypeFor[Config]()); err != nil {
			return nil, err
		}
		if err := yaml.NodeToValue(body, cfg, yaml.Strict()); err != nil {
			return nil, decodeError(body, err)
		}
	}
	// The decoder leaves empty, non-nil slices for absent lists; normalize
	// so that absent, null and [] all equal Default().
	if len(cfg.Namespaces) == 0 {
		cfg.Namespaces = nil
	}
	if len(cfg.Tables) == 0 {
		cfg.Tables = nil
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return cfg, nil
}

// Load reads the file at path ([ReadFile]: at most [MaxFileSize] bytes)
// and [Parse]s it. Errors name the path.
func Load(path string) (*Config, error) {
	data, err := ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("thresholds: load %s: %w", path, err)
	}
	cfg, err := Parse(data)
	if err != nil {
		return nil, fmt.Errorf("thresholds: load %s: %w", path, err)
	}
	return cfg, nil
}

// Watches reports whether tables in namespace (dot-joined, e.g.
// "prod.events") are watched: true when the namespace list is empty or
// contains namespace exactly.
func (c *Config) Watches(namespace string) bool {
	if c == nil || len(c.Namespaces) == 0 {
		return true
	}
	return slices.Contains(c.Namespaces, namespace)
}

// Validate checks every field and returns all problems joined with
// errors.Join, each a *FieldError naming its path, e.g.
// "tables[1].small_file_ratio: must be between 0 and 1 (exclusive), got 1.5".
//
// Besides each field's own range it rejects: empty, malformed or glob
// namespaces; an override with an empty match, a bad glob, an exact match
// without a dot (it could never match "namespace.table"), or the same match
// as an earlier override; and small_file_count < min_input_files, checked
// for defaults (over the built-ins) and for each override (over defaults and
// built-ins), since such a job would plan nothing.
func (c *Config) Validate() error {
	var errs []error
	add := func(path string, value any, reason string, args ...any) {
		errs = append(errs, &FieldError{Path: path, Value: value, Reason: fmt.Sprintf(reason, args...)})
	}

	for i, ns := range c.Namespaces {
		p := fmt.Sprintf("namespaces[%d]", i)
		switch {
		case ns == "":
			add(p, ns, "must not be empty")
		case strings.ContainsAny(ns, "*?[\\"):
			add(p, ns, "must be a namespace name (globs are not supported)")
		case slices.Contains(strings.Split(ns, "."), ""):
			add(p, ns, "must be dot-joined namespace levels without empty parts")
		}
	}

	if c.Concurrency != nil && *c.Concurrency < 1 {
		add("concurrency", *c.Concurrency, "must be >= 1")
	}
	if c.SortMemory != nil && *c.SortMemory < MinSortMemory {
		add("sort_memory", *c.SortMemory, "must be >= %s (a run must hold enough rows to be worth spilling)", MinSortMemory)
	}
	if c.SpillDir != nil && !filepath.IsAbs(*c.SpillDir) {
		add("spill_dir", *c.SpillDir, "must be an absolute path")
	}

	c.validateSpark(add)

	builtin := Builtin()
	defaults := layer{name: "defaults", policy: &c.Defaults}
	c.Defaults.validate("defaults", []layer{{name: "built-in default", policy: &builtin}}, add)

	seen := make(map[string]int, len(c.Tables))
	for i := range c.Tables {
		o := &c.Tables[i]
		p := fmt.Sprintf("tables[%d]", i)
		switch _, glob := specificity(o.Match); {
		case o.Match == "":
			add(p+".match", nil, `must not be empty (use "namespace.table" or a glob such as "db.*")`)
		case !validPattern(o.Match):
			add(p+".match", o.Match, "invalid glob pattern (see Go's path.Match)")
		case !glob && !strings.Contains(o.Match, "."):
			add(p+".match", o.Match, `must be "namespace.table" or a glob; a name without a dot never matches`)
		default:
			if j, dup := seen[o.Match]; dup {
				add(p+".match", o.Match, "duplicates tables[%d].match", j)
			} else {
				seen[o.Match] = i
			}
		}
		o.Policy.validate(p, []layer{defaults, {name: "built-in default", policy: &builtin}}, add)
	}
	c.validateOrphanFloors(add)
	return joinBounded(errs)
}

// validateOrphanFloors checks the orphan margin against the floor across
// overlapping overrides: one override may set the margin and another,
// matching the same tables, a higher floor. The tables checked are every
// exact match and every glob read as a name (so "db.*" and "db.ev*"
// overlap on "db.ev*"); For raises any margin such a check could miss.
func (c *Config) validateOrphanFloors(add func(path string, value any, reason string, args ...any)) {
	reported := map[string]bool{}
	for _, o := range c.Tables {
		if o.Match == "" || !validPattern(o.Match) {
			continue
		}
		margin, marginAt, floor, floorAt := c.orphanMargins(o.Match)
		// A margin inherited from the defaults is raised to a floor an
		// override sets (that is what raising the floor asks for); a margin
		// an override sets below it is a contradiction.
		if margin >= floor || reported[marginAt] || !strings.HasPrefix(marginAt, "tables[") {
			continue
		}
		reported[marginAt] = true
		add(marginAt+".orphan_margin", Duration(margin), "is below orphan_margin_floor %s (from %s) for tables matching %q: every effective margin must be >= the effective floor",
			Duration(floor), floorAt, o.Match)
	}
}

// orphanMargins resolves, for table, the margin (and the path of the level
// that set it) and the effective floor: the highest floor among the
// matching overrides and the defaults (or the built-in floor when the
// defaults set none).
func (c *Config) orphanMargins(table string) (margin time.Duration, marginAt string, floor time.Duration, floorAt string) {
	builtin := Builtin()
	margin, marginAt = time.Duration(*builtin.OrphanMargin), "built-in default"
	floor, floorAt = time.Duration(*builtin.OrphanMarginFloor), "built-in default"
	if v := c.Defaults.OrphanMarginFloor; v != nil {
		floor, floorAt = time.Duration(*v), "defaults"
	}
	if v := c.Defaults.OrphanMargin; v != nil {
		margin, marginAt = time.Duration(*v), "defaults"
	}
	marginSet := false
	for _, i := range c.matchingIndexes(table) {
		p := &c.Tables[i].Policy
		if v := p.OrphanMargin; v != nil && !marginSet {
			margin, marginAt, marginSet = time.Duration(*v), fmt.Sprintf("tables[%d]", i), true
		}
		if v := p.OrphanMarginFloor; v != nil && time.Duration(*v) > floor {
			floor, floorAt = time.Duration(*v), fmt.Sprintf("tables[%d]", i)
		}
	}
	return margin, marginAt, floor, floorAt
}

type layer struct {
	name   string
	policy *Policy
}

// validate checks p's own fields (reported under prefix) and the
// small_file_count >= min_input_files rule against p merged over parents.
func (p *Policy) validate(prefix string, parents []layer, add func(path string, value any, reason string, args ...any)) {
	f := func(name string) string { return prefix + "." + name }

	if v := p.TargetFileSize; v != nil && *v <= 0 {
		add(f("target_file_size"), *v, "must be > 0")
	}
	if v := p.SmallFileRatio; v != nil && !(*v > 0 && *v < 1) {
		add(f("small_file_ratio"), *v, "must be between 0 and 1 (exclusive)")
	}
	if v := p.MaxFileRatio; v != nil && (!(*v > 1) || math.IsInf(*v, 0)) {
		add(f("max_file_ratio"), *v, "must be a finite number > 1")
	}
	if v := p.MinInputFiles; v != nil && *v < 1 {
		add(f("min_input_files"), *v, "must be >= 1")
	}
	if v := p.SmallFileCount; v != nil && *v < 1 {
		add(f("small_file_count"), *v, "must be >= 1")
	}
	if v := p.TierFanIn; v != nil && *v < 2 {
		add(f("tier_fan_in"), *v, "must be >= 2 (a tier of one file merges into nothing)")
	}
	if v := p.OrphanMargin; v != nil && *v > 0 {
		floor, fromLayer := inherit(p, parents, func(q *Policy) *Duration { return q.OrphanMarginFloor })
		if *v < floor {
			add(f("orphan_margin"), *v, "must be >= orphan_margin_floor (%s%s): a shorter margin can delete an in-flight writer's files", floor, from(fromLayer))
		}
	}
	// The floor protects writers the operator of the defaults knows about:
	// an override may raise it for its tables, never lower it.
	if v := p.OrphanMarginFloor; v != nil && *v > 0 && len(parents) > 1 {
		floor, fromLayer := inherit(parents[0].policy, parents[1:], func(q *Policy) *Duration { return q.OrphanMarginFloor })
		if fromLayer == "" {
			fromLayer = parents[0].name
		}
		if *v < floor {
			add(f("orphan_margin_floor"), *v, "must be >= the defaults' orphan_margin_floor (%s%s): an override may raise the floor, never lower it",
				floor, from(fromLayer))
		}
	}
	if v := p.TinyFileSize; v != nil && *v <= 0 {
		add(f("tiny_file_size"), *v, "must be > 0")
	}
	for name, v := range map[string]*int{"health_max_tiny_files": p.HealthMaxTinyFiles, "health_max_snapshots": p.HealthMaxSnapshots} {
		if v != nil && *v < 0 {
			add(f(name), *v, "must be >= 0")
		}
	}
	if v := p.RetainLast; v != nil && *v < 1 {
		add(f("retain_last"), *v, "must be >= 1 (the current snapshot is always kept)")
	}
	if v := p.SnapshotCount; v != nil && *v < 2 {
		add(f("snapshot_count"), *v, "must be >= 2")
	}
	if v := p.ManifestCount; v != nil && *v < 2 {
		add(f("manifest_count"), *v, "must be >= 2 (one manifest cannot be merged; a partitioned table needs more than one per partition)")
	}
	for _, d := range []struct {
		name     string
		v        *Duration
		positive bool
	}{
		{"quiet_period", p.QuietPeriod, false},
		{"max_quiet_wait", p.MaxQuietWait, false},
		{"orphan_margin", p.OrphanMargin, true},
		{"orphan_margin_floor", p.OrphanMarginFloor, true},
		{"orphan_listing_interval", p.OrphanListingInterval, true},
		{"snapshot_max_age", p.SnapshotMaxAge, true},
		{"health_max_snapshot_age", p.HealthMaxSnapshotAge, true},
		{"min_reader_margin", p.MinReaderMargin, false},
		{"expire_deletion_delay", p.ExpireDeletionDelay, false},
		{"cooldown", p.Cooldown, false},
		{"conflict_cooldown", p.ConflictCooldown, false},
		{"commit_retry_time", p.CommitRetryTime, true},
	} {
		switch {
		case d.v == nil:
		case d.positive && *d.v <= 0:
			add(f(d.name), *d.v, "must be > 0")
		case *d.v < 0:
			add(f(d.name), *d.v, "must not be negative")
		}
	}
	if v := p.MaxGroupSize; v != nil && *v <= 0 {
		add(f("max_group_size"), *v, "must be > 0")
	}
	if v := p.PartialProgressCommits; v != nil && *v < 1 {
		add(f("partial_progress_max_commits"), *v, "must be >= 1")
	}
	if v := p.DeleteFileRatio; v != nil && (!(*v > 0) || math.IsInf(*v, 0)) {
		add(f("delete_file_ratio"), *v, "must be a finite number > 0")
	}
	if v := p.DeletedRowRatio; v != nil && !(*v > 0 && *v <= 1) {
		add(f("deleted_row_ratio"), *v, "must be > 0 and <= 1")
	}
	for name, v := range map[string]*int{"delete_file_threshold": p.DeleteFileThreshold, "delete_min_input_files": p.DeleteMinInputFiles} {
		if v != nil && *v < 1 {
			add(f(name), *v, "must be >= 1")
		}
	}
	if v := p.DeleteTargetFileSize; v != nil && *v <= 0 {
		add(f("delete_target_file_size"), *v, "must be > 0")
	}
	if v := p.SortQuietPeriod; v != nil && *v < 0 {
		add(f("sort_quiet_period"), *v, "must not be negative")
	}
	if v := p.Strategy; v != nil && *v != StrategyBinpack && !v.Sorts() {
		add(f("strategy"), string(*v), "must be binpack, sort or zorder")
	}
	if v := p.SortOrder; v != nil && *v != "" {
		if _, err := sortorder.Parse(*v); err != nil {
			add(f("sort_order"), *v, "%v", err)
		}
	}
	if p.Strategy != nil || p.SortOrder != nil {
		strategy, _ := inherit(p, parents, func(q *Policy) *Strategy { return q.Strategy })
		order, _ := inherit(p, parents, func(q *Policy) *string { return q.SortOrder })
		if o, err := sortorder.Parse(order); err == nil || order == "" {
			switch {
			case strategy == StrategyZOrder && !o.ZOrder:
				add(f("sort_order"), order, "strategy zorder needs a sort_order zorder(c1, c2[, c3, c4])")
			case strategy == StrategySort && o.ZOrder:
				add(f("strategy"), string(strategy), "sort_order %q is a z-order: use strategy zorder", order)
			}
		}
	}

	// small_file_count >= min_input_files, once both are individually valid.
	// Reported where the inversion is introduced: on the field this level
	// sets (small_file_count if it sets both).
	if (p.MinInputFiles == nil && p.SmallFileCount == nil) ||
		(p.MinInputFiles != nil && *p.MinInputFiles < 1) ||
		(p.SmallFileCount != nil && *p.SmallFileCount < 1) {
		return
	}
	minFiles, minFrom := inherit(p, parents, func(q *Policy) *int { return q.MinInputFiles })
	count, countFrom := inherit(p, parents, func(q *Policy) *int { return q.SmallFileCount })
	if count >= minFiles {
		return
	}
	if p.SmallFileCount != nil {
		add(f("small_file_count"), count, "must be >= min_input_files (%d%s) or a triggered job would plan nothing", minFiles, from(minFrom))
	} else {
		add(f("min_input_files"), minFiles, "must be <= small_file_count (%d%s) or a triggered job would plan nothing", count, from(countFrom))
	}
}

func from(name string) string {
	if name == "" {
		return ""
	}
	return ", from " + name
}

// inherit returns the value of a field on p, else on the first parent that
// sets it, with the name of that parent ("" for p itself).
func inherit[T any](p *Policy, parents []layer, get func(*Policy) *T) (T, string) {
	if v := get(p); v != nil {
		return *v, ""
	}
	for _, l := range parents {
		if v := get(l.policy); v != nil {
			return *v, l.name
		}
	}
	var zero T
	return zero, ""
}

// For resolves the effective settings for table ("namespace.table").
//
// Each field is resolved on its own, taking the first set value among:
//
//  1. the overrides whose match matches table, most specific first: exact
//     names before globs; among globs, more literal (non-wildcard)
//     characters first; ties go to the override later in the file;
//  2. defaults;
//  3. for the target file size only, the table property
//     write.target-file-size-bytes (props may be nil; a value that is not a
//     positive integer is ignored, which TargetFileSizeSource notes);
//  4. the built-in default (the Default* constants).
//
// So explicit configuration beats the table property, which beats the
// built-in 512MiB. SmallFileSize and MaxFileSize are derived from the
// resolved target and ratios (capped at math.MaxInt64). If a combination of
// overrides yields SmallFileCount < MinInputFiles (Validate catches this
// within one override, not across overlapping ones), SmallFileCount is
// raised to MinInputFiles. For assumes c is valid; a nil c is [Default].
func (c *Config) For(table string, props map[string]string) Effective {
	if c == nil {
		c = Default()
	}
	layers := c.matching(table)
	builtin := Builtin()
	layers = append(layers, &c.Defaults)

	e := Effective{Table: table}
	if v := first(layers, func(p *Policy) *Size { return p.TargetFileSize }); v != nil {
		e.TargetFileSize, e.TargetFileSizeSource = int64(*v), SourceConfig
	} else if raw, ok := props[TargetFileSizeProperty]; ok {
		if n, err := strconv.ParseInt(strings.TrimSpace(raw), 10, 64); err == nil && n > 0 {
			e.TargetFileSize, e.TargetFileSizeSource = n, SourceTableProperty
		} else {
			e.TargetFileSize = int64(DefaultTargetFileSize)
			e.TargetFileSizeSource = fmt.Sprintf("%s (ignored malformed table property %s=%q)", SourceDefault, TargetFileSizeProperty, raw)
		}
	} else {
		e.TargetFileSize, e.TargetFileSizeSource = int64(DefaultTargetFileSize), SourceDefault
	}

	layers = append(layers, &builtin)
	smallRatio := *first(layers, func(p *Policy) *float64 { return p.SmallFileRatio })
	maxRatio := *first(layers, func(p *Policy) *float64 { return p.MaxFileRatio })
	e.SmallFileSize = scale(e.TargetFileSize, smallRatio)
	e.MaxFileSize = scale(e.TargetFileSize, maxRatio)
	e.MinInputFiles = *first(layers, func(p *Policy) *int { return p.MinInputFiles })
	e.SmallFileCount = max(*first(layers, func(p *Policy) *int { return p.SmallFileCount }), e.MinInputFiles)
	e.TierFanIn = *first(layers, func(p *Policy) *int { return p.TierFanIn })
	e.QuietPeriod = time.Duration(*first(layers, func(p *Policy) *Duration { return p.QuietPeriod }))
	e.MaxQuietWait = time.Duration(*first(layers, func(p *Policy) *Duration { return p.MaxQuietWait }))
	// The floor is the highest among the matching levels; the margin is
	// never below it, whichever levels set the two (Validate rejects the
	// combinations it can see; this covers overlapping globs).
	e.OrphanMargin, _, e.OrphanMarginFloor, _ = c.orphanMargins(table)
	if e.OrphanMargin < e.OrphanMarginFloor {
		e.OrphanMargin = e.OrphanMarginFloor
	}
	e.OrphanDelete = *first(layers, func(p *Policy) *bool { return p.OrphanDelete })
	e.OrphanListingInterval = time.Duration(*first(layers, func(p *Policy) *Duration { return p.OrphanListingInterval }))
	e.ManifestCount = *first(layers, func(p *Policy) *int { return p.ManifestCount })
	e.TinyFileSize = int64(*first(layers, func(p *Policy) *Size { return p.TinyFileSize }))
	e.HealthMaxTinyFiles = *first(layers, func(p *Policy) *int { return p.HealthMaxTinyFiles })
	e.HealthMaxSnapshots = *first(layers, func(p *Policy) *int { return p.HealthMaxSnapshots })
	e.HealthMaxSnapshotAge = time.Duration(*first(layers, func(p *Policy) *Duration { return p.HealthMaxSnapshotAge }))
	e.MinReaderMargin = time.Duration(*first(layers, func(p *Policy) *Duration { return p.MinReaderMargin }))
	e.SnapshotCount = *first(layers, func(p *Policy) *int { return p.SnapshotCount })
	e.ExpireDeletionDelay = time.Duration(*first(layers, func(p *Policy) *Duration { return p.ExpireDeletionDelay }))
	// Retention: the table's own properties first, as Spark does.
	e.SnapshotMaxAge = time.Duration(*first(layers, func(p *Policy) *Duration { return p.SnapshotMaxAge }))
	e.SnapshotMaxAgeSource = SourceConfig
	if ms, ok := positiveIntProperty(props, MaxSnapshotAgeProperty); ok {
		e.SnapshotMaxAge, e.SnapshotMaxAgeSource = time.Duration(ms)*time.Millisecond, "table property "+MaxSnapshotAgeProperty
	}
	e.RetainLast = *first(layers, func(p *Policy) *int { return p.RetainLast })
	e.RetainLastSource = SourceConfig
	if n, ok := positiveIntProperty(props, MinSnapshotsToKeepProperty); ok {
		e.RetainLast, e.RetainLastSource = int(n), "table property "+MinSnapshotsToKeepProperty
	}
	e.Cooldown = time.Duration(*first(layers, func(p *Policy) *Duration { return p.Cooldown }))
	e.ConflictCooldown = time.Duration(*first(layers, func(p *Policy) *Duration { return p.ConflictCooldown }))
	e.CommitRetryTime = time.Duration(*first(layers, func(p *Policy) *Duration { return p.CommitRetryTime }))
	e.MaxGroupSize = int64(*first(layers, func(p *Policy) *Size { return p.MaxGroupSize }))
	e.PartialProgressCommits = *first(layers, func(p *Policy) *int { return p.PartialProgressCommits })
	e.DeleteFileRatio = *first(layers, func(p *Policy) *float64 { return p.DeleteFileRatio })
	e.DeletedRowRatio = *first(layers, func(p *Policy) *float64 { return p.DeletedRowRatio })
	e.DeleteFileThreshold = *first(layers, func(p *Policy) *int { return p.DeleteFileThreshold })
	e.DeleteMinInputFiles = *first(layers, func(p *Policy) *int { return p.DeleteMinInputFiles })
	e.Strategy = *first(layers, func(p *Policy) *Strategy { return p.Strategy })
	e.SortOrder = *first(layers, func(p *Policy) *string { return p.SortOrder })
	e.SortQuietPeriod = time.Duration(*first(layers, func(p *Policy) *Duration { return p.SortQuietPeriod }))
	// Like the data target: configuration, then the table property, then
	// the built-in default.
	e.DeleteTargetFileSize, e.DeleteTargetFileSizeSource = int64(DefaultDeleteTargetFileSize), SourceDefault
	if v := first(layers[:len(layers)-1], func(p *Policy) *Size { return p.DeleteTargetFileSize }); v != nil {
		e.DeleteTargetFileSize, e.DeleteTargetFileSizeSource = int64(*v), SourceConfig
	} else if n, ok := positiveIntProperty(props, DeleteTargetFileSizeProperty); ok {
		e.DeleteTargetFileSize, e.DeleteTargetFileSizeSource = n, "table property "+DeleteTargetFileSizeProperty
	}
	return e
}

// first returns the first non-nil field value among layers, or nil.
func first[T any](layers []*Policy, get func(*Policy) *T) *T {
	for _, p := range layers {
		if v := get(p); v != nil {
			return v
		}
	}
	return nil
}

// scale returns int64(float64(n)*ratio), capped at math.MaxInt64.
func scale(n int64, ratio float64) int64 {
	f := float64(n) * ratio
	if f >= math.MaxInt64 { // math.MaxInt64 rounds up to 2^63 as a float64
		return math.MaxInt64
	}
	return int64(f)
}

// matching returns the policies of the overrides matching table, most
// specific first (see For).
func (c *Config) matching(table string) []*Policy {
	type hit struct {
		index    int
		exact    bool
		literals int
	}
	var hits []hit
	for i, o := range c.Tables {
		if o.Match == "" {
			continue
		}
		if ok, err := path.Match(o.Match, table); err != nil || !ok {
			continue
		}
		literals, glob := specificity(o.Match)
		hits = append(hits, hit{index: i, exact: !glob, literals: literals})
	}
	slices.SortFunc(hits, func(a, b hit) int {
		if a.exact != b.exact {
			if a.exact {
				return -1
			}
			return 1
		}
		if n := cmp.Compare(b.literals, a.literals); n != 0 {
			return n
		}
		return cmp.Compare(b.index, a.index)
	})
	layers := make([]*Policy, 0, len(hits)+2)
	for _, h := range hits {
		layers = append(layers, &c.Tables[h.index].Policy)
	}
	return layers
}

// matchingIndexes is matching as indexes into c.Tables.
func (c *Config) matchingIndexes(table string) []int {
	var out []int
	for _, p := range c.matching(table) {
		for i := range c.Tables {
			if &c.Tables[i].Policy == p {
				out = append(out, i)
			}
		}
	}
	return out
}

// specificity counts the literal characters of a path.Match pattern
// (characters outside '*', '?' and [...] classes; an escaped character
// counts as one) and reports whether it has any wildcard.
func specificity(pattern string) (literals int, glob bool) {
	for i := 0; i < len(pattern); i++ {
		switch c := pattern[i]; c {
		case '*', '?':
			glob = true
		case '[':
			glob = true
			// Skip the class. path.Match requires a ']' inside a class
			// to be escaped, so it ends at the first unescaped ']'.
			for i++; i < len(pattern) && pattern[i] != ']'; i++ {
				if pattern[i] == '\\' {
					i++
				}
			}
		case '\\':
			if i+1 < len(pattern) {
				i++
				literals++
			}
		default:
			if c&0xC0 != 0x80 { // count runes, not UTF-8 continuation bytes
				literals++
			}
		}
	}
	return literals, glob
}

// validPattern reports whether pattern is a well-formed path.Match pattern.
func validPattern(pattern string) bool {
	_, err := path.Match(pattern, "")
	return !errors.Is(err, path.ErrBadPattern)
}

func positiveIntProperty(props map[string]string, key string) (int64, bool) {
	raw, ok := props[key]
	if !ok {
		return 0, false
	}
	n, err := strconv.ParseInt(strings.TrimSpace(raw), 10, 64)
	return n, err == nil && n > 0
}
