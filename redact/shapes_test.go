package redact

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"github.com/icereactor/reactor/redact/redacttest"
)

// secretShapes is every shape of secret String must mask: the text, and
// what it becomes. Each secret is spelled SECRET-n so a test can look for
// it; the issue that asked for each shape is quoted where it applies.
var secretShapes = []struct{ name, in, want string }{
	{"key=value", "password=SECRET-1 and more", "password=*** and more"},
	{"key=\"value\"", `password="SECRET-2" next`, `password="***" next`},
	{"key='value'", `password='SECRET-3' next`, `password='***' next`},
	{"quoted value with blanks", `password="SEC RET-4" x=1`, `password="***" x=1`},
	{"quoted value with an escaped quote", `password="SE\"CRET-5" x=1`, `password="***" x=1`},
	{"key = value", "password = SECRET-6", "password = ***"},
	{"JSON string", `{"token":"SECRET-7"}`, `{"token":"***"}`},
	{"JSON with blank", `{"s3.secret-access-key": "SECRET-8", "region": "eu"}`, `{"s3.secret-access-key": "***", "region": "eu"}`},
	{"JSON number", `{"pin_token": 12345678, "n": 1}`, `{"pin_token": "***", "n": 1}`},
	{"JSON null stays", `{"token": null}`, `{"token": null}`},
	{"JSON nested", `{"props":{"rest.credential":"SECRET-9","uri":"http://h"}}`, `{"props":{"rest.credential":"***","uri":"http://h"}}`},
	{"JSON escaped in a Go error", `decode "{\"token\":\"SECRET-10\"}"`, `decode "{\"token\":\"***\"}"`},
	{"dict repr", `{'token': 'SECRET-11'}`, `{'token': '***'}`},
	{"YAML", "s3.secret-access-key: SECRET-12", "s3.secret-access-key: ***"},
	{"YAML indented, rest of line", "catalog:\n  password: SEC RET-13\n  uri: http://h", "catalog:\n  password: ***\n  uri: http://h"},
	{"YAML list", "- token: SECRET-14", "- token: ***"},
	{"YAML quoted", `  password: "SECRET-15"`, `  password: "***"`},
	{"YAML mapping stays", "auth:\n  user: x", "auth:\n  user: x"},
	{"inline colon: one word", "failed: token: SECRET-16 rejected", "failed: token: *** rejected"},
	{"Authorization header", "Authorization: Bearer SECRET-17", "Authorization: ***"},
	{"Authorization header in a dump", "GET / HTTP/1.1\r\nAuthorization: Basic U0VDUkVULTE4\r\nHost: h", "GET / HTTP/1.1\r\nAuthorization: ***\r\nHost: h"},
	{"Cookie header", "Cookie: session=SECRET-19", "Cookie: ***"},
	{"inline scheme", "header token: Bearer SECRET-20, next", "header token: ***, next"},
	{"Bearer alone", "sent Bearer SECRET-21 to the server", "sent Bearer *** to the server"},
	{"bearer in prose stays", "a bearer token file", "a bearer token file"},
	{"nkey seed", "seed SUACSSL3UAHUDXKFSNVUZRF5UHPMWZ6BFDTJ7M6USDXIEDNPPQYYYCU3VY in creds", "seed *** in creds"},
	{"JWT", "jwt eyJ0eXAiOiJKV1QiLCJhbGciOiJlZDI1NTE5LW5rZXkifQ.eyJqdGkiOiJTRUNSRVQifQ.c2lnbmF0dXJl end", "jwt *** end"},
	{"PEM private key", "-----BEGIN EC PRIVATE KEY-----\nMHcCAQEEISECRET22\n-----END EC PRIVATE KEY-----", "-----BEGIN EC PRIVATE KEY-----***-----END EC PRIVATE KEY-----"},
	{"PEM certificate stays", "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----", "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----"},
	{"URL userinfo", "nats://user:SECRET-23@host:4222", "nats://***@host:4222"},
	{"query", "http://h/v1?warehouse=w&token=SECRET-24", "http://h/v1?warehouse=w&token=***"},
	{"nested pair", `password=\password="SECRET-25"`, `password=***`},
	{"nested pair after a colon", `failed: token: password="SECRET-26" next`, `failed: token: *** next`},
	// Nothing to hide.
	{"host:port", "dial tcp 127.0.0.1:4222: refused", "dial tcp 127.0.0.1:4222: refused"},
	{"time", "at 12:30:45 key_count=3", "at 12:30:45 key_count=***"},
	{"comparison", "token == nil", "token == nil"},
	{"partition", "category=b/day=2026-01-01", "category=b/day=2026-01-01"},
}

func TestStringShapes(t *testing.T) {
	for _, tt := range secretShapes {
		t.Run(tt.name, func(t *testing.T) {
			got := String(tt.in)
			if got != tt.want {
				t.Errorf("String(%q)\n got %q\nwant %q", tt.in, got, tt.want)
			}
			if again := String(got); again != got {
				t.Errorf("not idempotent: String(%q) = %q", got, again)
			}
			if strings.Contains(got, "SECRET") || strings.Contains(got, "SEC RET") {
				t.Errorf("secret left in %q", got)
			}
		})
	}
}

// TestShapesEverywhere puts every shape in an error, a log record (as the
// message, a string, an error, a map of each kind, a struct) and checks
// none survives.
func TestShapesEverywhere(t *testing.T) {
	type props map[string]string // as iceberg.Properties
	type config struct {
		URI   string `json:"uri"`
		Token string `json:"token"`
		Note  string `json:"note"`
	}
	for _, tt := range secretShapes {
		if !strings.Contains(tt.in, "SECRET") && !strings.Contains(tt.in, "SEC RET") {
			continue
		}
		t.Run(tt.name, func(t *testing.T) {
			if got := Error(fmt.Errorf("wrapped: %w", errors.New(tt.in))).Error(); strings.Contains(got, "SECRET") {
				t.Errorf("Error: %q", got)
			}
			for _, h := range []func(*bytes.Buffer) slog.Handler{
				func(b *bytes.Buffer) slog.Handler { return slog.NewJSONHandler(b, nil) },
				func(b *bytes.Buffer) slog.Handler { return slog.NewTextHandler(b, nil) },
			} {
				var buf bytes.Buffer
				log := slog.New(Handler(h(&buf)))
				log.Info(tt.in, "s", tt.in, "err", errors.New(tt.in),
					"named_map", props{"note": tt.in, "s3.secret-access-key": "SECRET-MAP"},
					"any_map", map[string]any{"nested": map[string]any{"v": tt.in, "token": 42}, "list": []any{tt.in}},
					"struct", config{URI: "nats://u:SECRET-URI@h", Token: "SECRET-FIELD", Note: tt.in},
					"ptr", &config{Note: tt.in})
				if out := buf.String(); strings.Contains(out, "SECRET") || strings.Contains(out, "SEC RET") {
					t.Errorf("log line keeps a secret: %s", out)
				}
			}
		})
	}
}

func TestHandlerKeepsValues(t *testing.T) {
	var buf bytes.Buffer
	log := slog.New(Handler(slog.NewJSONHandler(&buf, nil)))
	log.Info("m", "counts", map[string]int64{"files": 3}, "props", map[string]string{"region": "eu"},
		"list", []int{1, 2}, "struct", struct {
			A int `json:"a"`
		}{7})
	var got map[string]any
	if err := json.Unmarshal(buf.Bytes(), &got); err != nil {
		t.Fatalf("%v: %s", err, buf.String())
	}
	if fmt.Sprint(got["counts"]) != "map[files:3]" || fmt.Sprint(got["props"]) != "map[region:eu]" ||
		fmt.Sprint(got["list"]) != "[1 2]" || got["struct"].(map[string]any)["a"] != 7.0 {
		t.Errorf("values changed: %s", buf.String())
	}
}

// TestHandlerCycle: a map that holds itself is cut, not followed forever.
func TestHandlerCycle(t *testing.T) {
	m := map[string]any{}
	m["self"] = m
	var buf bytes.Buffer
	slog.New(Handler(slog.NewJSONHandler(&buf, nil))).Info("m", "m", m)
	if !strings.Contains(buf.String(), Mask) {
		t.Errorf("cycle not cut: %s", buf.String())
	}
}

// TestRedacttestShapes: every shape the other packages' tests plant is
// masked alone, all together, and in an error.
func TestRedacttestShapes(t *testing.T) {
	for _, s := range redacttest.Shapes {
		redacttest.AssertMasked(t, s.Name, String(s.Text))
		redacttest.AssertMasked(t, s.Name+" in an error", Error(errors.New("x: "+s.Text+": y")).Error())
	}
	redacttest.AssertMasked(t, "all", String(redacttest.All()))
}
