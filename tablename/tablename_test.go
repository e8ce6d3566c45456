package tablename

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	for _, tt := range []struct {
		name string
		want []string
	}{
		{"db.t", []string{"db", "t"}},
		{"a.b.t", []string{"a", "b", "t"}},
		{"`a.b`.t", []string{"a.b", "t"}},
		{"x.`a.b`.`c``d`", []string{"x", "a.b", "c`d"}},
		{"`db`.t", []string{"db", "t"}},
		{"", nil},
		{"t", nil},
		{".t", nil},
		{"db.", nil},
		{"db..t", nil},
		{"a..b.t", nil},
		{"``.t", nil},
		{"`a.b.t", nil},
		{"`a`b.t", nil},
		{"d`b.t", nil},
		{"`a.b`", nil},
	} {
		got, err := Parse(tt.name)
		switch {
		case tt.want == nil && !errors.Is(err, ErrInvalid):
			t.Errorf("Parse(%q) = %q, %v: want ErrInvalid", tt.name, got, err)
		case tt.want != nil && (err != nil || !slices.Equal(got, tt.want)):
			t.Errorf("Parse(%q) = %q, %v: want %q", tt.name, got, err, tt.want)
		case tt.want != nil && !strings.Contains(tt.name, "`") && Format(got) != tt.name:
			t.Errorf("Format(Parse(%q)) = %q", tt.name, Format(got))
		}
	}
}

// Names without a dot or a backtick in a level are spelled as they always
// were: levels joined by dots (thresholds, metrics and subjects use it).
func TestFormatKeepsPlainNames(t *testing.T) {
	for ident, want := range map[string]string{"db\x00t": "db.t", "a\x00b\x00t": "a.b.t", "a.b\x00t": "`a.b`.t", "c`d\x00t": "`c``d`.t"} {
		if got := Format(strings.Split(ident, "\x00")); got != want {
			t.Errorf("Format(%q) = %q, want %q", ident, got, want)
		}
	}
}

// A Name keeps its identifier and its spelling together, and a nested
// namespace whose level holds a dot round-trips through its spelling.
func TestName(t *testing.T) {
	ident := []string{"lake", "raw.events", "t"}
	n := Of(ident)
	ident[0] = "changed"
	if n.String() != "lake.`raw.events`.t" || !slices.Equal(n.Ident(), []string{"lake", "raw.events", "t"}) {
		t.Fatalf("Of = %q %q", n, n.Ident())
	}
	back, err := ParseName(n.String())
	if err != nil || back.String() != n.String() || !slices.Equal(back.Ident(), n.Ident()) {
		t.Fatalf("ParseName(%q) = %q %q, %v", n, back, back.Ident(), err)
	}
	if !(Name{}).IsZero() || n.IsZero() {
		t.Error("IsZero")
	}
	if _, err := ParseName("db"); !errors.Is(err, ErrInvalid) {
		t.Errorf("ParseName(db): %v", err)
	}
}

// Every identifier of at least two non-empty levels round-trips through
// its spelling; Parse never panics and what it accepts formats back to a
// name it parses the same way.
func FuzzParse(f *testing.F) {
	for _, s := range []string{"db.t", "a.b.t", "`a.b`.t", "x.`c``d`.e", "``.t", "`", "a.`", ".", "`a`.`b`"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		ident, err := Parse(s)
		if err != nil {
			return
		}
		if len(ident) < 2 {
			t.Fatalf("Parse(%q) = %q: fewer than two levels", s, ident)
		}
		for _, level := range ident {
			if level == "" {
				t.Fatalf("Parse(%q) = %q: an empty level", s, ident)
			}
		}
		again, err := Parse(Format(ident))
		if err != nil || !slices.Equal(again, ident) {
			t.Fatalf("Parse(Format(%q)) = %q, %v", ident, again, err)
		}
	})
}
