package excerpt

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestString(t *testing.T) {
	tests := []struct {
		in   string
		max  int
		want string
	}{
		{"short", 10, "short"},
		{"exactly10!", 10, "exactly10!"},
		{"abcdefghijk", 10, "abcdefghij…(11 bytes)"},
		// "é" is two bytes: a cut inside it backs off to before it.
		{"abcdefghié", 10, "abcdefghi…(11 bytes)"},
		// Invalid UTF-8 is cut where it stands.
		{"abcdefghi\xff\xff\xff", 10, "abcdefghi\xff…(12 bytes)"},
	}
	for _, tt := range tests {
		if got := String(tt.in, tt.max); got != tt.want {
			t.Errorf("String(%q, %d) = %q, want %q", tt.in, tt.max, got, tt.want)
		}
	}
}

func TestQuote(t *testing.T) {
	if got := Quote("a\"b"); got != `"a\"b"` {
		t.Errorf("Quote = %s", got)
	}
	long := strings.Repeat("日", 1000) // 3000 bytes
	got := Quote(long)
	if len(got) > Max+40 || !strings.HasSuffix(got, "…(3000 bytes)") || !utf8.ValidString(got) {
		t.Errorf("Quote(3000 bytes) = %d bytes: %s", len(got), got)
	}
}

func TestError(t *testing.T) {
	sentinel := errors.New("sentinel")
	short := fmt.Errorf("%w: short", sentinel)
	if Error(short) != short {
		t.Error("a short error is returned as is")
	}
	if Error(nil) != nil {
		t.Error("nil is not nil")
	}
	long := fmt.Errorf("%w: %s", sentinel, strings.Repeat("x", 1<<20))
	got := Error(long)
	if len(got.Error()) > MaxError+32 || !errors.Is(got, sentinel) {
		t.Errorf("long error: %d bytes, Is(sentinel) = %v", len(got.Error()), errors.Is(got, sentinel))
	}
}
