package sortorder

import (
	"errors"
	"reflect"
	"testing"
)

// maxParseError bounds a Parse error's message: the message quotes the
// input and up to three pieces of it, each cut to excerpt.Max bytes (four
// bytes per byte once escaped), whatever the input's size.
const maxParseError = 6 << 10

// FuzzParse checks Parse on arbitrary input: it never panics, it is
// deterministic, a success is a usable order that String renders in a form
// Parse reads back to the same order, and an error is ErrInvalid with a
// bounded message. The seed corpus is testdata/fuzz/FuzzParse; every
// crasher found is kept there as a regression.
func FuzzParse(f *testing.F) {
	f.Fuzz(func(t *testing.T, s string) {
		o, err := Parse(s)
		o2, err2 := Parse(s)
		if !reflect.DeepEqual(o, o2) || (err == nil) != (err2 == nil) || (err != nil && err.Error() != err2.Error()) {
			t.Fatalf("Parse(%q) is not deterministic: %v %v / %v %v", s, o, err, o2, err2)
		}
		if err != nil {
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("Parse(%q) error does not wrap ErrInvalid: %v", s, err)
			}
			if n := len(err.Error()); n > maxParseError {
				t.Fatalf("Parse(%d bytes) error is %d bytes long", len(s), n)
			}
			return
		}
		if len(o.Fields) == 0 {
			t.Fatalf("Parse(%q) succeeded with no fields", s)
		}
		seen := map[string]bool{}
		for _, fl := range o.Fields {
			if fl.Column == "" || seen[fl.Column] {
				t.Fatalf("Parse(%q): empty or repeated column in %#v", s, o)
			}
			seen[fl.Column] = true
			if o.ZOrder && (fl.Descending || !fl.NullsFirst) {
				t.Fatalf("Parse(%q): z-order field with a direction: %#v", s, fl)
			}
		}
		if o.ZOrder && (len(o.Fields) < minZOrderColumns || len(o.Fields) > maxZOrderColumns) {
			t.Fatalf("Parse(%q): z-order of %d columns", s, len(o.Fields))
		}
		canonical := o.String()
		again, err := Parse(canonical)
		if err != nil || !reflect.DeepEqual(again, o) {
			t.Fatalf("Parse(%q) = %#v; its String %q parses to %#v, %v", s, o, canonical, again, err)
		}
		if again.String() != canonical {
			t.Fatalf("String is not canonical: %q then %q", canonical, again.String())
		}
	})
}
