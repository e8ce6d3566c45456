package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The thresholds files that crashed validate-config (and a running
// reactor's reload), and the ones that made it take gigabytes, are
// configuration errors: exit code 2, the reason on stderr, no panic, and a
// short message however large the file.
func TestValidateConfigRefusesHostileFiles(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		name, content, stderr string
	}{
		{"sort order ending in a backquote", "defaults:\n  strategy: sort\n  sort_order: \"a`\"\n", `defaults.sort_order: invalid sort order "a` + "`" + `"`},
		{"tag without a value", "tables: ! \n", "tables: YAML tags are not supported"},
		{"30,000 levels", "namespaces: " + strings.Repeat("[", 30_000) + strings.Repeat("]", 30_000),
			"nesting depth 30001 (first over the limit at line 1) exceeds the limit of 32 levels"},
		{"100,000 levels in 200 KB", "namespaces:\n" + strings.Repeat("- ", 100_000) + "x\n", "nesting depth 100001 (first over the limit at line 2)"},
		{"larger than a ConfigMap", strings.Repeat("# 1 MiB is what a ConfigMap holds\n", 40_000),
			"file size 1360000 bytes exceeds the limit of 1048576 bytes"},
		{"too many values", "namespaces: [" + strings.Repeat("db,", 200_000) + "db]\n", "more than the limit of 100000"},
		{"a megabyte key", "defaults:\n  " + strings.Repeat("k", 1<<19) + ": 1\n", "unknown field (valid fields:"},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			file := filepath.Join(dir, "t"+string(rune('a'+i))+".yaml")
			if err := os.WriteFile(file, []byte(tt.content), 0o644); err != nil {
				t.Fatal(err)
			}
			var out, errOut bytes.Buffer
			code := execute(context.Background(), []string{"validate-config", file}, &out, &errOut)
			if code != 2 || !strings.Contains(errOut.String(), tt.stderr) || strings.Contains(errOut.String(), "panic") {
				t.Errorf("exit %d (want 2), stderr (want %q):\n%.2000s", code, tt.stderr, errOut.String())
			}
			if n := errOut.Len(); n > 8<<10 {
				t.Errorf("stderr is %d bytes", n)
			}
		})
	}
}

// validate-config prints the spark section, and where the token comes
// from, never a token: a token in the endpoint is refused with the value
// masked.
func TestValidateConfigSpark(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "t.yaml")
	run := func(content string, args ...string) (int, string, string) {
		if err := os.WriteFile(file, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		var out, errOut bytes.Buffer
		code := execute(context.Background(), append(append([]string{"validate-config"}, args...), file), &out, &errOut)
		return code, out.String(), errOut.String()
	}
	code, out, _ := run("spark: {endpoint: 'sc://spark:15002/;user_id=r', token_file: /run/token, rules: [{match: 'db.*', kinds: [compact], min_input_bytes: 1TiB}]}\n")
	for _, want := range []string{"spark: on; endpoint sc://spark:15002/;user_id=r, token from file /run/token", `rules[0]: tables "db.*", compact, input >= 1TiB`} {
		if code != 0 || !strings.Contains(out, want) {
			t.Errorf("exit %d, output lacks %q:\n%s", code, want, out)
		}
	}
	if _, out, _ := run(""); !strings.Contains(out, "spark: off") {
		t.Errorf("no spark section: %s", out)
	}
	code, out, errOut := run("spark: {endpoint: 'sc://spark:15002/;token=hunter2', rules: [{}]}\n")
	if code != 2 || !strings.Contains(errOut, "must not carry a token") || strings.Contains(out+errOut, "hunter2") {
		t.Errorf("exit %d, stdout %q, stderr %q", code, out, errOut)
	}
}
