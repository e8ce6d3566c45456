// Package redacttest lists every shape of secret package redact masks, for
// the tests of the places that must pass text through it (logs, errors,
// job events, dead letters, the status pages, `reactor plan`, panics): each
// shape carries a secret spelled with Marker, and [Leaks] finds any that
// survived. It owns test data only.
package redacttest

import (
	"strings"
	"testing"
)

// Marker is in every secret of Shapes, and nowhere else.
const Marker = "S3CR3T"

// Shape is one way a secret appears in text.
type Shape struct {
	Name string
	Text string
}

// Shapes are the secrets the issue listed and the ones a review adds, one
// per shape, each holding Marker.
var Shapes = []Shape{
	{"url userinfo", "nats://user:S3CR3T-url@nats:4222"},
	{"url token", "nats://S3CR3T-tok@nats:4222"},
	{"query parameter", "http://rest:8181/v1/config?warehouse=w&credential=S3CR3T-q"},
	{"dsn", "host=db user=r password=S3CR3T-dsn dbname=c"},
	{"password double-quoted", `password="S3CR3T-dq"`},
	{"password single-quoted", `password='S3CR3T-sq'`},
	{"json token", `{"token":"S3CR3T-json"}`},
	{"json s3 secret", `{"s3.secret-access-key": "S3CR3T-json2"}`},
	{"json escaped in a string", `body "{\"token\":\"S3CR3T-esc\"}"`},
	{"yaml", "s3.secret-access-key: S3CR3T-yaml"},
	{"authorization header", "Authorization: Bearer S3CR3T-bearer"},
	{"bearer in text", "sent Bearer S3CR3T-bearer2 upstream"},
	{"basic auth header", "Authorization: Basic S3CR3T-basic="},
	{"nkey seed", "SUACSSL3UAHUDXKFSNVUZRF5UHPMWZ6BFDTJ7M6USDXIEDNPPQYYYCU3VY"},
}

// SeedMarker is the part of the nkey seed shape that must not survive
// (a seed cannot hold Marker: it is base32).
const SeedMarker = "SUACSSL3UAHUDXKFSNVUZRF5UHPMWZ6BFDTJ7M6USDXIEDNPPQYYYCU3VY"

// All is every shape in one text, one per line.
func All() string {
	lines := make([]string, len(Shapes))
	for i, s := range Shapes {
		lines[i] = s.Text
	}
	return strings.Join(lines, "\n")
}

// Leaks reports whether text holds a secret of Shapes.
func Leaks(text string) bool {
	return strings.Contains(text, Marker) || strings.Contains(text, SeedMarker)
}

// AssertMasked fails t when text, found where, holds a secret of Shapes.
func AssertMasked(t testing.TB, where, text string) {
	t.Helper()
	for _, m := range []string{Marker, SeedMarker} {
		if i := strings.Index(text, m); i >= 0 {
			t.Errorf("%s keeps a secret: ...%s...", where, text[max(0, i-80):min(len(text), i+40)])
		}
	}
}
