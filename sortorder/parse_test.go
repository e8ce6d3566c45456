package sortorder

import (
	"errors"
	"math/rand/v2"
	"reflect"
	"strconv"
	"strings"
	"testing"
)

func asc(col string) Field  { return Field{Column: col, NullsFirst: true} }
func desc(col string) Field { return Field{Column: col, Descending: true} }

func TestParseValid(t *testing.T) {
	tests := []struct {
		in   string
		want Order
	}{
		{"a", Order{Fields: []Field{asc("a")}}},
		{"a DESC", Order{Fields: []Field{desc("a")}}},
		{"a desc", Order{Fields: []Field{desc("a")}}},
		{"a ASC", Order{Fields: []Field{asc("a")}}},
		// Null order defaults by direction, and an explicit one overrides it.
		{"a ASC NULLS LAST", Order{Fields: []Field{{Column: "a"}}}},
		{"a DESC NULLS FIRST", Order{Fields: []Field{{Column: "a", Descending: true, NullsFirst: true}}}},
		{"a NULLS LAST", Order{Fields: []Field{{Column: "a"}}}},
		{"a nulls first", Order{Fields: []Field{asc("a")}}},
		{"a DeSc NuLlS lAsT", Order{Fields: []Field{desc("a")}}},
		{"customer_id ASC NULLS LAST, order_ts DESC", Order{Fields: []Field{{Column: "customer_id"}, desc("order_ts")}}},
		{"  a  asc  nulls  first ,b   DESC NULLS FIRST  ", Order{Fields: []Field{asc("a"), {Column: "b", Descending: true, NullsFirst: true}}}},
		{"a,b,c", Order{Fields: []Field{asc("a"), asc("b"), asc("c")}}},
		{"a\tDESC,\n\tb", Order{Fields: []Field{desc("a"), asc("b")}}},
		{"Customer_ID", Order{Fields: []Field{asc("Customer_ID")}}},
		{"1a", Order{Fields: []Field{asc("1a")}}},
		{"`weird col` desc nulls first", Order{Fields: []Field{{Column: "weird col", Descending: true, NullsFirst: true}}}},
		{"`a``b`", Order{Fields: []Field{asc("a`b")}}},
		{"```x`", Order{Fields: []Field{asc("`x")}}},
		{"`x```", Order{Fields: []Field{asc("x`")}}},
		{"`a.b` DESC", Order{Fields: []Field{desc("a.b")}}},
		{"`x`desc", Order{Fields: []Field{desc("x")}}},
		{"`é, ünïcode`", Order{Fields: []Field{asc("é, ünïcode")}}},
		// Keywords and zorder are still column names in column position.
		{"desc", Order{Fields: []Field{asc("desc")}}},
		{"nulls DESC", Order{Fields: []Field{desc("nulls")}}},
		{"zorder", Order{Fields: []Field{asc("zorder")}}},
		{"zorder DESC, a", Order{Fields: []Field{desc("zorder"), asc("a")}}},
		{"zorder(c1, c2)", Order{ZOrder: true, Fields: []Field{asc("c1"), asc("c2")}}},
		{"ZORDER ( c1 ,c2,c3,c4 )", Order{ZOrder: true, Fields: []Field{asc("c1"), asc("c2"), asc("c3"), asc("c4")}}},
		{"zOrder(`x y`, b) ", Order{ZOrder: true, Fields: []Field{asc("x y"), asc("b")}}},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := Parse(tt.in)
			if err != nil {
				t.Fatalf("Parse(%q): %v", tt.in, err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("Parse(%q) = %#v, want %#v", tt.in, got, tt.want)
			}
			again, err := Parse(got.String())
			if err != nil {
				t.Fatalf("Parse(%q) (String of %q): %v", got.String(), tt.in, err)
			}
			if !reflect.DeepEqual(again, got) {
				t.Fatalf("round trip through %q: %#v, want %#v", got.String(), again, got)
			}
		})
	}
}

func TestParseErrors(t *testing.T) {
	tests := []struct {
		in   string
		want string // substring of the message
	}{
		{"", "sort order is empty"},
		{"   ", "sort order is empty"},
		{"a ASCENDING", `unknown keyword "ASCENDING" after column a`},
		{"a b", `unknown keyword "b" after column a`},
		{"a NULLS MIDDLE", `unknown keyword "MIDDLE" after NULLS`},
		{"a DESC NULLS", "NULLS must be followed by FIRST or LAST, got end of input"},
		{"a NULLS, b", `NULLS must be followed by FIRST or LAST, got ","`},
		{"a ASC DESC", `unexpected "DESC" after "a ASC"`},
		{"a DESC NULLS FIRST ASC", `unexpected "ASC" after "a DESC NULLS FIRST"`},
		{"a; b", `unexpected ";" after "a"`},
		{"a DESC `b`", "unexpected \"`b`\" after \"a DESC\""},
		{",a", "empty column before ','"},
		{"a,,b", "empty column before ','"},
		{"a, , b", "empty column before ','"},
		{"a,", "trailing comma"},
		{"a DESC, ", "trailing comma"},
		{"``", "empty column name ``"},
		{"`abc", "unterminated backtick-quoted column `abc"},
		{"a, `b``", "unterminated backtick-quoted column `b``"},
		{"é", `unexpected character "é" where a column name was expected (quote names with other characters in backticks)`},
		{"(a)", `unexpected "(" where a column name was expected`},
		{"zorder(a)", "zorder needs 2 to 4 columns, got 1"},
		{"zorder(a, b, c, d, e)", "zorder needs 2 to 4 columns, got 5"},
		{"zorder()", "zorder needs 2 to 4 columns, got 0"},
		{"zorder(a,)", "trailing comma in zorder(...)"},
		{"zorder(a, b", "missing ')' closing zorder(a, b"},
		{"zorder(a DESC, b)", `zorder columns take no direction or null order: "DESC" after a`},
		{"zorder(a, b) DESC", `unexpected "DESC" after zorder(a, b) (a z-order is the whole sort order)`},
		{"zorder(a, b), c", `unexpected "," after zorder(a, b)`},
		{"zorder(a; b)", `unexpected ";" in zorder(...)`},
		{"a, zorder(b, c)", `"zorder(b, c)" must be the whole sort order`},
		{"a.b", `nested field "a.b" is not supported: sort orders take top-level columns only`},
		{"x, a.b.c DESC", `nested field "a.b.c" is not supported`},
		{"`a`.b", "nested field \"`a`.b\" is not supported"},
		{"zorder(a.b, c)", `nested field "a.b" is not supported`},
		{"bucket(4, x)", `transform "bucket(4, x)" is not supported`},
		{"a, truncate(x, 3) DESC", `transform "truncate(x, 3)" is not supported`},
		{"years(ts)", `transform "years(ts)" is not supported`},
		{"zorder(bucket(4, a), b)", `transform "bucket(4, a)" is not supported`},
		{"a, b DESC, a", "column a appears more than once (at offset 11)"},
		// Regressions: a trailing backtick crashed the parser (index out of
		// range describing the token after an unterminated quote).
		{"a`", "unexpected \"`\" after \"a\" (terms are separated by commas)"},
		{"a DESC`", "unexpected \"`\" after \"a DESC\""},
		{"zorder(a, b)`", "unexpected \"`\" after zorder(a, b)"},
		{"zorder(a`", "unexpected \"`\" in zorder(...)"},
		{"zorder(a, a)", "column a appears more than once"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			o, err := Parse(tt.in)
			if err == nil {
				t.Fatalf("Parse(%q) = %v, want an error containing %q", tt.in, o, tt.want)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Parse(%q) error %q, want it to contain %q", tt.in, err, tt.want)
			}
			if !errors.Is(err, ErrInvalid) {
				t.Errorf("Parse(%q) error %q does not wrap ErrInvalid", tt.in, err)
			}
			// The message quotes the whole input so it stands on its own.
			if prefix := "invalid sort order " + strconv.Quote(tt.in) + ": "; !strings.HasPrefix(err.Error(), prefix) {
				t.Errorf("Parse(%q) error %q does not start with %q", tt.in, err, prefix)
			}
		})
	}
}

func TestStringCanonical(t *testing.T) {
	tests := []struct {
		o    Order
		want string
	}{
		{Order{Fields: []Field{asc("a")}}, "a ASC NULLS FIRST"},
		{Order{Fields: []Field{desc("a"), {Column: "b"}}}, "a DESC NULLS LAST, b ASC NULLS LAST"},
		{Order{Fields: []Field{asc("weird col")}}, "`weird col` ASC NULLS FIRST"},
		{Order{Fields: []Field{asc("a`b")}}, "`a``b` ASC NULLS FIRST"},
		{Order{Fields: []Field{asc("desc"), asc("Zorder"), asc("1a"), asc("a.b")}}, "`desc` ASC NULLS FIRST, `Zorder` ASC NULLS FIRST, `1a` ASC NULLS FIRST, `a.b` ASC NULLS FIRST"},
		{Order{ZOrder: true, Fields: []Field{asc("c1"), desc("c 2")}}, "zorder(c1, `c 2`)"},
	}
	for _, tt := range tests {
		if got := tt.o.String(); got != tt.want {
			t.Errorf("String() = %q, want %q", got, tt.want)
		}
	}
}

// Any order with distinct non-empty names survives String and Parse.
func TestStringRoundTripRandom(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	pieces := []string{"a", "B", "_", "1", "`", " ", ".", ",", "(", ")", "é", "desc", "nulls", "zorder", "\x00", "\t"}
	for iter := range 2000 {
		n := 1 + rng.IntN(4)
		z := n >= 2 && rng.IntN(3) == 0
		o := Order{ZOrder: z}
		seen := map[string]bool{}
		for len(o.Fields) < n {
			var b strings.Builder
			for range 1 + rng.IntN(4) {
				b.WriteString(pieces[rng.IntN(len(pieces))])
			}
			name := b.String()
			if seen[name] {
				continue
			}
			seen[name] = true
			f := Field{Column: name, Descending: rng.IntN(2) == 0, NullsFirst: rng.IntN(2) == 0}
			if z {
				f = asc(name)
			}
			o.Fields = append(o.Fields, f)
		}
		s := o.String()
		got, err := Parse(s)
		if err != nil {
			t.Fatalf("#%d: Parse(%q): %v", iter, s, err)
		}
		if !reflect.DeepEqual(got, o) {
			t.Fatalf("#%d: Parse(%q) = %#v, want %#v", iter, s, got, o)
		}
	}
}

// An error quotes at most excerpt.Max bytes of each piece of input, however
// long the input: the order comes from a ConfigMap and the message goes to
// logs and to validate-config's output.
func TestParseErrorIsBounded(t *testing.T) {
	long := strings.Repeat("x", 1<<20)
	for _, in := range []string{long + " y", "a " + long, "`" + long, long + ".b", "zorder(" + long, "bucket(" + long + ")", long + "`"} {
		_, err := Parse(in)
		if err == nil {
			t.Fatalf("Parse(%d bytes) succeeded", len(in))
		}
		if n := len(err.Error()); n > maxParseError {
			t.Errorf("Parse(%.20q...) error is %d bytes", in, n)
		}
	}
}
