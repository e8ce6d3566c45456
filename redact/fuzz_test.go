package redact

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// FuzzString: String never panics, keeps valid UTF-8 valid, and a second
// pass never brings back what the first masked (it may mask more: a value
// glued to a mask in hostile text, such as token: ="" x, is masked again).
func FuzzString(f *testing.F) {
	for _, tt := range secretShapes {
		f.Add(tt.in)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got := String(s)
		if utf8.ValidString(s) && !utf8.ValidString(got) {
			t.Fatalf("String(%q) = %q: valid UTF-8 in, invalid out", s, got)
		}
		if again := String(got); strings.Count(again, Mask) < strings.Count(got, Mask) {
			t.Fatalf("a second pass unmasks:\n in    %q\n once  %q\n twice %q", s, got, again)
		}
	})
}

// contextShapes are secret shapes with %s where the secret goes.
var contextShapes = []string{
	"password=%s",
	`password="%s"`,
	`password='%s'`,
	`{"token":"%s"}`,
	`{"s3.secret-access-key": "%s"}`,
	"\ns3.secret-access-key: %s",
	"\nAuthorization: Bearer %s",
	" Bearer %s",
	"nats://user:%s@host:4222",
	"http://h/?token=%s",
}

// FuzzSecretInContext puts a secret in one of contextShapes between a
// fuzzed prefix and suffix: whatever surrounds it, the secret must not
// survive. The secret is Z and letters or digits (no Z); neither prefix
// nor suffix holds a Z, so any Z in the output is the secret's.
func FuzzSecretInContext(f *testing.F) {
	for i := range contextShapes {
		f.Add("error: ", "k3y9", ", then", uint8(i))
		f.Add("", "abc", "", uint8(i))
		f.Add(`{"a":"b",`, "Q1", `}`, uint8(i))
		f.Add(`password=\`, "Q1", ` x`, uint8(i))
		f.Add(`msg "`, "Q1", `"`, uint8(i))
	}
	f.Fuzz(func(t *testing.T, prefix, tail, suffix string, shape uint8) {
		if strings.ContainsAny(prefix+suffix, "Zz") || tail == "" {
			return
		}
		for _, c := range []byte(tail) {
			if !('a' <= c && c <= 'y' || 'A' <= c && c <= 'Y' || '0' <= c && c <= '9') {
				return
			}
		}
		secret := "Z" + tail
		in := prefix + strings.Replace(contextShapes[int(shape)%len(contextShapes)], "%s", secret, 1) + suffix
		if got := String(in); strings.Contains(got, "Z") {
			t.Fatalf("secret %q survives in\n in  %q\n out %q", secret, in, got)
		}
	})
}
