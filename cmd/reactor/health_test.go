package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/iceberg-go/table"

	"github.com/icereactor/reactor/embedded"
	"github.com/icereactor/reactor/streamwriter"
)

func TestHealthCommand(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	cat, err := embedded.OpenCatalog(ctx, filepath.Join(dir, "catalog"))
	if err != nil {
		t.Fatal(err)
	}
	ident := table.Identifier{"db", "t"}
	if _, err := streamwriter.CreateTable(ctx, cat, ident, nil); err != nil {
		t.Fatal(err)
	}
	w := streamwriter.New(cat, ident, nil)
	for range 3 {
		if _, err := w.Commit(ctx, "a", 5); err != nil {
			t.Fatal(err)
		}
	}
	strict := filepath.Join(dir, "strict.yaml")
	if err := os.WriteFile(strict, []byte("defaults: {health_max_snapshots: 2}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		args   []string
		code   int
		stdout string
		stderr string
	}{
		{"healthy", []string{"health", "--data-dir", dir, "db.t"}, 0, "HEALTHY", ""},
		{"report", []string{"health", "--data-dir", dir, "db.t"}, 0, "average file size", ""},
		{"unhealthy", []string{"health", "--data-dir", dir, "--thresholds", strict, "db.t"}, 1,
			"problem: 3 snapshots (limit 2)", "table is unhealthy"},
		{"json", []string{"health", "--data-dir", dir, "--json", "db.t"}, 0, `"data_files": 3`, ""},
		{"unknown table", []string{"health", "--data-dir", dir, "db.nosuch"}, 2, "", "table db.nosuch not found"},
		{"no table", []string{"health", "--data-dir", dir}, 2, "", "missing TABLE"},
		// Every command parses TABLE one way (package tablename): an
		// empty level is refused, not looked up as namespace {"db", ""}.
		{"empty level", []string{"health", "--data-dir", dir, "db..t"}, 2, "", "want one TABLE as namespace.table"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out, errOut bytes.Buffer
			code := execute(ctx, tt.args, &out, &errOut)
			if code != tt.code || !strings.Contains(out.String(), tt.stdout) || !strings.Contains(errOut.String(), tt.stderr) {
				t.Errorf("exit %d (want %d)\nstdout:\n%s\nstderr:\n%s", code, tt.code, out.String(), errOut.String())
			}
		})
	}
}
