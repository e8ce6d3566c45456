package thresholds

import (
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/goccy/go-yaml"
)

func TestParseSize(t *testing.T) {
	tests := []struct {
		in   string
		want Size
	}{
		{"0", 0},
		{"123", 123},
		{"123B", 123},
		{"123 b", 123},
		{"512MiB", 512 << 20},
		{"64 MiB", 64 << 20},
		{"  64MiB  ", 64 << 20},
		{"1GiB", 1 << 30},
		{"1gib", 1 << 30},
		{"2TiB", 2 << 40},
		{"1KiB", 1024},
		{"100KB", 100_000},
		{"100kb", 100_000},
		{"5MB", 5_000_000},
		{"3GB", 3_000_000_000},
		{"1TB", 1_000_000_000_000},
		{"1.5GiB", 3 << 29},
		{"0.5KiB", 512},
		{"1.1KiB", 1126}, // 1126.4 truncated
		{"1.000B", 1},
		{"9223372036854775807", math.MaxInt64},
		{"8388607.999999999TiB", math.MaxInt64 - 1099}, // 2^63 - 1099.51..., truncated
	}
	for _, tt := range tests {
		got, err := ParseSize(tt.in)
		if err != nil {
			t.Errorf("ParseSize(%q) error: %v", tt.in, err)
			continue
		}
		if got != tt.want {
			t.Errorf("ParseSize(%q) = %d, want %d", tt.in, got, tt.want)
		}
	}
}

func TestParseSizeErrors(t *testing.T) {
	tests := []struct {
		in, want string
	}{
		{"", "empty value"},
		{"   ", "empty value"},
		{"-1", "must not be negative"},
		{"-5MiB", "must not be negative"},
		{"512XB", `unknown unit "XB"`},
		{"512 MiBs", `unknown unit "MiBs"`},
		{"5 5MiB", `unknown unit "5MiB"`},
		{"abc", "must start with a number"},
		{"MiB", "must start with a number"},
		{".5GiB", "must start with a number"},
		{"+5", "must start with a number"},
		{"1.GiB", "missing digits after the decimal point"},
		{"1.5", "must be a whole number of bytes"},
		{"1.5B", "must be a whole number of bytes"},
		{"9223372036854775808", "too large"},
		{"8388608TiB", "too large"},
		{"99999999999999999999999999GiB", "too large"},
		{"1e9", `unknown unit "e9"`},
	}
	for _, tt := range tests {
		got, err := ParseSize(tt.in)
		if err == nil {
			t.Errorf("ParseSize(%q) = %d, want error containing %q", tt.in, got, tt.want)
			continue
		}
		if !strings.Contains(err.Error(), tt.want) {
			t.Errorf("ParseSize(%q) error = %q, want it to contain %q", tt.in, err, tt.want)
		}
		if !strings.Contains(err.Error(), `"`+tt.in+`"`) {
			t.Errorf("ParseSize(%q) error = %q, want it to quote the input", tt.in, err)
		}
	}
}

func TestSizeString(t *testing.T) {
	tests := []struct {
		in   Size
		want string
	}{
		{0, "0B"},
		{1, "1B"},
		{123, "123B"},
		{1024, "1KiB"},
		{1536, "1536B"},
		{512 * MiB, "512MiB"},
		{DefaultTargetFileSize, "512MiB"},
		{DefaultMaxGroupSize, "1GiB"},
		{3 * GiB / 2, "1536MiB"},
		{1 << 40, "1TiB"},
		{1000, "1KB"},
		{100 * KB, "100KB"},
		{5 * GB, "5GB"},
		{1000 * KiB, "1000KiB"},
		{-3, "-3B"},
	}
	for _, tt := range tests {
		if got := tt.in.String(); got != tt.want {
			t.Errorf("Size(%d).String() = %q, want %q", int64(tt.in), got, tt.want)
		}
		if tt.in < 0 {
			continue
		}
		back, err := ParseSize(tt.in.String())
		if err != nil || back != tt.in {
			t.Errorf("ParseSize(%q) = %d, %v; want round trip to %d", tt.in.String(), back, err, int64(tt.in))
		}
	}
}

func TestSizeText(t *testing.T) {
	var s Size
	if err := s.UnmarshalText([]byte("64 MiB")); err != nil || s != 64*MiB {
		t.Fatalf("UnmarshalText = %d, %v; want %d", s, err, 64*MiB)
	}
	b, err := s.MarshalText()
	if err != nil || string(b) != "64MiB" {
		t.Fatalf("MarshalText = %q, %v; want 64MiB", b, err)
	}
	if err := s.UnmarshalText([]byte("lots")); err == nil {
		t.Fatal("UnmarshalText(lots) succeeded")
	}
	if s != 64*MiB {
		t.Fatalf("failed UnmarshalText changed value to %d", s)
	}
}

func TestSizeYAML(t *testing.T) {
	type doc struct {
		S *Size `yaml:"s"`
	}
	tests := []struct {
		in   string
		want Size
	}{
		{"s: 123", 123},
		{"s: 0", 0},
		{"s: 512MiB", 512 * MiB},
		{"s: 64 MiB", 64 * MiB},
		{`s: "1.5GiB"`, 3 * GiB / 2},
		{"s: '100KB'", 100 * KB},
		{"s: 0x400", 1024},
		{"s: 1.0e+3", 1000},
		{"s: 1_000", 1000},
		{"s: !!str 2GiB", 2 * GiB},
		{"s: 9223372036854775807", math.MaxInt64},
	}
	for _, tt := range tests {
		var d doc
		if err := yaml.Unmarshal([]byte(tt.in), &d); err != nil {
			t.Errorf("%q: %v", tt.in, err)
			continue
		}
		if d.S == nil || *d.S != tt.want {
			t.Errorf("%q: got %v, want %d", tt.in, d.S, tt.want)
		}
	}

	var d doc
	if err := yaml.Unmarshal([]byte("s: ~"), &d); err != nil || d.S != nil {
		t.Errorf("null: got %v, %v; want nil pointer, no error", d.S, err)
	}

	errTests := []struct {
		in, want string
	}{
		{"s: -1", `s: invalid size: must not be negative, got "-1"`},
		{"s: -1MiB", `s: invalid size: must not be negative, got "-1MiB"`},
		{"s: 12XB", `s: invalid size: unknown unit "XB"`},
		{"s: 1.5", `s: invalid size: must be a whole number of bytes`},
		{"s: 9223372036854775808", `s: invalid size: too large`},
		{"s: 1.0e+30", `s: invalid size: too large`},
		{"s: .inf", `s: invalid size: too large`},
		{"s: -.inf", `s: invalid size: must not be negative`},
		{"s: 1e3", `s: invalid size: unknown unit "e3"`}, // a string in go-yaml; no exponents in sizes
		{"s: .nan", `s: invalid size: not a number`},
		{"s: true", `s: must be a size such as 512MiB or a number of bytes, got "true"`},
		{"s: [1]", `s: must be a size such as 512MiB or a number of bytes, got a list`},
		{"s: {a: 1}", `s: must be a size such as 512MiB or a number of bytes, got a mapping`},
	}
	for _, tt := range errTests {
		var d doc
		err := yaml.Unmarshal([]byte(tt.in), &d)
		if err == nil {
			t.Errorf("%q: got %v, want error", tt.in, d.S)
			continue
		}
		if !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%q: error %q, want it to contain %q", tt.in, err, tt.want)
		}
		var fe *FieldError
		if !errors.As(err, &fe) || fe.Path != "s" {
			t.Errorf("%q: error %v is not a *FieldError with path s", tt.in, err)
		}
	}
}

func TestParseDuration(t *testing.T) {
	tests := []struct {
		in   string
		want time.Duration
	}{
		{"0", 0},
		{"0s", 0},
		{"500ms", 500 * time.Millisecond},
		{"2s", 2 * time.Second},
		{"72h", 72 * time.Hour},
		{"1h30m", 90 * time.Minute},
		{" 5m ", 5 * time.Minute},
		{"+5s", 5 * time.Second},
		{"5d", 5 * Day},
		{"0d", 0},
		{"1.5d", 36 * time.Hour},
		{"0.5d", 12 * time.Hour},
		{"106751d", 106751 * Day},
	}
	for _, tt := range tests {
		got, err := ParseDuration(tt.in)
		if err != nil {
			t.Errorf("ParseDuration(%q) error: %v", tt.in, err)
			continue
		}
		if got.D() != tt.want {
			t.Errorf("ParseDuration(%q) = %v, want %v", tt.in, got, tt.want)
		}
	}
}

func TestParseDurationErrors(t *testing.T) {
	tests := []struct {
		in, want string
	}{
		{"", "empty value"},
		{"-1s", "must not be negative"},
		{"-2d", "must not be negative"},
		{"+-1s", "malformed"},
		{"30", "missing unit"},
		{"5x", `unknown unit "x"`},
		{"abc", "malformed"},
		{"1d12h", "days cannot be combined"},
		{"d", "days must be a plain number"},
		{"1.d", "days must be a plain number"},
		{"xd", "days must be a plain number"},
		{"106752d", "too large"},
		{"9999999999h", "invalid duration"},
	}
	for _, tt := range tests {
		got, err := ParseDuration(tt.in)
		if err == nil {
			t.Errorf("ParseDuration(%q) = %v, want error containing %q", tt.in, got, tt.want)
			continue
		}
		if !strings.Contains(err.Error(), tt.want) {
			t.Errorf("ParseDuration(%q) error = %q, want it to contain %q", tt.in, err, tt.want)
		}
	}
}

func TestDurationYAML(t *testing.T) {
	type doc struct {
		D *Duration `yaml:"d"`
	}
	tests := []struct {
		in   string
		want time.Duration
	}{
		{"d: 72h", 72 * time.Hour},
		{"d: 500ms", 500 * time.Millisecond},
		{"d: '2s'", 2 * time.Second},
		{"d: 5d", 5 * Day},
		{"d: 1.5d", 36 * time.Hour},
		{"d: 0", 0},
	}
	for _, tt := range tests {
		var d doc
		if err := yaml.Unmarshal([]byte(tt.in), &d); err != nil {
			t.Errorf("%q: %v", tt.in, err)
			continue
		}
		if d.D == nil || d.D.D() != tt.want {
			t.Errorf("%q: got %v, want %v", tt.in, d.D, tt.want)
		}
	}

	errTests := []struct {
		in, want string
	}{
		{"d: -5s", `d: invalid duration: must not be negative, got "-5s"`},
		{"d: 30", `d: invalid duration: missing unit`},
		{"d: 1.5", `d: invalid duration: missing unit`},
		{"d: soon", `d: invalid duration: malformed`},
		{"d: [1s]", `d: must be a duration such as 30s, 5m or 5d, got a list`},
	}
	for _, tt := range errTests {
		var d doc
		err := yaml.Unmarshal([]byte(tt.in), &d)
		if err == nil {
			t.Errorf("%q: got %v, want error", tt.in, d.D)
			continue
		}
		if !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%q: error %q, want it to contain %q", tt.in, err, tt.want)
		}
		var fe *FieldError
		if !errors.As(err, &fe) || fe.Path != "d" {
			t.Errorf("%q: error %v is not a *FieldError with path d", tt.in, err)
		}
	}

	var d Duration
	if err := d.UnmarshalText([]byte("5d")); err != nil || d.D() != 5*Day {
		t.Errorf("UnmarshalText(5d) = %v, %v", d, err)
	}
	if b, _ := Duration(90 * time.Second).MarshalText(); string(b) != "1m30s" {
		t.Errorf("MarshalText = %q, want 1m30s", b)
	}
}
