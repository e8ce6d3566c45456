package main

import (
	"context"
	"fmt"
	"io"
	"path"
	"strings"
	"text/tabwriter"

	"github.com/icereactor/reactor/redact"
	"github.com/icereactor/reactor/thresholds"
)

const validateConfigDescription = `Checks a thresholds file offline (no catalog, no NATS): every error names
the field path and the value. With --table, prints the settings that apply
to that table and where each comes from (override, defaults, table property
or built-in), given the table properties passed with --table-property.`

// validateConfigCmd is `reactor validate-config FILE`.
func validateConfigCmd(_ context.Context, args []string, stdout, _ io.Writer) error {
	fs := newFlagSet("validate-config", "validate-config [flags] FILE", validateConfigDescription)
	tableName := fs.String("table", "", "print the effective settings for this `namespace.table`")
	var props propsFlag
	fs.Var(&props, "table-property", "a property of that table `key=value` (write.target-file-size-bytes, history.expire.*), repeatable")
	asJSON := fs.Bool("json", false, "print the effective settings as JSON")
	positional, err := parseFlagsAndArgs(fs, args, stdout)
	if err != nil {
		return err
	}
	file, err := oneArg(positional, "FILE")
	if err != nil {
		return err
	}
	cfg, err := thresholds.Load(file)
	if err != nil {
		return &inputError{err: err}
	}
	if *tableName == "" {
		if len(props.keys) > 0 {
			return usageErrorf("--table-property needs --table")
		}
		fmt.Fprintf(stdout, "%s: valid\n", file)
		printSpark(stdout, cfg.SparkSettings(), "")
		return nil
	}
	if !cfg.Watches(namespaceOf(*tableName)) {
		fmt.Fprintf(stdout, "note: namespace of %s is not in the file's namespaces list: reactor ignores its events\n", *tableName)
	}
	set := cfg.For(*tableName, props.values)
	if *asJSON {
		return writeJSON(stdout, set)
	}
	fmt.Fprintf(stdout, "%s: valid; settings for %s:\n", file, *tableName)
	printEffective(stdout, set)
	printSpark(stdout, cfg.SparkSettings(), *tableName)
	return nil
}

// printSpark prints the spark section: off, or where it sends jobs, and
// for a table which kinds its rules can select. The token is never
// printed, only where it comes from.
func printSpark(w io.Writer, s thresholds.SparkSettings, table string) {
	if !s.Enabled {
		fmt.Fprintln(w, "spark: off (no spark rules: every job runs in reactor)")
		return
	}
	token := "none"
	switch {
	case s.TokenFile != "":
		token = "from file " + s.TokenFile
	case s.TokenEnv != "":
		token = "from environment variable " + s.TokenEnv
	}
	catalog := s.Catalog
	if catalog == "" {
		catalog = "(reactor's --catalog-name)"
	}
	fmt.Fprintf(w, "spark: on; endpoint %s, token %s, catalog %s, concurrency %d, timeout %s, interrupt_grace %s, on_failure %s",
		redact.String(s.Endpoint), token, catalog, s.Concurrency, s.Timeout, s.InterruptGrace, s.OnFailure)
	if s.OnFailure == thresholds.SparkOnFailureLocal {
		fmt.Fprintf(w, " (jobs up to %s and %d files; 0: no bound)", thresholds.Size(s.LocalMaxInputBytes), s.LocalMaxInputFiles)
	}
	fmt.Fprintln(w)
	for i, r := range s.Rules {
		kinds := "every kind"
		if len(r.Kinds) > 0 {
			kinds = strings.Join(r.Kinds, ", ")
		}
		match := r.Match
		if match == "" {
			match = "*"
		}
		fmt.Fprintf(w, "  rules[%d]: tables %q, %s", i, match, kinds)
		if r.MinInputBytes != nil {
			fmt.Fprintf(w, ", input >= %s", *r.MinInputBytes)
		}
		if r.MinInputFiles != nil {
			fmt.Fprintf(w, ", input >= %d files", *r.MinInputFiles)
		}
		if table != "" {
			if ok, _ := path.Match(match, table); !ok {
				fmt.Fprintf(w, " (does not match %s)", table)
			}
		}
		fmt.Fprintln(w)
	}
}

func namespaceOf(table string) string {
	for i := len(table) - 1; i >= 0; i-- {
		if table[i] == '.' {
			return table[:i]
		}
	}
	return ""
}

func printEffective(w io.Writer, s thresholds.Effective) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	row := func(k string, v any, note string) {
		if note != "" {
			note = "(" + note + ")"
		}
		fmt.Fprintf(tw, "  %s\t%v\t%s\n", k, v, note)
	}
	row("target_file_size", thresholds.Size(s.TargetFileSize), s.TargetFileSizeSource)
	row("small file size", thresholds.Size(s.SmallFileSize), "target_file_size x small_file_ratio")
	row("max file size", thresholds.Size(s.MaxFileSize), "target_file_size x max_file_ratio")
	row("min_input_files", s.MinInputFiles, "")
	row("small_file_count", s.SmallFileCount, "")
	row("tier_fan_in", s.TierFanIn, "")
	row("quiet_period", s.QuietPeriod, "")
	row("max_quiet_wait", s.MaxQuietWait, "")
	row("cooldown", s.Cooldown, "")
	row("conflict_cooldown", s.ConflictCooldown, "")
	row("commit_retry_time", s.CommitRetryTime, "")
	row("max_group_size", thresholds.Size(s.MaxGroupSize), "")
	row("partial_progress_max_commits", s.PartialProgressCommits, "")
	row("strategy", s.Strategy, "")
	order := s.SortOrder
	if order == "" && s.Strategy == thresholds.StrategySort {
		order = "(the table's default sort order)"
	}
	row("sort_order", order, "")
	row("sort_quiet_period", s.SortQuietPeriod, "")
	row("compact_when_quiet_after", thresholds.DurationOrOff(s.CompactWhenQuietAfter), "0 or off: disabled")
	row("delete_file_ratio", s.DeleteFileRatio, "")
	row("deleted_row_ratio", s.DeletedRowRatio, "")
	row("delete_file_threshold", s.DeleteFileThreshold, "")
	row("delete_min_input_files", s.DeleteMinInputFiles, "")
	row("delete_target_file_size", thresholds.Size(s.DeleteTargetFileSize), s.DeleteTargetFileSizeSource)
	row("equality_delete_file_count", s.EqualityDeleteFileCount, "0: never converted")
	row("manifest_count", s.ManifestCount, "")
	row("snapshot_max_age", s.SnapshotMaxAge, s.SnapshotMaxAgeSource)
	row("retain_last", s.RetainLast, s.RetainLastSource)
	row("snapshot_count", s.SnapshotCount, "")
	row("min_reader_margin", s.MinReaderMargin, "")
	row("expire_deletion_delay", s.ExpireDeletionDelay, "")
	row("orphan_margin", s.OrphanMargin, "")
	row("orphan_margin_floor", s.OrphanMarginFloor, "")
	row("orphan_delete", s.OrphanDelete, "")
	row("orphan_listing_interval", s.OrphanListingInterval, "")
	row("refresh_interval", s.RefreshInterval, "")
	row("tiny_file_size", thresholds.Size(s.TinyFileSize), s.TinyFileSizeSource)
	row("health_max_tiny_files", s.HealthMaxTinyFiles, "")
	row("health_max_snapshots", s.HealthMaxSnapshots, "")
	row("health_max_snapshot_age", s.HealthMaxSnapshotAge, "")
	tw.Flush()
}
