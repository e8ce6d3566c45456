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

// goLines calls f for every line of every Go file of the repository.
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
