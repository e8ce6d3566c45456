package worker

// The status pages' credential: a token read from a file (a mounted
// Secret), asked of every request as a Bearer token or as the password of
// HTTP basic auth (any user name), so both curl and a browser's login
// prompt work.

import (
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/icereactor/reactor/metrics"
)

const (
	// MinStatusTokenBytes: a shorter token could be guessed; 32 random
	// characters (openssl rand -hex 16) cannot.
	MinStatusTokenBytes = 16
	// tokenRecheck is how often the file is looked at again: a rotated
	// Secret takes effect without a restart.
	tokenRecheck = 10 * time.Second
)

// tokenAuth checks requests against the token in a file.
type tokenAuth struct {
	path string

	mu      sync.Mutex
	sum     [sha256.Size]byte // of the token in force
	mod     time.Time
	checked time.Time
}

// newTokenAuth reads the token file: one token, surrounding blanks and
// newlines ignored, at least MinStatusTokenBytes long.
func newTokenAuth(path string) (*tokenAuth, error) {
	a := &tokenAuth{path: path}
	if err := a.load(); err != nil {
		return nil, err
	}
	return a, nil
}

func (a *tokenAuth) load() error {
	st, err := os.Stat(a.path)
	if err != nil {
		return fmt.Errorf("status token file: %w", err)
	}
	data, err := os.ReadFile(a.path)
	if err != nil {
		return fmt.Errorf("status token file: %w", err)
	}
	token := strings.TrimSpace(string(data))
	switch {
	case len(token) < MinStatusTokenBytes:
		return fmt.Errorf("status token file %s: the token must be at least %d characters (openssl rand -hex 16), it has %d",
			a.path, MinStatusTokenBytes, len(token))
	case strings.ContainsAny(token, " \t\r\n"):
		return fmt.Errorf("status token file %s: one token, without blanks or line breaks", a.path)
	}
	a.sum, a.mod, a.checked = sha256.Sum256([]byte(token)), st.ModTime(), time.Now()
	return nil
}

// current returns the hash of the token in force, reading the file again
// when it changed (at most every tokenRecheck). A file that became
// unreadable or invalid keeps the previous token.
func (a *tokenAuth) current(log *slog.Logger) [sha256.Size]byte {
	a.mu.Lock()
	defer a.mu.Unlock()
	if time.Since(a.checked) < tokenRecheck {
		return a.sum
	}
	a.checked = time.Now()
	if st, err := os.Stat(a.path); err == nil && !st.ModTime().Equal(a.mod) {
		prev := a.sum
		if err := a.load(); err != nil {
			a.sum = prev
			log.Warn("status token file changed but cannot be used; the previous token stays in force", "error", err)
		} else {
			log.Info("status token file changed; the new token is in force", "file", a.path)
		}
	}
	return a.sum
}

// errNoCredentials: the request carries no token.
var errNoCredentials = errors.New("no credentials")

// presented is the token a request carries: a Bearer token, or basic
// auth's password.
func presented(r *http.Request) (string, error) {
	if _, pass, ok := r.BasicAuth(); ok {
		return pass, nil
	}
	h := r.Header.Get("Authorization")
	if scheme, token, ok := strings.Cut(h, " "); ok && strings.EqualFold(scheme, "Bearer") {
		return strings.TrimSpace(token), nil
	}
	return "", errNoCredentials
}

// wrap refuses every request to next without the token: 401, with a
// WWW-Authenticate header a browser answers with its login prompt.
func (a *tokenAuth) wrap(next http.Handler, met *metrics.Metrics, log *slog.Logger) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		token, err := presented(r)
		want := a.current(log)
		got := sha256.Sum256([]byte(token))
		if err != nil || subtle.ConstantTimeCompare(got[:], want[:]) != 1 {
			reason := "wrong_token"
			if err != nil {
				reason = "no_credentials"
			}
			met.StatusRefused.WithLabelValues(reason).Inc()
			w.Header().Set("WWW-Authenticate", `Basic realm="reactor status", charset="UTF-8"`)
			w.Header().Set("Cache-Control", "no-store")
			http.Error(w, "the status pages need the token of --status-token-file (as a Bearer token, or as the basic auth password)", http.StatusUnauthorized)
			return
		}
		next.ServeHTTP(w, r)
	})
}
