package thresholds

import (
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/icereactor/reactor/sortorder"
)

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
		{"refresh_interval", p.RefreshInterval, false},
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
	if v := p.EqualityDeleteFileCount; v != nil && *v < 0 {
		add(f("equality_delete_file_count"), *v, "must be >= 0 (0: never convert)")
	}
	if v := p.DeleteTargetFileSize; v != nil && *v <= 0 {
		add(f("delete_target_file_size"), *v, "must be > 0")
	}
	if v := p.SortQuietPeriod; v != nil && *v < 0 {
		add(f("sort_quiet_period"), *v, "must not be negative")
	}
	if v := p.CompactWhenQuietAfter; v != nil && (*v < 0 || v.D() > MaxCompactWhenQuietAfter) {
		add(f("compact_when_quiet_after"), *v, "must be between 0 (or off: disabled) and %s: a partition quiet that long is cold, and a longer value is likelier a unit slip", Duration(MaxCompactWhenQuietAfter))
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
