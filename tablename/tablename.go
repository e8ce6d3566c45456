// Package tablename is the one spelling of a table's name on reactor's
// command lines, events, logs, metrics and thresholds: namespace.table,
// the namespace possibly nested (a.b.table), every level non-empty.
//
//   - tablename.go: Parse (a name to a catalog identifier, refusing empty
//     levels such as db..t) and Format (an identifier back to its name).
//
// It owns only the spelling. It must not look a table up in a catalog or
// decide which tables reactor maintains.
package tablename

import (
	"errors"
	"fmt"
	"strings"

	"github.com/apache/iceberg-go/table"
)

// ErrInvalid is the error Parse wraps for a name that is not
// namespace.table.
var ErrInvalid = errors.New("want namespace.table")

// Parse splits name into a catalog identifier: every level but the last
// is the namespace. A name without a namespace, or with an empty level
// (".t", "db.", "db..t"), is refused: a catalog would otherwise look up
// a table in a namespace nobody named.
func Parse(name string) (table.Identifier, error) {
	ident := strings.Split(name, ".")
	if len(ident) < 2 {
		return nil, fmt.Errorf("%w, got %q", ErrInvalid, name)
	}
	for _, level := range ident {
		if level == "" {
			return nil, fmt.Errorf("%w, got %q (an empty level)", ErrInvalid, name)
		}
	}
	return ident, nil
}

// Format is the name of ident, its levels joined by dots: the inverse of
// Parse.
func Format(ident table.Identifier) string { return strings.Join(ident, ".") }
