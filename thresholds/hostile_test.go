package thresholds

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

// Documents that crashed Parse (and with it validate-config and a running
// reactor's hot reload), and their relatives: each is now an error naming
// the field and the line.
func TestParseCrashersAreErrors(t *testing.T) {
	tests := []struct {
		name, doc, want string
	}{
		{"tag without a value on a list", "tables: ! \n", "tables: YAML tags are not supported"},
		{"tag without a value", "defaults:\n  target_file_size: !\n", "defaults.target_file_size: YAML tags are not supported"},
		{"tag without a value in flow style", "defaults: {target_file_size: ! }\n", "invalid YAML at line 1"},
		{"scalar tag on a list", "namespaces: !!str db\n", `namespaces: YAML tags are not supported in a thresholds document (write the value plainly; quote it for a string), got "!!str" (line 1, column 13)`},
		{"seq tag on a list", "tables: !!seq [{match: a.b}]\n", "tables: YAML tags are not supported"},
		{"seq tag on a scalar, one line", "tables: !!seq 5\n", "invalid YAML at line 1"},
		{"custom tag", "defaults:\n  cooldown: !secret 5m\n", "defaults.cooldown: YAML tags are not supported"},
		{"tag on a key", "defaults:\n  !!str cooldown: 5m\n", "YAML tags are not supported"},
		{"sort order ending in a backquote", "defaults:\n  strategy: sort\n  sort_order: \"a`\"\n", "defaults.sort_order: invalid sort order \"a`\": unexpected \"`\" after \"a\""},
		{"sort order of a lone backquote", "defaults:\n  sort_order: \"`\"\n", "unterminated backtick-quoted column"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse([]byte(tt.doc))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Parse(%q) = %v, want an error containing %q", tt.doc, err, tt.want)
			}
			var ie *InternalError
			if errors.As(err, &ie) {
				t.Fatalf("Parse(%q) panicked inside: %v\n%s", tt.doc, ie, ie.Stack)
			}
		})
	}
}

// maxParseError bounds a Parse error's message: MaxReportedErrors
// problems, each quoting at most excerpt.Max bytes of a path and of a value
// (escaped, up to four bytes per byte) plus a reason that may quote a sort
// order's pieces.
const maxParseError = MaxReportedErrors * 8 << 10

// Errors about huge keys and values quote a bounded excerpt of each, and a
// document with thousands of problems lists MaxReportedErrors of them.
func TestParseErrorsAreBounded(t *testing.T) {
	huge := strings.Repeat("x", 512<<10)
	var many strings.Builder
	many.WriteString("tables:\n")
	for i := range 5000 {
		fmt.Fprintf(&many, "- match: db.t%d\n  small_file_ratio: 7\n", i)
	}
	tests := []struct{ name, doc string }{
		{"huge unknown key", "defaults:\n  " + huge + ": 1\n"},
		{"huge string value", "defaults:\n  strategy: " + huge + "\n"},
		{"huge sort order", "defaults:\n  sort_order: \"" + huge + " y\"\n"},
		{"huge match", "tables:\n- match: \"" + huge + "[\"\n"},
		{"huge size", "defaults:\n  target_file_size: " + huge + "\n"},
		{"huge namespace", "namespaces: [\"" + huge + "*\"]\n"},
		{"many problems", many.String()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse([]byte(tt.doc))
			if err == nil {
				t.Fatal("Parse succeeded")
			}
			if n := len(err.Error()); n > maxParseError {
				t.Errorf("error is %d bytes: %.300s", n, err)
			}
		})
	}
	_, err := Parse([]byte(many.String()))
	if msg := err.Error(); strings.Count(msg, "small_file_ratio") != MaxReportedErrors || !strings.Contains(msg, "... and 4980 more problems") {
		t.Errorf("many problems: %d listed, message ends %q", strings.Count(msg, "small_file_ratio"), msg[max(0, len(msg)-80):])
	}
}

// go-yaml reported one of several unknown keys picked from a Go map, so the
// same file gave a different error on each run (found by FuzzParse).
func TestUnknownFieldsReportedInDocumentOrder(t *testing.T) {
	doc := "defaults:\n  zeta: 1\n  alpha: 2\n  cooldown: 5m\n  beta: 3\n"
	for range 20 {
		_, err := Parse([]byte(doc))
		if err == nil || !strings.HasPrefix(err.Error(), "defaults.zeta: unknown field") {
			t.Fatalf("Parse = %v, want the first unknown key, defaults.zeta", err)
		}
	}
}
