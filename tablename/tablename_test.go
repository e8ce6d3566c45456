package tablename

import (
	"errors"
	"slices"
	"testing"
)

func TestParse(t *testing.T) {
	for _, tt := range []struct {
		name string
		want []string
	}{
		{"db.t", []string{"db", "t"}},
		{"a.b.t", []string{"a", "b", "t"}},
		{"", nil},
		{"t", nil},
		{".t", nil},
		{"db.", nil},
		{"db..t", nil},
		{"a..b.t", nil},
	} {
		got, err := Parse(tt.name)
		switch {
		case tt.want == nil && !errors.Is(err, ErrInvalid):
			t.Errorf("Parse(%q) = %q, %v: want ErrInvalid", tt.name, got, err)
		case tt.want != nil && (err != nil || !slices.Equal(got, tt.want)):
			t.Errorf("Parse(%q) = %q, %v: want %q", tt.name, got, err, tt.want)
		case tt.want != nil && Format(got) != tt.name:
			t.Errorf("Format(Parse(%q)) = %q", tt.name, Format(got))
		}
	}
}
