package thresholds

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/parser"
)

// yamlDepth is the real nesting depth of collections in a parsed document.
func yamlDepth(t testing.TB, data string) int {
	t.Helper()
	file, err := parser.ParseBytes([]byte(data), 0)
	if err != nil {
		t.Fatalf("parse %q: %v", data, err)
	}
	var depth func(n ast.Node) int
	depth = func(n ast.Node) int {
		switch x := n.(type) {
		case *ast.MappingNode:
			d := 0
			for _, v := range x.Values {
				d = max(d, depth(v.Value))
			}
			return d + 1
		case *ast.MappingValueNode:
			return depth(x.Value) + 1
		case *ast.SequenceNode:
			d := 0
			for _, v := range x.Values {
				d = max(d, depth(v))
			}
			return d + 1
		case *ast.AnchorNode:
			return depth(x.Value)
		case *ast.TagNode:
			return depth(x.Value)
		}
		return 0
	}
	d := 0
	for _, doc := range file.Docs {
		if doc != nil && doc.Body != nil {
			d = max(d, depth(doc.Body))
		}
	}
	return d
}

func TestMeasureDepth(t *testing.T) {
	tests := []struct {
		doc  string
		want int
	}{
		{"", 0},
		{"# only a comment\n", 0},
		{"a: 1\nb: 2\n", 1},
		{"defaults:\n  cooldown: 5m\n", 2},
		{"tables:\n  - match: db.t\n    cooldown: 5m\n", 3},
		{"tables:\n- match: db.t\n  cooldown: 5m\n", 3},
		{"namespaces: [a, b]\n", 2},
		{"namespaces: [[a], [b, [c]]]\n", 4},
		{"defaults: {cooldown: 5m}\n", 2},
		{"a:\n  b:\n    c:\n      d: 1\n", 4},
		{"- - - x\n", 3},
		{"- - - x\n  - y\n", 3},
		{"a: \"[[[[ - - ]]]]\"\nb: '{{{{ '' }}}}'\n", 1},
		{"a: plain [text] with - dashes\n", 1},
		{"a: x # [[[[\n", 1},
		{"a: |\n  - - - - [[[[\n  {{{{\nb: 1\n", 1},
		{"a: >-\n  [[[[\n\n  [[[[\nb: [c]\n", 2},
		{"a: \"multi\n  line [[[[\n  quote\"\nb: 1\n", 1},
		{"a: &x [1]\nb: *x\n", 2},
		{"a: !!str '['\n", 1},
		{"--- \na: [1]\n---\nb:\n  c: 1\n", 2},
		{"a:\n  [\n    1,\n    [2]\n  ]\n", 3},
		{"url: http://host:80/x\ntime: 12:30\n", 1},
	}
	for _, tt := range tests {
		got := measure([]byte(tt.doc), MaxDepth).depth
		if got != tt.want {
			t.Errorf("measure(%q).depth = %d, want %d", tt.doc, got, tt.want)
		}
		if real := yamlDepth(t, tt.doc); got < real || got > 2*real+1 {
			t.Errorf("measure(%q).depth = %d, real depth %d", tt.doc, got, real)
		}
	}
}

// The shapes that made go-yaml take gigabytes are refused before it runs,
// with the limit and the depth found; so is a file larger than a ConfigMap.
func TestParseRefusesDeepAndLargeDocuments(t *testing.T) {
	n := 30_000
	tests := []struct {
		name, doc, want string
	}{
		{"flow lists", "namespaces: " + strings.Repeat("[", n) + strings.Repeat("]", n), "nesting depth 30001 (first over the limit at line 1) exceeds the limit of 32 levels"},
		{"flow mappings", "defaults: " + strings.Repeat("{a: ", n) + "1" + strings.Repeat("}", n), "nesting depth 30001"},
		{"compact block lists", "namespaces:\n" + strings.Repeat("- ", n) + "x\n", "nesting depth 30001 (first over the limit at line 2)"},
		{"too large", "namespaces: [a]\n" + strings.Repeat("# padding\n", MaxFileSize/10+1), "file size 1048596 bytes exceeds the limit of 1048576 bytes (1MiB"},
		{"too many values", "namespaces: [" + strings.Repeat("a,", MaxNodes) + "a]\n", "the document has 100003 values, lists and mappings, more than the limit of 100000"},
		{"too many overrides", "tables:\n" + strings.Repeat("- match: db.t\n  cooldown: 5m\n", MaxNodes/5+1), "more than the limit of 100000"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse([]byte(tt.doc))
			var le *LimitError
			if !errors.As(err, &le) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Parse = %v, want a *LimitError containing %q", err, tt.want)
			}
		})
	}
	deepest := "a:" + strings.Repeat(" [", MaxDepth-1) + strings.Repeat("]", MaxDepth-1) + "\n"
	if _, err := Parse([]byte(deepest)); errors.As(err, new(*LimitError)) {
		t.Errorf("a document exactly %d levels deep is refused: %v", MaxDepth, err)
	}
}

// measure counts nodes as the parser builds them, within a few: the bound
// is on parser memory, so the count must not fall far short.
func TestMeasureNodes(t *testing.T) {
	tests := []struct {
		doc  string
		want int
	}{
		{"a: 1\n", 2},
		{"namespaces: [a, b, \"c\"]\n", 5},
		{"tables:\n- match: db.t\n  cooldown: 5m\n", 6},
		{"a: &x [1]\nb: *x\n", 5},
		{"a: |\n  x\n  y\n", 2},
	}
	for _, tt := range tests {
		if got := measure([]byte(tt.doc), MaxDepth).nodes; got != tt.want {
			t.Errorf("measure(%q).nodes = %d, want %d", tt.doc, got, tt.want)
		}
	}
}

func TestReadFileStopsAtTheLimit(t *testing.T) {
	dir := t.TempDir()
	big := filepath.Join(dir, "big.yaml")
	if err := os.WriteFile(big, make([]byte, 3*MaxFileSize), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := ReadFile(big)
	var le *LimitError
	if !errors.As(err, &le) || le.Found != 3*MaxFileSize || le.Max != MaxFileSize {
		t.Fatalf("ReadFile = %v (%+v), want the size limit with the file's size", err, le)
	}
	if _, err := Load(big); !errors.As(err, &le) || !strings.Contains(err.Error(), big) {
		t.Errorf("Load = %v, want the size limit naming the file", err)
	}
	exact := filepath.Join(dir, "exact.yaml")
	if err := os.WriteFile(exact, []byte("#"+strings.Repeat(" ", MaxFileSize-1)), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(exact); err != nil {
		t.Errorf("a file of exactly MaxFileSize bytes: %v", err)
	}
}
