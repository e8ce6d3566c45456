package thresholds

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

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
	RefreshInterval        time.Duration
	ManifestCount          int
	TinyFileSize           int64
	TinyFileSizeSource     string // SourceConfig, or TinyFromTarget
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
	// EqualityDeleteFileCount: 0 never converts equality deletes.
	EqualityDeleteFileCount int
	DeleteTargetFileSize    int64
	// DeleteTargetFileSizeSource: SourceConfig, the table property or
	// SourceDefault.
	DeleteTargetFileSizeSource string
	Strategy                   Strategy
	SortOrder                  string // "" with strategy sort: the table's default order
	SortQuietPeriod            time.Duration
	// CompactWhenQuietAfter is 0 when the quiet merge is off.
	CompactWhenQuietAfter time.Duration
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
	e.RefreshInterval = time.Duration(*first(layers, func(p *Policy) *Duration { return p.RefreshInterval }))
	e.ManifestCount = *first(layers, func(p *Policy) *int { return p.ManifestCount })
	// Set in the file, or 1/32 of the target: the seeds' health check
	// counts files below 16MiB against Spark's 512MiB target, and 16MiB
	// against a 256KiB target would call every file tiny.
	if v := first(layers[:len(layers)-1], func(p *Policy) *Size { return p.TinyFileSize }); v != nil {
		e.TinyFileSize, e.TinyFileSizeSource = int64(*v), SourceConfig
	} else {
		e.TinyFileSize, e.TinyFileSizeSource = max(e.TargetFileSize/TinyFileDivisor, 1), TinyFromTarget
	}
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
	e.EqualityDeleteFileCount = *first(layers, func(p *Policy) *int { return p.EqualityDeleteFileCount })
	e.Strategy = *first(layers, func(p *Policy) *Strategy { return p.Strategy })
	e.SortOrder = *first(layers, func(p *Policy) *string { return p.SortOrder })
	e.SortQuietPeriod = time.Duration(*first(layers, func(p *Policy) *Duration { return p.SortQuietPeriod }))
	e.CompactWhenQuietAfter = time.Duration(*first(layers, func(p *Policy) *DurationOrOff { return p.CompactWhenQuietAfter }))
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

func positiveIntProperty(props map[string]string, key string) (int64, bool) {
	raw, ok := props[key]
	if !ok {
		return 0, false
	}
	n, err := strconv.ParseInt(strings.TrimSpace(raw), 10, 64)
	return n, err == nil && n > 0
}
