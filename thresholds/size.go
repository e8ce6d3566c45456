package thresholds

import (
	"errors"
	"fmt"
	"math"
	"math/big"
	"strconv"
	"strings"

	"github.com/goccy/go-yaml/ast"
)

// Size is a number of bytes. In YAML it is written either as a non-negative
// integer (bytes) or as a string with a unit; see [ParseSize].
type Size int64

// Size units. Binary units are powers of 1024, decimal units powers of 1000.
const (
	Byte Size = 1

	KiB = 1024 * Byte
	MiB = 1024 * KiB
	GiB = 1024 * MiB
	TiB = 1024 * GiB

	KB = 1000 * Byte
	MB = 1000 * KB
	GB = 1000 * MB
	TB = 1000 * GB
)

// sizeUnitHint lists the accepted units, for error messages.
const sizeUnitHint = "B, KB, MB, GB, TB, KiB, MiB, GiB or TiB"

// ParseSize parses a byte size: a non-negative decimal number, optionally
// followed by a unit, with optional spaces between them: "123", "512MiB",
// "64 MiB", "1.5GiB", "100KB".
//
// Units are B, KiB, MiB, GiB, TiB (powers of 1024) and KB, MB, GB, TB (powers
// of 1000), matched case-insensitively; no unit means bytes. A fraction is
// allowed with a unit larger than a byte and the result is truncated to whole
// bytes ("1.1KiB" is 1126 bytes); a fractional number of bytes ("1.5", "1.5B")
// is rejected. Negative values, unknown units, malformed numbers and values
// above math.MaxInt64 bytes are rejected.
func ParseSize(s string) (Size, error) {
	v, err := parseSize(s)
	if err != nil {
		return 0, fmt.Errorf("thresholds: invalid size %q: %w", s, err)
	}
	return v, nil
}

func parseSize(s string) (Size, error) {
	t := strings.TrimSpace(s)
	if t == "" {
		return 0, errors.New("empty value")
	}
	if t[0] == '-' {
		return 0, errors.New("must not be negative")
	}
	num, rest, err := splitDecimal(t)
	if err != nil {
		return 0, fmt.Errorf("%w, e.g. 512MiB or 1.5GiB", err)
	}
	unit := strings.TrimSpace(rest)
	mult, ok := sizeUnit(unit)
	if !ok {
		return 0, fmt.Errorf("unknown unit %q (use %s)", unit, sizeUnitHint)
	}
	r, ok := new(big.Rat).SetString(num)
	if !ok { // unreachable: splitDecimal only returns digits[.digits]
		return 0, fmt.Errorf("malformed number %q", num)
	}
	r.Mul(r, new(big.Rat).SetInt64(int64(mult)))
	if !r.IsInt() && mult == Byte {
		return 0, errors.New("must be a whole number of bytes")
	}
	bytes := new(big.Int).Quo(r.Num(), r.Denom()) // truncates toward zero
	if !bytes.IsInt64() {
		return 0, fmt.Errorf("too large (max %d bytes)", int64(math.MaxInt64))
	}
	return Size(bytes.Int64()), nil
}

// splitDecimal splits s into a leading unsigned decimal number
// (digits, optionally followed by '.' and more digits) and the rest.
func splitDecimal(s string) (num, rest string, err error) {
	i := 0
	for i < len(s) && isDigit(s[i]) {
		i++
	}
	if i == 0 {
		return "", "", errors.New("must start with a number")
	}
	if i < len(s) && s[i] == '.' {
		i++
		j := i
		for i < len(s) && isDigit(s[i]) {
			i++
		}
		if i == j {
			return "", "", errors.New("missing digits after the decimal point")
		}
	}
	return s[:i], s[i:], nil
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

// sizeUnit returns the multiplier for a unit name ("" means bytes).
func sizeUnit(u string) (Size, bool) {
	switch strings.ToLower(u) {
	case "", "b":
		return Byte, true
	case "kib":
		return KiB, true
	case "mib":
		return MiB, true
	case "gib":
		return GiB, true
	case "tib":
		return TiB, true
	case "kb":
		return KB, true
	case "mb":
		return MB, true
	case "gb":
		return GB, true
	case "tb":
		return TB, true
	}
	return 0, false
}

// String formats s in the largest binary unit that represents it exactly
// ("512MiB", "10GiB"), else the largest exact decimal unit ("100KB"), else in
// bytes ("123B"). The result parses back to s with [ParseSize].
func (s Size) String() string {
	if s <= 0 {
		return strconv.FormatInt(int64(s), 10) + "B"
	}
	units := [...]struct {
		name string
		mult Size
	}{
		{"TiB", TiB}, {"GiB", GiB}, {"MiB", MiB}, {"KiB", KiB},
		{"TB", TB}, {"GB", GB}, {"MB", MB}, {"KB", KB},
	}
	for _, u := range units {
		if s%u.mult == 0 {
			return strconv.FormatInt(int64(s/u.mult), 10) + u.name
		}
	}
	return strconv.FormatInt(int64(s), 10) + "B"
}

// Bytes returns s as a plain int64.
func (s Size) Bytes() int64 { return int64(s) }

// MarshalText implements encoding.TextMarshaler using [Size.String].
func (s Size) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// UnmarshalText implements encoding.TextUnmarshaler using [ParseSize].
func (s *Size) UnmarshalText(text []byte) error {
	v, err := ParseSize(string(text))
	if err != nil {
		return err
	}
	*s = v
	return nil
}

// UnmarshalYAML decodes a size from a YAML integer (bytes) or string (see
// [ParseSize]). A null leaves s unchanged. Errors are [*FieldError] values
// carrying the node's path, e.g. "defaults.target_file_size".
func (s *Size) UnmarshalYAML(node ast.Node) error {
	node = unwrapNode(node)
	var (
		v   Size
		err error
	)
	switch n := node.(type) {
	case *ast.NullNode:
		return nil
	case *ast.StringNode:
		v, err = parseSize(n.Value)
	case *ast.IntegerNode:
		v, err = sizeFromInteger(n.Value)
	case *ast.FloatNode:
		v, err = sizeFromFloat(n.Value)
	case *ast.InfinityNode:
		v, err = sizeFromFloat(n.Value)
	case *ast.NanNode:
		v, err = sizeFromFloat(math.NaN())
	default:
		return nodeTypeError(node, "a size such as 512MiB or a number of bytes")
	}
	if err != nil {
		return located(&FieldError{Path: nodePath(node), Value: scalarText(node), Reason: "invalid size: " + err.Error()}, node)
	}
	*s = v
	return nil
}

func sizeFromInteger(v any) (Size, error) {
	switch n := v.(type) {
	case int64:
		if n < 0 {
			return 0, errors.New("must not be negative")
		}
		return Size(n), nil
	case uint64:
		if n > math.MaxInt64 {
			return 0, fmt.Errorf("too large (max %d bytes)", int64(math.MaxInt64))
		}
		return Size(n), nil
	}
	return 0, fmt.Errorf("unsupported integer %v", v)
}

func sizeFromFloat(f float64) (Size, error) {
	switch {
	case math.IsNaN(f):
		return 0, errors.New("not a number")
	case f < 0: // includes -Inf
		return 0, errors.New("must not be negative")
	case f >= math.MaxInt64: // 2^63 as a float64; anything at or above overflows
		return 0, fmt.Errorf("too large (max %d bytes)", int64(math.MaxInt64))
	case f != math.Trunc(f):
		return 0, errors.New("must be a whole number of bytes (write a unit for fractions, e.g. 1.5GiB)")
	}
	return Size(f), nil
}
