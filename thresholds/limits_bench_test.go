package thresholds

import (
	"fmt"
	"strings"
	"testing"
)

// BenchmarkParseHostile measures what the largest documents the limits
// accept cost (B/op is the total allocated while parsing), next to the
// shapes they refuse before parsing. See BENCHMARKS.md.
func BenchmarkParseHostile(b *testing.B) {
	var tables strings.Builder
	tables.WriteString("tables:\n")
	for i := range (MaxNodes - 10) / 6 {
		fmt.Fprintf(&tables, "- match: db.t%d\n  cooldown: 5m\n", i)
	}
	names := make([]string, MaxNodes-10)
	for i := range names {
		names[i] = fmt.Sprintf("n%d", i)
	}
	unit := strings.Repeat("[", MaxDepth-2) + "x" + strings.Repeat("]", MaxDepth-2)
	units := make([]string, (MaxNodes-10)/(MaxDepth-1))
	for i := range units {
		units[i] = unit
	}
	for _, bc := range []struct {
		name, doc string
		accepted  bool
	}{
		{"example", string(must(b, "example.yaml")), true},
		{"100k-values-in-one-list", "namespaces: [" + strings.Join(names, ",") + "]\n", true},
		{"16k-overrides", tables.String(), true},
		{"3k-lists-31-deep", "namespaces: [" + strings.Join(units, ",") + "]\n", false}, // parsed, then refused: not strings
		{"30k-deep-refused", "namespaces: " + strings.Repeat("[", 30_000) + strings.Repeat("]", 30_000), false},
		{"over-1MiB-refused", strings.Repeat("# padding\n", MaxFileSize/10+1), false},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.SetBytes(int64(len(bc.doc)))
			b.ReportAllocs()
			for b.Loop() {
				_, err := Parse([]byte(bc.doc))
				if (err == nil) != bc.accepted {
					b.Fatalf("accepted = %v: %.200v", err == nil, err)
				}
			}
		})
	}
}

func must(b *testing.B, name string) []byte {
	b.Helper()
	data, err := ReadFile(name)
	if err != nil {
		b.Fatal(err)
	}
	return data
}
