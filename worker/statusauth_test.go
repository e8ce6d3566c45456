package worker

import (
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/icereactor/reactor/metrics"
)

// The token file: too short or with blanks is refused; a rotated file
// takes effect at its next look, and a file that turns invalid keeps the
// previous token in force.
func TestTokenAuth(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "token")
	write := func(s string, mod time.Time) {
		t.Helper()
		if err := os.WriteFile(file, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(file, mod, mod); err != nil {
			t.Fatal(err)
		}
	}
	for _, bad := range []string{"short", "two tokens-0123456789 x", ""} {
		write(bad, time.Now())
		if _, err := newTokenAuth(file); err == nil {
			t.Errorf("token %q accepted", bad)
		}
	}
	first, second := "first-0123456789abcdef", "second-0123456789abcdef"
	write(first+"\n", time.Unix(1000, 0))
	a, err := newTokenAuth(file)
	if err != nil {
		t.Fatal(err)
	}
	h := a.wrap(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.Write([]byte("page")) }), metrics.New(), slog.New(slog.DiscardHandler))
	code := func(token string) int {
		r := httptest.NewRequest(http.MethodGet, "/", nil)
		r.Header.Set("Authorization", "Bearer "+token)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, r)
		return rec.Code
	}
	if code(first) != http.StatusOK || code(second) != http.StatusUnauthorized {
		t.Fatal("first token not in force")
	}
	write(second, time.Unix(2000, 0))
	a.mu.Lock()
	a.checked = time.Time{} // the next request looks at the file
	a.mu.Unlock()
	if code(second) != http.StatusOK || code(first) != http.StatusUnauthorized {
		t.Fatal("rotated token not in force")
	}
	write("bad", time.Unix(3000, 0))
	a.mu.Lock()
	a.checked = time.Time{}
	a.mu.Unlock()
	if code(second) != http.StatusOK {
		t.Fatal("an invalid file dropped the token in force")
	}
}
