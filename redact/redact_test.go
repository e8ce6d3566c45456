package redact

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"
)

func TestString(t *testing.T) {
	tests := []struct{ in, want string }{
		{"", ""},
		{"nats://127.0.0.1:4222", "nats://127.0.0.1:4222"},
		{"nats://user:PASS@host:4222", "nats://***@host:4222"},
		{"nats://T0KEN@host:4222", "nats://***@host:4222"},
		{"nats://u:P1@a:4222,nats://u:P2@b:4222", "nats://***@a:4222,nats://***@b:4222"},
		{"tls://u:p%40ss@host", "tls://***@host"},
		{"http://rest:8181/v1?warehouse=wh&token=T0KEN", "http://rest:8181/v1?warehouse=wh&token=***"},
		{"http://rest:8181/v1?Access_Key=AK&X-Amz-Signature=SIG&x=1", "http://rest:8181/v1?Access_Key=***&X-Amz-Signature=***&x=1"},
		{"file:/data/cat.db?_auth&_auth_user=admin&_auth_pass=S3CRET&cache=shared", "file:/data/cat.db?_auth&_auth_user=***&_auth_pass=***&cache=shared"},
		{"postgres://u:DBPW@db/cat?sslmode=disable&password=QPW", "postgres://***@db/cat?sslmode=disable&password=***"},
		{"host=db user=reactor password=PW dbname=cat", "host=db user=reactor password=*** dbname=cat"},
		{"reactor:PW@tcp(db:3306)/cat", "reactor:***@tcp(db:3306)/cat"},
		{"P%61ssword=X", "P%61ssword=***"},
		// Quoted in an error message.
		{`connect to NATS at nats://u:PASS@host:4222: nats: no servers available`, `connect to NATS at nats://***@host:4222: nats: no servers available`},
		{`Get "http://u:pw@rest:8181/v1/config?credential=C": dial tcp: refused`, `Get "http://***@rest:8181/v1/config?credential=***": dial tcp: refused`},
		{`parse "nats://u:PA SS@host": invalid character`, `parse "nats://***@host": invalid character`},
		// Nothing to hide.
		{"s3://bucket/warehouse/db.db/t/data/a=1/f.parquet", "s3://bucket/warehouse/db.db/t/data/a=1/f.parquet"},
		{"an email a@b.c in text", "an email a@b.c in text"},
	}
	for _, tt := range tests {
		if got := String(tt.in); got != tt.want {
			t.Errorf("String(%q)\n got %q\nwant %q", tt.in, got, tt.want)
		}
	}
}

func TestSecretName(t *testing.T) {
	for _, n := range []string{"password", "PASSWORD", "_auth_pass", "passwd", "pwd", "token", "s3.secret-access-key",
		"s3.access-key-id", "rest.credential", "Authorization", "X-Amz-Signature", "nkey_seed", "jwt"} {
		if !SecretName(n) {
			t.Errorf("SecretName(%q) = false", n)
		}
	}
	for _, n := range []string{"warehouse", "sslmode", "uri", "type", "sql.driver", "cache", "host"} {
		if SecretName(n) {
			t.Errorf("SecretName(%q) = true", n)
		}
	}
}

func TestError(t *testing.T) {
	sentinel := errors.New("boom")
	err := fmt.Errorf("open nats://u:PW@h: %w", sentinel)
	got := Error(err)
	if strings.Contains(got.Error(), "PW") || !errors.Is(got, sentinel) {
		t.Errorf("Error = %v (Is = %v)", got, errors.Is(got, sentinel))
	}
	plain := errors.New("nothing secret")
	if Error(plain) != plain || Error(nil) != nil {
		t.Error("an error without secrets is returned as is")
	}
}

type stringer struct{}

func (stringer) String() string { return "nats://u:STRINGER@h" }

func TestHandler(t *testing.T) {
	var buf bytes.Buffer
	log := slog.New(Handler(slog.NewJSONHandler(&buf, nil))).With("base", "nats://u:WITH@h")
	log.Info("connect nats://u:MSG@h failed",
		"url", "nats://u:ATTR@h",
		"error", errors.New("dial http://h/?token=ERR"),
		"who", stringer{},
		"list", []string{"nats://u:LIST@h"},
		"props", map[string]string{"s3.secret-access-key": "MAPKEY", "uri": "postgres://u:MAPURI@db"},
		"password", "KEYED",
		slog.Group("g", "dsn", "host=db password=GROUP"),
		"n", 3)
	out := buf.String()
	for _, secret := range []string{"WITH", "MSG", "ATTR", "ERR", "STRINGER", "LIST", "MAPKEY", "MAPURI", "KEYED", "GROUP"} {
		if strings.Contains(out, secret) {
			t.Errorf("log line contains %s: %s", secret, out)
		}
	}
	if !strings.Contains(out, `"n":3`) || !strings.Contains(out, "nats://***@h") {
		t.Errorf("log line lost its non-secret content: %s", out)
	}
	if Handler(Handler(slog.NewJSONHandler(&buf, nil))) == nil {
		t.Fatal("nil handler")
	}
}
