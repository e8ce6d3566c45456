// Package redact masks credentials in text reactor prints: URLs (NATS,
// catalog, S3 endpoints), SQL DSNs, catalog properties, error messages that
// quote any of them, and whole log records. Every place that prints a URL
// goes through [String], so there is one definition of what a secret looks
// like.
//
// It must not decide what is logged or returned; it only rewrites text.
package redact

import (
	"context"
	"fmt"
	"log/slog"
	"net/url"
	"regexp"
	"strings"
)

// Mask replaces every secret.
const Mask = "***"

// secretWords are the fragments that make a parameter or property name a
// secret's: password, passwd, _auth_pass, pwd, s3.secret-access-key,
// token, rest.credential, authorization, auth, signature, nkey seeds, jwt.
var secretWords = [...]string{"pass", "pwd", "secret", "token", "key", "credential", "auth", "signature", "seed", "jwt", "cookie"}

// SecretName reports whether a query parameter, DSN keyword or property
// name looks like it holds a secret (case-insensitive; percent-escapes are
// decoded first, so p%61ssword counts).
func SecretName(name string) bool {
	if u, err := url.QueryUnescape(name); err == nil {
		name = u
	}
	n := strings.ToLower(name)
	for _, w := range secretWords {
		if strings.Contains(n, w) {
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

// pair is one name=value in a query string, a key=value DSN
// ("host=db password=x") or free text. The value ends at a separator of
// any of those forms.
var pair = regexp.MustCompile("([A-Za-z0-9_.%\\-]+)=([^&;,\\s\"'`<>]*)")

// String masks every credential in s, whatever s is: a URL
// (nats://user:pass@host, nats://TOKEN@host, http://h/?token=x), a list of
// them (nats://a,nats://b), a DSN (file:c.db?_auth_pass=x,
// postgres://u:p@db/x?password=y, host=db password=x, user:pass@tcp(db)/x),
// or an error message or log line quoting any of these.
//
// The user information of every URL is masked whole (NATS takes a bare
// token there), and so is the value of every name=value whose name
// [SecretName] flags. Everything else is kept as written, so hosts, paths
// and harmless parameters stay readable.
func String(s string) string {
	if s == "" {
		return s
	}
	s = maskUserinfo(s)
	if !strings.Contains(s, "=") {
		return s
	}
	return pair.ReplaceAllStringFunc(s, func(m string) string {
		name, _, _ := strings.Cut(m, "=")
		if !SecretName(name) {
			return m
		}
		return name + "=" + Mask
	})
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
			b.WriteString(auth[at:])
		} else {
			if sp := strings.IndexAny(auth, " \t"); sp >= 0 {
				end = sp
			}
			b.WriteString(rest[:start+end])
		}
		rest = rest[start+end:]
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

// Handler wraps h so that every record's message and attributes go
// through [String] before h sees them: a URL or an error quoting one
// cannot reach the log with its credentials, whichever package logged it.
// Strings, errors, fmt.Stringers, []string and map[string]string values
// are redacted (map values by [Value], so secret keys are masked too);
// other values are passed on as they are.
func Handler(h slog.Handler) slog.Handler {
	if _, ok := h.(*handler); ok {
		return h
	}
	return &handler{next: h}
}

type handler struct{ next slog.Handler }

func (h *handler) Enabled(ctx context.Context, l slog.Level) bool { return h.next.Enabled(ctx, l) }

func (h *handler) Handle(ctx context.Context, r slog.Record) error {
	out := slog.NewRecord(r.Time, r.Level, String(r.Message), r.PC)
	r.Attrs(func(a slog.Attr) bool {
		out.AddAttrs(attr(a))
		return true
	})
	return h.next.Handle(ctx, out)
}

func (h *handler) WithAttrs(as []slog.Attr) slog.Handler {
	red := make([]slog.Attr, len(as))
	for i, a := range as {
		red[i] = attr(a)
	}
	return &handler{next: h.next.WithAttrs(red)}
}

func (h *handler) WithGroup(name string) slog.Handler {
	return &handler{next: h.next.WithGroup(name)}
}

func attr(a slog.Attr) slog.Attr {
	if SecretName(a.Key) && a.Value.Kind() == slog.KindString && a.Value.String() != "" {
		return slog.String(a.Key, Mask)
	}
	return slog.Attr{Key: a.Key, Value: value(a.Value.Resolve())}
}

func value(v slog.Value) slog.Value {
	switch v.Kind() {
	case slog.KindString:
		return slog.StringValue(String(v.String()))
	case slog.KindGroup:
		as := v.Group()
		red := make([]slog.Attr, len(as))
		for i, a := range as {
			red[i] = attr(a)
		}
		return slog.GroupValue(red...)
	case slog.KindAny:
	default:
		return v
	}
	switch x := v.Any().(type) {
	case error:
		return slog.StringValue(String(x.Error()))
	case fmt.Stringer:
		return slog.StringValue(String(x.String()))
	case []string:
		out := make([]string, len(x))
		for i, s := range x {
			out[i] = String(s)
		}
		return slog.AnyValue(out)
	case map[string]string:
		out := make(map[string]string, len(x))
		for k, s := range x {
			out[k] = Value(k, s)
		}
		return slog.AnyValue(out)
	}
	return v
}
