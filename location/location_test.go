package location

import (
	"errors"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestCanonicalAccepts(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{"s3://lake/wh/t/data/x.parquet", "s3://lake/wh/t/data/x.parquet"},
		{"s3a://lake/wh/t/data/x.parquet", "s3://lake/wh/t/data/x.parquet"},
		{"S3N://lake/wh/t/data/x.parquet", "s3://lake/wh/t/data/x.parquet"},
		{"gs://lake/wh/x", "gs://lake/wh/x"},
		{"gs://lake.example.com/wh/x", "gs://lake.example.com/wh/x"},
		// Azure: ADLS Gen2 and Blob schemes are one IO, spelt abfs.
		{"abfss://lake@acct.dfs.core.windows.net/wh/x", "abfs://lake@acct.dfs.core.windows.net/wh/x"},
		{"wasbs://lake@acct.blob.core.windows.net/wh/x", "abfs://lake@acct.blob.core.windows.net/wh/x"},
		{"ABFS://lake@devstoreaccount1.dfs.core.windows.net/wh/x", "abfs://lake@devstoreaccount1.dfs.core.windows.net/wh/x"},
		// Object keys are literal: a percent escape or a plus is a character.
		{"s3://lake/wh/t/data/c=it%27s/x.parquet", "s3://lake/wh/t/data/c=it%27s/x.parquet"},
		{"s3://lake/wh/t/data/c=a+b/x.parquet", "s3://lake/wh/t/data/c=a+b/x.parquet"},
		{"s3://lake/wh/t/data/c=Ü/X.parquet", "s3://lake/wh/t/data/c=Ü/X.parquet"},
		// Local files: the bare path iceberg-go's local IO opens literally.
		{"file:///tmp/wh/t/data/x.parquet", "/tmp/wh/t/data/x.parquet"},
		{"file:/tmp/wh/t/data/x.parquet", "/tmp/wh/t/data/x.parquet"},
		{"file://localhost/tmp/wh/x", "/tmp/wh/x"},
		{"FILE:///tmp/wh/x", "/tmp/wh/x"},
		{"/tmp/wh/t/data/x.parquet", "/tmp/wh/t/data/x.parquet"},
		// A file URI is decoded as iceberg-go's local IO decodes it; a
		// bare path is literal.
		{"file:///tmp/wh/c=it%27s/x", "/tmp/wh/c=it's/x"},
		{"file:///tmp/wh/c=it%2527s/x", "/tmp/wh/c=it%27s/x"},
		{"/tmp/wh/c=it%27s/x", "/tmp/wh/c=it%27s/x"},
	} {
		got, err := Canonical(tt.in)
		if err != nil || got != tt.want {
			t.Errorf("Canonical(%q) = %q, %v; want %q", tt.in, got, err, tt.want)
		}
	}
}

func TestCanonicalRefuses(t *testing.T) {
	for _, tt := range []struct{ in, reason string }{
		{"s3://lake/wh/t/data//x.parquet", "empty path segment"},
		{"s3://lake//wh/t/data/x.parquet", "empty path segment"},
		{"s3://lake/wh/t/data/x.parquet/", "empty path segment"},
		{"s3://lake/wh/t/./data/x.parquet", `"." path segment`},
		{"s3://lake/wh/t/data/../data/x.parquet", `".." path segment`},
		{"s3://lake/wh/t/data\\x.parquet", "backslash"},
		{"s3://lake/wh/t/data/x.parquet?versionId=1", "'?'"},
		{"s3://lake/wh/t/data/x.parquet#1", "'#'"},
		{"s3://lake?x/wh", "query or fragment"},
		{"s3://Lake/wh/x", "lower case"},
		{"s3://la%6be/wh/x", "plain bucket name"},
		{"s3://user@lake/wh/x", "plain bucket name"},
		{"gs://user@lake/wh/x", "plain bucket name"},
		{"gs://lake:443/wh/x", "plain bucket name"},
		{"gs://la%6be/wh/x", "plain bucket name"},
		{"abfss://acct.dfs.core.windows.net/wh/x", "container@account.host"},
		{"abfss://@acct.dfs.core.windows.net/wh/x", "container@account.host"},
		{"abfss://lake@/wh/x", "container@account.host"},
		{"abfss://lake@acct@x.dfs.core.windows.net/wh/x", "container@account.host"},
		{"wasbs://la%6be@acct.blob.core.windows.net/wh/x", "container@account.host"},
		{"abfss://Lake@acct.dfs.core.windows.net/wh/x", "lower case"},
		{"s3://lake", "no key"},
		{"s3://lake/", "no key"},
		{"s3:///wh/x", "no bucket"},
		{"s3:lake/wh/x", "no authority"},
		{"s3://lake/wh/x\x00.parquet", "control character"},
		{"s3://lake/wh/x\xff.parquet", "invalid UTF-8"},
		{"file:///tmp/wh//x", "empty path segment"},
		{"file:///tmp/wh/%2E%2E/x", `".." path segment`},
		{"file:///tmp/wh/a%2F%2Fb", "empty path segment"},
		{"file:///tmp/wh/x?y", "query or fragment"},
		{"file:///tmp/wh/x%3Fy", "'?'"},
		{"file://otherhost/tmp/wh/x", "authority"},
		{"file:relative/x", "relative"},
		{"file:///tmp/wh/%zz", "not a valid file URI"},
		{"/tmp/wh/./x", `"." path segment`},
		{"relative/x", "no scheme"},
		{"", "no scheme"},
	} {
		got, err := Canonical(tt.in)
		if !errors.Is(err, ErrNotCanonical) || !strings.Contains(err.Error(), tt.reason) {
			t.Errorf("Canonical(%q) = %q, %v; want ErrNotCanonical mentioning %q", tt.in, got, err, tt.reason)
		}
	}
}

func TestCanonicalQuotesBoundedly(t *testing.T) {
	_, err := Canonical("s3://lake/" + strings.Repeat("a/", 1<<20) + "/x")
	if err == nil || len(err.Error()) > 1024 {
		t.Fatalf("error of %d bytes: %.200v", len(err.Error()), err)
	}
}

// Every spelling a store or an iceberg-go IO may resolve to one object has
// the identity of that object: Java's file:/ against iceberg-go's file:///
// and the bare path its listing yields, percent escapes kept literally in a
// file name against their decoded form (commit 589c7b8), scheme aliases,
// doubled slashes, dot segments, trailing slashes, case, '+' for a space,
// backslashes, Unicode normalisation.
func TestIdentitiesMeet(t *testing.T) {
	for _, tt := range []struct{ a, b string }{
		{"file:/tmp/wh/t/data/category=a/f.parquet", "file:///tmp/wh/t/data/category=a/f.parquet"},
		{"file:/tmp/wh/t/data/category=a/f.parquet", "/tmp/wh/t/data/category=a/f.parquet"},
		{"file://localhost/tmp/wh/t/f.parquet", "/tmp/wh/t/f.parquet"},
		{"file:/tmp/wh/t/data/category=it%27s/f.parquet", "file:///tmp/wh/t/data/category=it's/f.parquet"},
		{"file:/tmp/wh/t/data/category=it%27s/f.parquet", "/tmp/wh/t/data/category=it%27s/f.parquet"},
		{"s3a://lake/t/data/x.parquet", "s3://lake/t/data/x.parquet"},
		{"s3n://lake/t/data/x.parquet", "S3://LAKE/t/data/x.parquet"},
		{"s3://lake/t/data/c=%C3%BC/x.parquet", "s3://lake/t/data/c=ü/x.parquet"},
		{"s3://lake/t/data/c=%25C3%25BC/x.parquet", "s3://lake/t/data/c=ü/x.parquet"},
		{"s3://lake/t/data//x.parquet", "s3://lake/t/data/x.parquet"},
		{"s3://lake//t/data/x.parquet", "s3://lake/t/data/x.parquet"},
		{"s3://lake/t/./data/x.parquet", "s3://lake/t/data/x.parquet"},
		{"s3://lake/t/data/sub/../x.parquet", "s3://lake/t/data/x.parquet"},
		{"s3://lake/t/data/x.parquet/", "s3://lake/t/data/x.parquet"},
		{"s3://lake/t/data/%2E%2E/data/x.parquet", "s3://lake/t/data/x.parquet"},
		{"s3://lake/t/data%2Fx.parquet", "s3://lake/t/data/x.parquet"},
		{"s3://lake/T/DATA/X.PARQUET", "s3://lake/t/data/x.parquet"},
		{"s3://lake/t/data/c=a+b/x.parquet", "s3://lake/t/data/c=a b/x.parquet"},
		{"s3://lake/t/data/c=a%20b/x.parquet", "s3://lake/t/data/c=a+b/x.parquet"},
		{`s3://lake/t\data\x.parquet`, "s3://lake/t/data/x.parquet"},
		{"s3://lake/t/data/x.parquet?versionId=3", "s3://lake/t/data/x.parquet"},
		{"s3://lake/t/data/x.parquet.", "s3://lake/t/data/x.parquet"},
		{"s3://lake/t/data/c=e\u0301/x", "s3://lake/t/data/c=\u00e9/x"}, // NFD vs NFC
		{"s3://lake/t/data/ｘ.parquet", "s3://lake/t/data/x.parquet"},    // fullwidth
		{"gs://lake/t/data//x.parquet", "GS://lake/t/data/x.parquet"},
		// One blob through the ADLS Gen2 (dfs) and Blob endpoints, by any
		// of the four Azure schemes.
		{"abfss://lake@acct.dfs.core.windows.net/t/x.parquet", "wasbs://lake@acct.blob.core.windows.net/t/x.parquet"},
		{"abfs://lake@acct.dfs.core.windows.net/t/x.parquet", "wasb://LAKE@ACCT.blob.core.windows.net/t/x.parquet"},
		{"abfss://lake@acct.dfs.core.chinacloudapi.cn/t/x", "wasbs://lake@acct.blob.core.chinacloudapi.cn/t/x"},
	} {
		if a, b := Identity(tt.a), Identity(tt.b); a != b {
			t.Errorf("%q and %q do not meet: %q vs %q", tt.a, tt.b, a, b)
		}
	}
	for _, tt := range []struct{ a, b string }{
		{"file:///tmp/a/x.parquet", "file:///tmp/b/x.parquet"},
		{"s3://lake/t/data/x.parquet", "s3://other/t/data/x.parquet"},
		{"s3://lake/t/data/x.parquet", "gs://lake/t/data/x.parquet"},
		{"s3://lake/t/data/x.parquet", "s3://lake/t/data/y.parquet"},
		{"file:///tmp/t/x", "s3://tmp/t/x"},
		{"gs://lake/t/x", "abfs://lake@acct.dfs.core.windows.net/t/x"},
		{"abfss://lake@acct.dfs.core.windows.net/t/x", "abfss://lake@other.dfs.core.windows.net/t/x"},
		{"abfss://lake@acct.dfs.core.windows.net/t/x", "abfss://pond@acct.dfs.core.windows.net/t/x"},
	} {
		if Identity(tt.a) == Identity(tt.b) {
			t.Errorf("different objects meet: %q and %q both %q", tt.a, tt.b, Identity(tt.a))
		}
	}
}

func TestUnder(t *testing.T) {
	for _, tt := range []struct {
		loc, dir string
		want     bool
	}{
		{"s3://lake/t/data/x", "s3://lake/t/data", true},
		{"s3://lake/t/data/x", "s3://lake/t/data/", true},
		{"s3://lake/t/data", "s3://lake/t/data", false},
		{"s3://lake/t/database/x", "s3://lake/t/data", false},
		{"s3://lake/t/data/x", "", false},
		{"/tmp/t/data/x", "/tmp/t/data", true},
	} {
		if got := Under(tt.loc, tt.dir); got != tt.want {
			t.Errorf("Under(%q, %q) = %v", tt.loc, tt.dir, got)
		}
	}
	if d, err := Dir("s3a://lake/t/"); err != nil || d != "s3://lake/t" {
		t.Errorf("Dir = %q, %v", d, err)
	}
}

// FuzzCanonical: Canonical never panics; what it accepts is clean, stable
// under a second Canonical, and has the identity of the input; its errors
// quote the input boundedly. Identity is total and deterministic.
func FuzzCanonical(f *testing.F) {
	for _, s := range []string{
		"s3://lake/wh/t/data/x.parquet", "s3a://lake/wh//x", "file:///tmp/a%2F..%2Fb", "file:/tmp/x",
		"/tmp/x/../y", "s3://lake/c=%C3%BC/x", "s3://lake/t/x?y#z", "gs://b/k/", "file://localhost/x",
		"s3://LAKE/x", `s3://lake/a\b`, "s3://lake/%252e%252e/x", "s3://lake/x.", "",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		id := Identity(in)
		if id != Identity(in) || !utf8.ValidString(id) {
			t.Fatalf("Identity(%q) not deterministic or not UTF-8: %q", in, id)
		}
		got, err := Canonical(in)
		if err != nil {
			if !errors.Is(err, ErrNotCanonical) || len(err.Error()) > maxQuoted+200 {
				t.Fatalf("Canonical(%q) error %q", in, err)
			}
			return
		}
		again, err := Canonical(got)
		if err != nil || again != got {
			t.Fatalf("Canonical(%q) = %q, which canonicalises to %q, %v", in, got, again, err)
		}
		if Identity(got) != id {
			t.Fatalf("Canonical(%q) = %q has identity %q, the input %q", in, got, Identity(got), id)
		}
		if strings.Contains(got, "//") && !strings.HasPrefix(got, "s3://") && !strings.Contains(got, "://") {
			t.Fatalf("Canonical(%q) = %q keeps a doubled slash", in, got)
		}
	})
}

// BenchmarkIdentity: the per-reference cost of comparing by identity (the
// history walk computes one per data file it reads).
func BenchmarkIdentity(b *testing.B) {
	for _, loc := range []string{
		"s3://lake/warehouse/db.db/events/data/category=a/00000-0-6a0e1c2f-93d1-4c55-8b7e-0f0c8f3f2d11-00001.parquet",
		"file:///tmp/wh/db.db/events/data/category=it%27s/00000-0-6a0e1c2f-93d1-4c55-8b7e-0f0c8f3f2d11-00001.parquet",
	} {
		b.Run(loc[:2], func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				_ = Identity(loc)
			}
		})
	}
}
