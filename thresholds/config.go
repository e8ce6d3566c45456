package thresholds

import (
	"errors"
	iofs "io/fs"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/goccy/go-yaml"
	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/parser"
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
	DefaultRefreshInterval        = 5 * time.Minute
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
	// DefaultEqualityDeleteFileCount 0: equality deletes are converted
	// only where a thresholds file asks for it.
	DefaultEqualityDeleteFileCount = 0
	DefaultDeleteTargetFileSize    = 64 * MiB
)

// TinyFileDivisor relates the tiny-file size to the target when no
// tiny_file_size is set: 512MiB / 16MiB, the seeds' health check.
const TinyFileDivisor = int64(DefaultTargetFileSize / DefaultTinyFileSize)

// TinyFromTarget is where the tiny-file size comes from when the file sets
// none: the target divided by TinyFileDivisor.
const TinyFromTarget = "1/32 of the target file size"

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
	// RefreshInterval: every owned table is checked against the catalog
	// at least this often, whatever events say (a writer that publishes
	// none, a lost event): the polling safety net. A table whose metadata
	// file has not changed costs one cheap catalog call where the catalog
	// has one (SQL), else a load. Default 5m; 0 turns it off.
	RefreshInterval *Duration `yaml:"refresh_interval"`
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
	// retention (docs/design.md#seed-reader-incident: a 6-hour horizon
	// deleted files under a 15-minute reader). It protects files, not snapshots: retention bounds
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
	// Health check (the seeds' health-check step): a table is unhealthy with more
	// than HealthMaxTinyFiles files below TinyFileSize (default 200 below
	// 1/32 of the target file size: the seeds' 16MiB at Spark's 512MiB),
	// more than HealthMaxSnapshots snapshots (150: above snapshot_count,
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
	// 10m a 5 commits/s table gathered hundreds per partition in the soak
	// benchmark, docs/design.md#streaming-targets);
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
	// EqualityDeleteFileCount: a partition with this many equality delete
	// files has them converted into position deletes (reading only the
	// equality columns, rewriting no data file) unless small files or
	// deleted_row_ratio call for a compaction, which applies them. Default
	// 0: never converted; must be >= 0.
	EqualityDeleteFileCount *int `yaml:"equality_delete_file_count"`
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
	// CompactWhenQuietAfter: a partition not written for this long whose
	// small files a merge at the target size would reduce (more live data
	// files than ceil(bytes / target_file_size)) gets one compaction of
	// every small file, once per quiet spell: the tier rule leaves up to
	// small_file_count - 1 small files per partition by design, and a
	// table a writer stopped writing would otherwise keep them for good.
	// Default 1m; 0 or "off" disables; at most 30d.
	CompactWhenQuietAfter *DurationOrOff `yaml:"compact_when_quiet_after"`
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

// Builtin returns the built-in defaults as a fully populated Policy (a fresh
// copy on every call). It is what the Default* constants describe.
func Builtin() Policy {
	return Policy{
		TargetFileSize:          ptr(DefaultTargetFileSize),
		SmallFileRatio:          ptr(DefaultSmallFileRatio),
		MaxFileRatio:            ptr(DefaultMaxFileRatio),
		MinInputFiles:           ptr(DefaultMinInputFiles),
		SmallFileCount:          ptr(DefaultSmallFileCount),
		TierFanIn:               ptr(DefaultTierFanIn),
		QuietPeriod:             ptr(Duration(DefaultQuietPeriod)),
		MaxQuietWait:            ptr(Duration(DefaultMaxQuietWait)),
		OrphanMargin:            ptr(Duration(DefaultOrphanMargin)),
		OrphanMarginFloor:       ptr(Duration(DefaultOrphanMarginFloor)),
		OrphanDelete:            ptr(false),
		OrphanListingInterval:   ptr(Duration(DefaultOrphanListingInterval)),
		RefreshInterval:         ptr(Duration(DefaultRefreshInterval)),
		ManifestCount:           ptr(DefaultManifestCount),
		TinyFileSize:            ptr(Size(DefaultTinyFileSize)),
		HealthMaxTinyFiles:      ptr(DefaultHealthMaxTinyFiles),
		HealthMaxSnapshots:      ptr(DefaultHealthMaxSnapshots),
		HealthMaxSnapshotAge:    ptr(Duration(DefaultHealthMaxSnapshotAge)),
		SnapshotMaxAge:          ptr(Duration(DefaultSnapshotMaxAge)),
		RetainLast:              ptr(DefaultRetainLast),
		MinReaderMargin:         ptr(Duration(DefaultMinReaderMargin)),
		ExpireDeletionDelay:     ptr(Duration(0)),
		SnapshotCount:           ptr(DefaultSnapshotCount),
		Cooldown:                ptr(Duration(DefaultCooldown)),
		ConflictCooldown:        ptr(Duration(DefaultConflictCooldown)),
		CommitRetryTime:         ptr(Duration(DefaultCommitRetryTime)),
		MaxGroupSize:            ptr(DefaultMaxGroupSize),
		PartialProgressCommits:  ptr(DefaultPartialProgressCommits),
		DeleteFileRatio:         ptr(DefaultDeleteFileRatio),
		DeletedRowRatio:         ptr(DefaultDeletedRowRatio),
		DeleteFileThreshold:     ptr(DefaultDeleteFileThreshold),
		DeleteMinInputFiles:     ptr(DefaultDeleteMinInputFiles),
		EqualityDeleteFileCount: ptr(DefaultEqualityDeleteFileCount),
		DeleteTargetFileSize:    ptr(Size(DefaultDeleteTargetFileSize)),
		Strategy:                ptr(StrategyBinpack),
		SortOrder:               ptr(""),
		SortQuietPeriod:         ptr(Duration(DefaultSortQuietPeriod)),
		CompactWhenQuietAfter:   ptr(DurationOrOff(DefaultCompactWhenQuietAfter)),
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
	// Absent, null and [] must all decode alike (and equal Default()).
	nilEmptySlices(reflect.ValueOf(cfg))
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return cfg, nil
}

// Load reads the file at path ([ReadFile]: at most [MaxFileSize] bytes)
// and [Parse]s it. Errors name the path once: "thresholds file
// /etc/t.yaml: invalid YAML at line 2, ...".
func Load(path string) (*Config, error) {
	data, err := ReadFile(path)
	if err == nil {
		var cfg *Config
		if cfg, err = Parse(data); err == nil {
			return cfg, nil
		}
	}
	return nil, &fileError{path: path, err: err}
}

// fileError is an error of Load: it names the file once, where the
// messages it wraps would repeat the package's prefix or the path.
type fileError struct {
	path string
	err  error
}

func (e *fileError) Error() string {
	msg := e.err.Error()
	var pe *iofs.PathError
	if errors.As(e.err, &pe) && pe.Path == e.path {
		msg = pe.Err.Error()
	}
	return "thresholds file " + e.path + ": " + strings.TrimPrefix(msg, "thresholds: ")
}

func (e *fileError) Unwrap() error { return e.err }

// Watches reports whether tables in namespace (dot-joined, e.g.
// "prod.events") are watched: true when the namespace list is empty or
// contains namespace exactly.
func (c *Config) Watches(namespace string) bool {
	if c == nil || len(c.Namespaces) == 0 {
		return true
	}
	return slices.Contains(c.Namespaces, namespace)
}
