package main

import (
	"errors"
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

// TestHadoopObjectStoreFlags: a hadoop catalog on an object store is a
// usage error for a command that writes, even with allow-unsafe-commits;
// plan, health and dry runs (read-only) and --accept-hadoop-object-store-risk
// let it through.
func TestHadoopObjectStoreFlags(t *testing.T) {
	config := func(readOnly bool, args ...string) error {
		fs := flag.NewFlagSet("t", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		c := addCatalogFlags(fs, "")
		base := []string{"--catalog-type", "hadoop", "--warehouse", "s3://lake/wh", "--catalog-prop", "allow-unsafe-commits=true"}
		if err := fs.Parse(append(base, args...)); err != nil {
			t.Fatal(err)
		}
		_, err := c.config(readOnly)
		return err
	}
	var uerr *usageError
	if err := config(false); !errors.As(err, &uerr) || !strings.Contains(err.Error(), "hadoop catalog on an object store refused") {
		t.Fatalf("writing: err = %v, want the refusal as a usage error", err)
	}
	if err := config(true); err != nil {
		t.Fatalf("read-only: %v", err)
	}
	if err := config(false, "--accept-hadoop-object-store-risk"); err != nil {
		t.Fatalf("with the risk accepted: %v", err)
	}
}
