package commit

import (
	"encoding/binary"
	"testing"

	"github.com/apache/iceberg-go"
)

func summary(lower, upper []byte, null bool) iceberg.FieldSummary {
	return iceberg.FieldSummary{ContainsNull: null, LowerBound: &lower, UpperBound: &upper}
}

func le32(v int32) []byte { return binary.LittleEndian.AppendUint32(nil, uint32(v)) }
func le64(v int64) []byte { return binary.LittleEndian.AppendUint64(nil, uint64(v)) }

// A manifest is skipped only when its partition summary proves the value
// is not in it; every encoding whose order is not plain byte or integer
// order may hold anything.
func TestFieldMayHold(t *testing.T) {
	tests := []struct {
		name string
		s    iceberg.FieldSummary
		v    any
		want bool
	}{
		{"string inside", summary([]byte("a"), []byte("c"), false), "b", true},
		{"string at a bound", summary([]byte("a"), []byte("c"), false), "c", true},
		{"string below", summary([]byte("b"), []byte("c"), false), "a", false},
		{"string above", summary([]byte("a"), []byte("b"), false), "ba", false},
		{"single partition other value", summary([]byte("z"), []byte("z"), false), "a", false},
		{"string outside the BMP compares as anything", summary([]byte("a"), []byte("b"), false), "\U0001F600", true},
		{"bound outside the BMP", summary([]byte("\U0001F600"), []byte("\U0001F601"), false), "a", true},
		{"negative int inside", summary(le32(-5), le32(3), false), int32(-1), true},
		{"int below", summary(le32(-5), le32(3), false), int32(-6), false},
		{"int above", summary(le32(-5), le32(3), false), int32(4), false},
		{"date-like int32 kind", summary(le32(19000), le32(19010), false), iceberg.Date(19005), true},
		{"date outside", summary(le32(19000), le32(19010), false), iceberg.Date(18000), false},
		{"long inside", summary(le64(1<<40), le64(1<<41), false), int64(1<<40 + 7), true},
		{"long outside", summary(le64(1<<40), le64(1<<41), false), int64(5), false},
		{"int against long bounds", summary(le64(1), le64(2), false), int32(9), true},
		{"null where nulls are", summary([]byte("a"), []byte("b"), true), nil, true},
		{"null where none are", summary([]byte("a"), []byte("b"), false), nil, false},
		{"no bounds", iceberg.FieldSummary{ContainsNull: true}, "x", true},
		{"float", summary(le32(0), le32(1), false), float32(9), true},
		{"bytes", summary([]byte{1}, []byte{2}, false), []byte{9}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := fieldMayHold(tt.s, tt.v); got != tt.want {
				t.Errorf("fieldMayHold(%v) = %v, want %v", tt.v, got, tt.want)
			}
		})
	}
}
