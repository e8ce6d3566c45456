package main

import (
	"flag"
	"io"
	"strings"
	"testing"

	"github.com/icereactor/reactor/objectio"
)

// TestReadConcurrencyFlag: --read-concurrency reaches the S3 FileIO as a
// catalog property, an explicit --catalog-prop of the same key wins, and
// a value out of range is a usage error naming the flag.
func TestReadConcurrencyFlag(t *testing.T) {
	parse := func(args ...string) (map[string]string, error) {
		fs := flag.NewFlagSet("t", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		c := addCatalogFlags(fs, "")
		if err := fs.Parse(append([]string{"--catalog-type", "sql", "--catalog-uri", "file:///x.db"}, args...)); err != nil {
			t.Fatal(err)
		}
		return c.properties()
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{nil, "16"},
		{[]string{"--read-concurrency", "32"}, "32"},
		{[]string{"--read-concurrency", "32", "--catalog-prop", objectio.ReadConcurrencyProperty + "=8"}, "8"},
	} {
		props, err := parse(tc.args...)
		if err != nil {
			t.Fatalf("%v: %v", tc.args, err)
		}
		if got := props[objectio.ReadConcurrencyProperty]; got != tc.want {
			t.Fatalf("%v: %s = %q, want %q", tc.args, objectio.ReadConcurrencyProperty, got, tc.want)
		}
	}
	for _, bad := range []string{"0", "257"} {
		if _, err := parse("--read-concurrency", bad); err == nil || !strings.Contains(err.Error(), "--read-concurrency") {
			t.Fatalf("--read-concurrency %s: err %v, want a usage error naming the flag", bad, err)
		}
	}
}
