package docs

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// designCitation is how code cites the design page: its path, "#" and an
// anchor.
var designCitation = regexp.MustCompile(`docs/design\.md#([A-Za-z0-9_-]+)`)

// TestCodeCitesDesignAnchors checks that every anchor of design.md a Go
// file cites is there.
func TestCodeCitesDesignAnchors(t *testing.T) {
	design, err := readPage("design.md")
	if err != nil {
		t.Fatal(err)
	}
	cited := 0
	goLines(t, func(rel string, n int, line string) {
		for _, m := range designCitation.FindAllStringSubmatch(line, -1) {
			cited++
			if !design.anchors[m[1]] {
				t.Errorf("%s:%d: cites docs/design.md#%s, which design.md does not have", rel, n, m[1])
			}
		}
	})
	if cited == 0 {
		t.Error("no Go file cites docs/design.md: is the pattern right?")
	}
}

// TestCodeCitesNoOutsideFile checks that no Go file cites the design notes
// that used to live outside the repository (their old file name, or the
// sibling directory that held them): docs/design.md is the one place now.
// The patterns are built so this file does not match itself.
func TestCodeCitesNoOutsideFile(t *testing.T) {
	outside := []string{"DESIGN" + ".md", ".." + "/shared"}
	goLines(t, func(rel string, n int, line string) {
		for _, s := range outside {
			if strings.Contains(line, s) {
				t.Errorf("%s:%d: cites %q, outside the repository; cite docs/design.md#<anchor>", rel, n, s)
			}
		}
	})
}

// goLines calls f for every line of every Go file of the repository but the
// recorded outputs under bench/*/results/.
func goLines(t *testing.T, f func(rel string, n int, line string)) {
	t.Helper()
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if path != root && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata") {
				return filepath.SkipDir
			}
			if rel, _ := filepath.Rel(root, path); isBenchResults(rel) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") {
			return nil
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		for i, line := range strings.Split(string(data), "\n") {
			f(rel, i+1, line)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// isBenchResults reports whether rel (relative to the repository root) is a
// benchmark's recorded results directory, bench/<name>/results.
func isBenchResults(rel string) bool {
	parts := strings.Split(filepath.ToSlash(rel), "/")
	return len(parts) == 3 && parts[0] == "bench" && parts[2] == "results"
}
