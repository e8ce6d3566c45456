package thresholds

import (
	"errors"
	"fmt"
	"math"
	"math/big"
	"strings"
	"time"

	"github.com/goccy/go-yaml/ast"
)

// Duration is a non-negative time.Duration that YAML-decodes from a Go
// duration string or a number of days; see [ParseDuration].
type Duration time.Duration

// Day is 24 hours, the unit of the "d" suffix accepted by [ParseDuration].
const Day = 24 * time.Hour

const durationHint = "use a Go duration such as 500ms, 30s, 5m or 72h, or days such as 5d or 1.5d"

// ParseDuration parses a non-negative duration. It accepts everything
// time.ParseDuration accepts ("500ms", "2s", "1h30m", "72h", "0") plus a days
// form: a plain decimal number followed by "d" ("5d", "1.5d"; 1d = 24h,
// fractions are truncated to whole nanoseconds). Days cannot be combined with
// other units ("1d12h" is rejected; write "36h"). Negative values are rejected.
func ParseDuration(s string) (Duration, error) {
	d, err := parseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("thresholds: invalid duration %q: %w", s, err)
	}
	return d, nil
}

func parseDuration(s string) (Duration, error) {
	t := strings.TrimSpace(s)
	if t == "" {
		return 0, errors.New("empty value")
	}
	if t[0] == '-' {
		return 0, errors.New("must not be negative")
	}
	if days, ok := strings.CutSuffix(t, "d"); ok {
		num, rest, err := splitDecimal(days)
		if err != nil || rest != "" {
			return 0, errors.New("days must be a plain number such as 5d or 1.5d (days cannot be combined with other units; write 36h, not 1d12h)")
		}
		r, _ := new(big.Rat).SetString(num)
		r.Mul(r, new(big.Rat).SetInt64(int64(Day)))
		ns := new(big.Int).Quo(r.Num(), r.Denom())
		if !ns.IsInt64() {
			return 0, fmt.Errorf("too large (max %s)", time.Duration(math.MaxInt64))
		}
		return Duration(ns.Int64()), nil
	}
	d, err := time.ParseDuration(t)
	if err != nil {
		// Drop time's "time: " prefix and its echo of the input.
		msg := strings.TrimPrefix(err.Error(), "time: ")
		if i := strings.Index(msg, " in duration "); i >= 0 {
			msg = msg[:i]
		}
		switch {
		case strings.HasPrefix(msg, "invalid duration"):
			msg = "malformed"
		case strings.Contains(t, "d"):
			msg = "days cannot be combined with other units (write 36h, not 1d12h)"
		}
		return 0, fmt.Errorf("%s; %s", msg, durationHint)
	}
	if d < 0 {
		return 0, errors.New("must not be negative")
	}
	return Duration(d), nil
}

// D returns d as a time.Duration.
func (d Duration) D() time.Duration { return time.Duration(d) }

// String formats d like time.Duration ("30s", "72h0m0s").
func (d Duration) String() string { return time.Duration(d).String() }

// MarshalText implements encoding.TextMarshaler using [Duration.String].
func (d Duration) MarshalText() ([]byte, error) { return []byte(d.String()), nil }

// UnmarshalText implements encoding.TextUnmarshaler using [ParseDuration].
func (d *Duration) UnmarshalText(text []byte) error {
	v, err := ParseDuration(string(text))
	if err != nil {
		return err
	}
	*d = v
	return nil
}

// UnmarshalYAML decodes a duration from a YAML scalar (see [ParseDuration]).
// Bare numbers other than 0 are rejected for lacking a unit. A null leaves d
// unchanged. Errors wrap a [*FieldError] carrying the node's path, e.g.
// "tables[0].cooldown".
func (d *Duration) UnmarshalYAML(node ast.Node) error {
	node = unwrapNode(node)
	var text string
	switch n := node.(type) {
	case *ast.NullNode:
		return nil
	case *ast.StringNode:
		text = n.Value
	case *ast.IntegerNode, *ast.FloatNode:
		text = scalarText(n)
	default:
		return nodeTypeError(node, "a duration such as 30s, 5m or 5d")
	}
	v, err := parseDuration(text)
	if err != nil {
		return located(&FieldError{Path: nodePath(node), Value: text, Reason: "invalid duration: " + err.Error()}, node)
	}
	*d = v
	return nil
}
