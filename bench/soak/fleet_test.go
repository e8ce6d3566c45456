package main

import (
	"bufio"
	"io"
	"strings"
	"testing"
	"time"
)

func TestParseFleet(t *testing.T) {
	cfg, err := parseConfig([]string{"-fleet", "-tables", "50", "-out", t.TempDir()}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if !cfg.fleet || cfg.tables != 50 || cfg.rate != 0.1 || cfg.duration != 10*time.Minute || cfg.interval != time.Minute {
		t.Errorf("-fleet -tables 50: %+v", cfg)
	}
	cfg, err = parseConfig([]string{"-fleet", "-out", t.TempDir()}, io.Discard)
	if err != nil || cfg.tables != 1000 {
		t.Errorf("-fleet: %d tables, %v", cfg.tables, err)
	}
	for _, args := range [][]string{{"-tables", "10001"}, {"-fleet", "-tables", "0"}} {
		if _, err := parseConfig(append(args, "-out", t.TempDir()), io.Discard); err == nil || !strings.Contains(err.Error(), "-tables must be between 1 and 10000") {
			t.Errorf("%v: %v", args, err)
		}
	}
}

func TestParseCatalogCalls(t *testing.T) {
	text := `# HELP reactor_catalog_calls_total Calls made to the catalog by kind.
# TYPE reactor_catalog_calls_total counter
reactor_catalog_calls_total{call="commit"} 12
reactor_catalog_calls_total{call="load"} 3.5e+03
reactor_catalog_calls_total_other{call="load"} 9
reactor_catalog_reachable 1
`
	got, err := parseCatalogCalls(bufio.NewScanner(strings.NewReader(text)))
	if err != nil || len(got) != 2 || got["commit"] != 12 || got["load"] != 3500 {
		t.Errorf("got %v, %v", got, err)
	}
	if _, err := parseCatalogCalls(bufio.NewScanner(strings.NewReader(`reactor_catalog_calls_total{call="load"} x`))); err == nil {
		t.Error("a value that is not a number was read")
	}
}
