package jobs

import (
	"strings"

	"github.com/icereactor/reactor/location"
)

// HiddenPath reports whether the file at loc, under the table
// location tableLocation, is hidden the way Iceberg Java's
// remove_orphan_files sees it: a path component below the table location
// that starts with "." (Hadoop's .crc checksum sidecars, editor files) or
// with "_" (_SUCCESS markers, _temporary directories of failed Spark
// jobs), except partition directories such as "_c=1". Such files are never
// orphan candidates: Spark's cleanup would not report them either, and a
// .crc file beside a live data file belongs to it.
func HiddenPath(tableLocation, loc string) bool {
	rel := loc
	if base := strings.TrimSuffix(location.Identity(tableLocation), "/") + "/"; strings.HasPrefix(location.Identity(loc), base) {
		rel = strings.TrimPrefix(location.Identity(loc), base)
	}
	return HiddenRelative(rel)
}

// HiddenRelative is HiddenPath for a path relative to the table location.
func HiddenRelative(rel string) bool {
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
