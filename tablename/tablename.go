// Package tablename is a table's identity on reactor's command lines,
// events, logs, metrics and thresholds: its catalog identifier and its
// one spelling, namespace.table, the namespace possibly nested
// (a.b.table), every level non-empty.
//
//   - tablename.go: [Name], the identity every layer passes (a job's
//     table, the planner's state, the coalescer's queues, object routes);
//     [Of] makes it from an identifier, [ParseName] from its spelling;
//     [Parse] and [Format] convert between the two forms directly.
//
// A level holding a dot or a backtick is quoted in backticks, a backtick
// in it doubled, as Spark quotes identifiers: the identifier ["a.b", "t"]
// is spelled `a.b`.t, so it does not read as ["a", "b", "t"], and Parse
// gives it back. Every other name is spelled as before, levels joined by
// dots. Commit events name their namespace dot-joined (package events), so
// a level holding a dot is one they cannot name; such a table is reached
// through the catalog (discovery, bucket notifications).
//
// It owns only the identity and its spelling. It must not look a table up
// in a catalog or decide which tables reactor maintains.
package tablename

import (
	"errors"
	"fmt"
	"slices"
	"strings"
)

// ErrInvalid is the error Parse wraps for a name that is not
// namespace.table.
var ErrInvalid = errors.New("want namespace.table")

// Name is a table's identity: its catalog identifier (an iceberg-go
// table.Identifier, which is a []string; this package imports nothing so
// that every layer may use it) and its spelling, computed once. The zero
// Name names no table.
type Name struct {
	ident []string
	name  string
}

// Of is the Name of ident (which it copies).
func Of(ident []string) Name {
	return Name{ident: slices.Clone(ident), name: Format(ident)}
}

// ParseName is the Name name spells (see Parse).
func ParseName(name string) (Name, error) {
	ident, err := Parse(name)
	if err != nil {
		return Name{}, err
	}
	return Name{ident: ident, name: Format(ident)}, nil
}

// MustParseName is ParseName for names known to be valid (tests,
// constants); it panics on an invalid one.
func MustParseName(name string) Name {
	n, err := ParseName(name)
	if err != nil {
		panic(err)
	}
	return n
}

// Ident is the catalog identifier. Callers must not modify it.
func (n Name) Ident() []string { return n.ident }

// String is the spelling: namespace.table.
func (n Name) String() string { return n.name }

// MarshalText spells n (logs and JSON show the name, not its parts).
func (n Name) MarshalText() ([]byte, error) { return []byte(n.name), nil }

// UnmarshalText reads a name as ParseName does.
func (n *Name) UnmarshalText(b []byte) error {
	v, err := ParseName(string(b))
	if err != nil {
		return err
	}
	*n = v
	return nil
}

// IsZero reports whether n names no table.
func (n Name) IsZero() bool { return len(n.ident) == 0 }

// Parse splits name into a catalog identifier: every level but the last
// is the namespace. A name without a namespace, or with an empty level
// (".t", "db.", "db..t", a quoted empty level), is refused: a catalog would otherwise
// look up a table in a namespace nobody named. Levels may be quoted in
// backticks (`a.b`.t), a backtick inside doubled.
func Parse(name string) ([]string, error) {
	var (
		ident []string
		level strings.Builder
	)
	for i := 0; i <= len(name); {
		if i < len(name) && name[i] == '`' {
			// A quoted level runs to the next single backtick, which must
			// end the level.
			j := i + 1
			for {
				k := strings.IndexByte(name[j:], '`')
				if k < 0 {
					return nil, fmt.Errorf("%w, got %q (an unclosed backtick)", ErrInvalid, name)
				}
				level.WriteString(name[j : j+k])
				j += k + 1
				if j < len(name) && name[j] == '`' {
					level.WriteByte('`')
					j++
					continue
				}
				break
			}
			if j < len(name) && name[j] != '.' {
				return nil, fmt.Errorf("%w, got %q (a quoted level must end at a dot)", ErrInvalid, name)
			}
			i = j
		}
		if i == len(name) || name[i] == '.' {
			if level.Len() == 0 {
				if len(ident) == 0 && i == len(name) {
					break // "" or "t"-like, refused below
				}
				return nil, fmt.Errorf("%w, got %q (an empty level)", ErrInvalid, name)
			}
			ident = append(ident, level.String())
			level.Reset()
			i++
			continue
		}
		if name[i] == '`' {
			return nil, fmt.Errorf("%w, got %q (a backtick inside an unquoted level)", ErrInvalid, name)
		}
		level.WriteByte(name[i])
		i++
	}
	if len(ident) < 2 {
		return nil, fmt.Errorf("%w, got %q", ErrInvalid, name)
	}
	return ident, nil
}

// Format is the name of ident, its levels joined by dots, a level holding
// a dot or a backtick quoted: the inverse of Parse.
func Format(ident []string) string {
	quote := false
	for _, level := range ident {
		quote = quote || strings.ContainsAny(level, ".`")
	}
	if !quote {
		return strings.Join(ident, ".")
	}
	parts := make([]string, len(ident))
	for i, level := range ident {
		parts[i] = level
		if strings.ContainsAny(level, ".`") {
			parts[i] = "`" + strings.ReplaceAll(level, "`", "``") + "`"
		}
	}
	return strings.Join(parts, ".")
}
