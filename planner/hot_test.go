package planner

import "testing"

// A check is near from half its limit on, and always when over.
func TestNear(t *testing.T) {
	tests := []struct {
		name string
		c    Check
		want bool
	}{
		{"empty", Check{Measured: 0, Limit: 8}, false},
		{"below half", Check{Measured: 3, Limit: 8}, false},
		{"half", Check{Measured: 4, Limit: 8}, true},
		{"odd limit rounds up", Check{Measured: 2, Limit: 5}, false},
		{"odd limit, past half", Check{Measured: 3, Limit: 5}, true},
		{"over", Check{Measured: 9, Limit: 8, Over: true}, true},
		{"no limit (never)", Check{Measured: 3, Limit: 0}, false},
		{"over with no limit (a full tier)", Check{Measured: 3, Limit: 0, Over: true}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := near(tt.c); got != tt.want {
				t.Errorf("near(%+v) = %v, want %v", tt.c, got, tt.want)
			}
		})
	}
}
