package thresholds

import (
	"cmp"
	"errors"
	"path"
	"slices"
)

// matching returns the policies of the overrides matching table, most
// specific first (see For).
func (c *Config) matching(table string) []*Policy {
	type hit struct {
		index    int
		exact    bool
		literals int
	}
	var hits []hit
	for i, o := range c.Tables {
		if o.Match == "" {
			continue
		}
		if ok, err := path.Match(o.Match, table); err != nil || !ok {
			continue
		}
		literals, glob := specificity(o.Match)
		hits = append(hits, hit{index: i, exact: !glob, literals: literals})
	}
	slices.SortFunc(hits, func(a, b hit) int {
		if a.exact != b.exact {
			if a.exact {
				return -1
			}
			return 1
		}
		if n := cmp.Compare(b.literals, a.literals); n != 0 {
			return n
		}
		return cmp.Compare(b.index, a.index)
	})
	layers := make([]*Policy, 0, len(hits)+2)
	for _, h := range hits {
		layers = append(layers, &c.Tables[h.index].Policy)
	}
	return layers
}

// matchingIndexes is matching as indexes into c.Tables.
func (c *Config) matchingIndexes(table string) []int {
	var out []int
	for _, p := range c.matching(table) {
		for i := range c.Tables {
			if &c.Tables[i].Policy == p {
				out = append(out, i)
			}
		}
	}
	return out
}

// specificity counts the literal characters of a path.Match pattern
// (characters outside '*', '?' and [...] classes; an escaped character
// counts as one) and reports whether it has any wildcard.
func specificity(pattern string) (literals int, glob bool) {
	for i := 0; i < len(pattern); i++ {
		switch c := pattern[i]; c {
		case '*', '?':
			glob = true
		case '[':
			glob = true
			// Skip the class. path.Match requires a ']' inside a class
			// to be escaped, so it ends at the first unescaped ']'.
			for i++; i < len(pattern) && pattern[i] != ']'; i++ {
				if pattern[i] == '\\' {
					i++
				}
			}
		case '\\':
			if i+1 < len(pattern) {
				i++
				literals++
			}
		default:
			if c&0xC0 != 0x80 { // count runes, not UTF-8 continuation bytes
				literals++
			}
		}
	}
	return literals, glob
}

// validPattern reports whether pattern is a well-formed path.Match pattern.
func validPattern(pattern string) bool {
	_, err := path.Match(pattern, "")
	return !errors.Is(err, path.ErrBadPattern)
}
