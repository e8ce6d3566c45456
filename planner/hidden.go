package planner

import "strings"

// HiddenPath reports whether the file at location, under the table
// location tableLocation, is hidden the way Iceberg Java's
// remove_orphan_files sees it: a path component below the table location
// that starts with "." (Hadoop's .crc checksum sidecars, editor files) or
// with "_" (_SUCCESS markers, _temporary directories of failed Spark
// jobs), except partition directories such as "_c=1". Such files are never
// orphan candidates: Spark's cleanup would not report them either, and a
// .crc file beside a live data file belongs to it.
func HiddenPath(tableLocation, location string) bool {
	rel := location
	if base := strings.TrimSuffix(normalizeLocation(tableLocation), "/") + "/"; strings.HasPrefix(normalizeLocation(location), base) {
		rel = strings.TrimPrefix(normalizeLocation(location), base)
	}
	return hiddenRelative(rel)
}

// hiddenRelative is HiddenPath for a path relative to the table location.
func hiddenRelative(rel string) bool {
	for part := range strings.SplitSeq(rel, "/") {
		switch {
		case strings.HasPrefix(part, "."):
			return true
		case strings.HasPrefix(part, "_") && !strings.Contains(part, "="):
			return true
		}
	}
	return false
}
