// Package redact masks credentials in text reactor prints: URLs (NATS,
// catalog, S3 endpoints), SQL DSNs, catalog properties, error messages that
// quote any of them, configuration and JSON quoted in text, HTTP
// authorization headers, NATS nkey seeds, JWTs and PEM private keys, and
// whole log records, maps and structs included. Every place that prints a
// URL or an error goes through [String], so there is one definition of
// what a secret looks like.
//
//   - redact.go: [String], [Value], [SecretName], [Error], and the user
//     information of URLs and DSNs.
//   - pairs.go: the values of name=value, name="value", "name": value and
//     name: value (YAML, HTTP headers) whose name is a secret's.
//   - tokens.go: secrets recognised by their shape wherever they stand:
//     Bearer tokens, nkey seeds, JWTs, PEM private keys.
//   - handler.go: [Handler], the slog.Handler wrapper that passes every
//     record through [String], walking maps, slices and structs.
//   - panic.go: [Panic], a recovered panic with its value and stack
//     redacted ([PanicError]).
//
// It must not decide what is logged or returned; it only rewrites text. It
// errs on the side of masking: a harmless value under a secret-sounding
// name (an "object key: ...") is masked too.
package redact

import (
	"net/url"
	"strings"
)

// Mask replaces every secret.
const Mask = "***"

// SecretName reports whether a query parameter, DSN keyword or property
// name looks like it holds a secret: it contains pass, pwd, secret, token,
// key, credential, auth, signature, seed, jwt or cookie (password, passwd,
// _auth_pass, s3.secret-access-key, rest.credential, Authorization, nkey
// seeds), in any case; percent-escapes are decoded first, so p%61ssword
// counts.
func SecretName(name string) bool {
	if strings.IndexByte(name, '%') >= 0 {
		if u, err := url.QueryUnescape(name); err == nil {
			name = u
		}
	}
	for i := 0; i < len(name); i++ {
		c := name[i] | 0x20 // ASCII lower case; other bytes match no word
		var words []string
		switch c {
		case 'p':
			words = []string{"pass", "pwd"}
		case 's':
			words = []string{"secret", "signature", "seed"}
		case 't':
			words = []string{"token"}
		case 'k':
			words = []string{"key"}
		case 'c':
			words = []string{"credential", "cookie"}
		case 'a':
			words = []string{"auth"}
		case 'j':
			words = []string{"jwt"}
		default:
			continue
		}
		for _, w := range words {
			if len(name)-i >= len(w) && containsFold(name[i:i+len(w)], w) {
				return true
			}
		}
	}
	return false
}

// containsFold reports whether s contains lower, an ASCII lower-case
// word, in any case, without allocating.
func containsFold(s, lower string) bool {
	n := len(lower)
	for i := 0; i+n <= len(s); i++ {
		j := 0
		for ; j < n; j++ {
			c := s[i+j]
			if 'A' <= c && c <= 'Z' {
				c += 'a' - 'A'
			}
			if c != lower[j] {
				break
			}
		}
		if j == n {
			return true
		}
	}
	return false
}

// Value returns value, or [Mask] when key names a secret. A value that is
// not itself secret still goes through [String]: an endpoint property may
// carry credentials in its URL.
func Value(key, value string) string {
	if SecretName(key) {
		return Mask
	}
	return String(value)
}

// String masks every credential in s, whatever s is: a URL
// (nats://user:pass@host, nats://TOKEN@host, http://h/?token=x), a list of
// them (nats://a,nats://b), a DSN (file:c.db?_auth_pass=x,
// postgres://u:p@db/x?password=y, host=db password=x, user:pass@tcp(db)/x),
// configuration or JSON quoted in text (password="x", {"token":"x"},
// s3.secret-access-key: x), an HTTP header (Authorization: Bearer x), a
// secret recognised by its shape (Bearer tokens, nkey seeds, JWTs, PEM
// private keys), or an error message or log line quoting any of these.
//
// The user information of every URL is masked whole (NATS takes a bare
// token there), and so is the value of every name=value or name: value
// whose name [SecretName] flags. Everything else is kept as written, so
// hosts, paths and harmless parameters stay readable. String is
// idempotent: what it returns, it returns unchanged.
func String(s string) string {
	if s == "" {
		return s
	}
	s = maskUserinfo(s)
	s = maskPairs(s)
	return maskTokens(s)
}

// authorityEnd are the bytes that end a URL's authority, or the URL itself
// when it is quoted in text. Blanks end it too, unless an '@' follows
// before any of these: a password with a space is no valid URL, but the
// error saying so quotes it.
const authorityEnd = "/?#\\\r\n\"'`<>,"

// maskUserinfo replaces the user information of every scheme://user@host
// in s with Mask, and that of a DSN of the form user:pass@tcp(host)/db.
func maskUserinfo(s string) string {
	var b strings.Builder
	rest := s
	found := false
	for {
		i := strings.Index(rest, "://")
		if i < 0 {
			break
		}
		start := i + 3
		end := strings.IndexAny(rest[start:], authorityEnd)
		if end < 0 {
			end = len(rest) - start
		}
		auth := rest[start : start+end]
		if at := strings.LastIndexByte(auth, '@'); at >= 0 {
			found = true
			b.WriteString(rest[:start])
			b.WriteString(Mask)
			// Go on from the '@': what follows may hold another URL.
			rest = rest[start+at:]
			continue
		}
		// No user information: the next "://" may stand inside what looked
		// like this authority ("://nats://u:p@h").
		b.WriteString(rest[:start])
		rest = rest[start:]
	}
	if !found && !strings.Contains(s, "://") {
		// A DSN without a scheme: user:pass@tcp(host:3306)/db.
		if at := strings.IndexByte(s, '@'); at > 0 {
			if c := strings.IndexByte(s[:at], ':'); c > 0 && !strings.ContainsAny(s[:at], " \t/") {
				return s[:c+1] + Mask + s[at:]
			}
		}
		return s
	}
	b.WriteString(rest)
	return b.String()
}

// Error returns err with its message passed through [String]; errors.Is
// and errors.As still see the original. nil stays nil.
func Error(err error) error {
	if err == nil {
		return nil
	}
	msg := err.Error()
	red := String(msg)
	if red == msg {
		return err
	}
	return &redacted{msg: red, err: err}
}

type redacted struct {
	msg string
	err error
}

func (e *redacted) Error() string { return e.msg }
func (e *redacted) Unwrap() error { return e.err }
