package thresholds

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func TestCompactWhenQuietAfter(t *testing.T) {
	for _, tt := range []struct {
		yaml    string
		want    time.Duration
		wantErr string
	}{
		{yaml: "", want: DefaultCompactWhenQuietAfter},
		{yaml: "compact_when_quiet_after: 90s", want: 90 * time.Second},
		{yaml: "compact_when_quiet_after: 0", want: 0},
		{yaml: "compact_when_quiet_after: 0s", want: 0},
		{yaml: "compact_when_quiet_after: off", want: 0},
		{yaml: `compact_when_quiet_after: "OFF"`, want: 0},
		{yaml: "compact_when_quiet_after: false", want: 0},
		{yaml: "compact_when_quiet_after: 30d", want: 30 * Day},
		{yaml: "compact_when_quiet_after: 31d", wantErr: "must be between 0 (or off: disabled) and 720h"},
		{yaml: "compact_when_quiet_after: 100000h", wantErr: "must be between 0"},
		{yaml: "compact_when_quiet_after: -1m", wantErr: "must not be negative"},
		{yaml: "compact_when_quiet_after: soon", wantErr: "invalid duration"},
		{yaml: "compact_when_quiet_after: 5", wantErr: "invalid duration"},
		{yaml: "compact_when_quiet_after: true", wantErr: `"off"`},
		{yaml: "compact_when_quiet_after: [1m]", wantErr: "compact_when_quiet_after"},
	} {
		cfg, err := Parse([]byte("defaults:\n  " + tt.yaml + "\n"))
		if tt.wantErr != "" {
			var fe *FieldError
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) || !errors.As(err, &fe) {
				t.Errorf("%q: err = %v, want a field error containing %q", tt.yaml, err, tt.wantErr)
			}
			continue
		}
		if err != nil {
			t.Errorf("%q: %v", tt.yaml, err)
			continue
		}
		if got := cfg.For("db.t", nil).CompactWhenQuietAfter; got != tt.want {
			t.Errorf("%q: effective %v, want %v", tt.yaml, got, tt.want)
		}
	}
	// An override turns it off for its tables only.
	cfg, err := Parse([]byte("tables:\n  - match: db.batch\n    compact_when_quiet_after: off\n"))
	if err != nil {
		t.Fatal(err)
	}
	if got := cfg.For("db.batch", nil).CompactWhenQuietAfter; got != 0 {
		t.Errorf("override off: %v", got)
	}
	if got := cfg.For("db.other", nil).CompactWhenQuietAfter; got != DefaultCompactWhenQuietAfter {
		t.Errorf("other table: %v", got)
	}
	if s := DurationOrOff(0).String(); s != "off" {
		t.Errorf("String(0) = %q", s)
	}
}
