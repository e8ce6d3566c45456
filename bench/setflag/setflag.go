// Package setflag is the benchmarks' repeatable -set key=value flag: the
// threshold defaults a run lays over its thresholds file. It only collects
// and renders them; the thresholds package parses and validates the result.
package setflag

import (
	"fmt"
	"sort"
	"strings"
)

// Flag collects repeated key=value flags (flag.Value).
type Flag []string

func (f *Flag) String() string { return strings.Join(*f, ",") }

// Set takes one key=value; the key must not be empty.
func (f *Flag) Set(v string) error {
	if k, _, ok := strings.Cut(v, "="); !ok || strings.TrimSpace(k) == "" {
		return fmt.Errorf("want key=value, got %q", v)
	}
	*f = append(*f, v)
	return nil
}

// Apply lays the flags over m (a later flag wins over an earlier one).
func (f Flag) Apply(m map[string]string) {
	for _, kv := range f {
		k, v, _ := strings.Cut(kv, "=")
		m[strings.TrimSpace(k)] = strings.TrimSpace(v)
	}
}

// DefaultsYAML renders m as the body of a thresholds file's defaults
// section (two-space indented "key: value" lines, sorted by key).
func DefaultsYAML(m map[string]string) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&b, "  %s: %s\n", k, m[k])
	}
	return b.String()
}
