package thresholds

import (
	"strings"
	"time"

	"github.com/goccy/go-yaml/ast"
)

// DefaultCompactWhenQuietAfter is how long a partition must go unwritten
// before the tier rule's leftovers are merged into target-sized files: about
// a minute, far above the interval at which a streaming writer touches a
// partition, so the merge never runs beside one.
const DefaultCompactWhenQuietAfter = 1 * time.Minute

// MaxCompactWhenQuietAfter bounds compact_when_quiet_after: a partition
// unwritten for a month is cold, and a longer value is more likely a
// unit slip (30000h for 30s) than a policy.
const MaxCompactWhenQuietAfter = 30 * Day

// DurationOrOff is a [Duration] that also reads "off" (any case): 0,
// disabled. It marshals 0 as "off".
type DurationOrOff Duration

// D returns d as a time.Duration (0: off).
func (d DurationOrOff) D() time.Duration { return time.Duration(d) }

// String is "off" for 0, else the duration.
func (d DurationOrOff) String() string {
	if d == 0 {
		return "off"
	}
	return Duration(d).String()
}

// MarshalText implements encoding.TextMarshaler using [DurationOrOff.String].
func (d DurationOrOff) MarshalText() ([]byte, error) { return []byte(d.String()), nil }

// UnmarshalText implements encoding.TextUnmarshaler: "off" or a duration
// ([ParseDuration]).
func (d *DurationOrOff) UnmarshalText(text []byte) error {
	if isOff(string(text)) {
		*d = 0
		return nil
	}
	var v Duration
	if err := v.UnmarshalText(text); err != nil {
		return err
	}
	*d = DurationOrOff(v)
	return nil
}

// UnmarshalYAML decodes "off" (or false) as 0 and anything else as a
// [Duration] does, with the same errors.
func (d *DurationOrOff) UnmarshalYAML(node ast.Node) error {
	switch n := unwrapNode(node).(type) {
	case *ast.StringNode:
		if isOff(n.Value) {
			*d = 0
			return nil
		}
	case *ast.BoolNode:
		if !n.Value {
			*d = 0
			return nil
		}
		return located(&FieldError{Path: nodePath(n), Value: true, Reason: `want a duration such as 1m, or "off"`}, n)
	}
	v := Duration(*d)
	if err := v.UnmarshalYAML(node); err != nil {
		return err
	}
	*d = DurationOrOff(v)
	return nil
}

func isOff(s string) bool { return strings.EqualFold(strings.TrimSpace(s), "off") }
