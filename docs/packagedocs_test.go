package docs

import (
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// goFileName is a Go file named in a package's doc comment: a bare name
// (compact_plan.go), a path (internal/commit/staged.go) or a glob
// (e2e_*_test.go); never the tail of a longer word (the "test.go" of
// "_test.go files").
var goFileName = regexp.MustCompile(`(?:^|[^A-Za-z0-9_*./-])([A-Za-z0-9*][A-Za-z0-9_*./-]*\.go)\b`)

// TestPackageDocsNameTheirFiles keeps every package's doc comment a map of
// the package: each Go file it names exists (relative to the package, or to
// the repository for a path), and each non-test Go file of the package is
// named in it. doc.go, which holds the map, need not name itself, and a
// package of one file has no map to keep.
func TestPackageDocsNameTheirFiles(t *testing.T) {
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	pkgs := 0
	err = filepath.WalkDir(root, func(dir string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			return nil
		}
		if dir != root && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata" || d.Name() == "node_modules") {
			return filepath.SkipDir
		}
		files, doc, err := packageDoc(dir)
		if err != nil || len(files) == 0 {
			return err
		}
		pkgs++
		rel, _ := filepath.Rel(root, dir)
		checkPackageDoc(t, root, dir, filepath.ToSlash(rel), files, doc)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if pkgs < 40 {
		t.Fatalf("found %d Go packages under %s", pkgs, root)
	}
}

// packageDoc returns the non-test Go files of dir and the doc comments of
// their package clauses, joined.
func packageDoc(dir string) (files []string, doc string, err error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, "", err
	}
	var docs []string
	fset := token.NewFileSet()
	for _, e := range entries {
		name := e.Name()
		if e.IsDir() || !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			continue
		}
		files = append(files, name)
		f, err := parser.ParseFile(fset, filepath.Join(dir, name), nil, parser.PackageClauseOnly|parser.ParseComments)
		if err != nil {
			return nil, "", err
		}
		if f.Doc != nil {
			docs = append(docs, f.Doc.Text())
		}
	}
	return files, strings.Join(docs, "\n"), nil
}

func checkPackageDoc(t *testing.T, root, dir, rel string, files []string, doc string) {
	t.Helper()
	if strings.TrimSpace(doc) == "" {
		t.Errorf("%s: no package doc comment", rel)
		return
	}
	named := map[string]bool{}
	for _, m := range goFileName.FindAllStringSubmatch(doc, -1) {
		name := strings.TrimPrefix(m[1], "./")
		candidates := []string{filepath.Join(dir, name)}
		if strings.Contains(name, "/") {
			candidates = append(candidates, filepath.Join(root, name))
		}
		found := false
		for _, c := range candidates {
			if m, _ := filepath.Glob(c); len(m) > 0 {
				found = true
				for _, path := range m {
					if filepath.Dir(path) == dir {
						named[filepath.Base(path)] = true
					}
				}
			}
		}
		if !found {
			t.Errorf("%s: the package doc names %s, which does not exist", rel, name)
		}
	}
	if len(files) == 1 {
		return
	}
	for _, f := range files {
		if f != "doc.go" && !named[f] {
			t.Errorf("%s: %s is not named in the package doc (go doc ./%s)", rel, f, rel)
		}
	}
}

// TestLayoutNamesEveryDirectory keeps the one layout list of the repository
// (docs/development.md#layout) current: its entries (a line's first column,
// before two spaces; a comma-separated list where several share a line)
// exist, and they name every Go package and every directory at the top of
// the repository (but the hidden ones and those .gitignore lists), itself or
// a directory under it.
func TestLayoutNamesEveryDirectory(t *testing.T) {
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	page, err := os.ReadFile(filepath.Join(root, "docs", "development.md"))
	if err != nil {
		t.Fatal(err)
	}
	text := string(page)
	start := strings.Index(text, `<a id="layout"></a>`)
	if start < 0 {
		t.Fatal(`docs/development.md has no <a id="layout"></a>`)
	}
	block := text[start:]
	open := strings.Index(block, "```\n")
	if open < 0 {
		t.Fatal("docs/development.md#layout has no code block")
	}
	block = block[open+4:]
	block = block[:strings.Index(block, "```")]
	listed, listedTop := map[string]bool{}, map[string]bool{}
	for _, line := range strings.Split(block, "\n") {
		first, _, ok := strings.Cut(line, "  ")
		if !ok {
			continue // a caption
		}
		for _, entry := range strings.Split(first, ",") {
			entry = strings.TrimSpace(entry)
			if _, err := os.Stat(filepath.Join(root, entry)); err != nil {
				t.Errorf("docs/development.md#layout lists %s: %v", entry, err)
			}
			listed[strings.TrimSuffix(entry, "/")] = true
			top, _, _ := strings.Cut(entry, "/")
			listedTop[top] = true
		}
	}

	ignored := map[string]bool{}
	if data, err := os.ReadFile(filepath.Join(root, ".gitignore")); err == nil {
		for _, line := range strings.Split(string(data), "\n") {
			ignored[strings.Trim(strings.TrimSpace(line), "/")] = true
		}
	}
	entries, err := os.ReadDir(root)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.IsDir() && !strings.HasPrefix(e.Name(), ".") && !ignored[e.Name()] && !listedTop[e.Name()] {
			t.Errorf("docs/development.md#layout does not list the directory %s/", e.Name())
		}
	}
	err = filepath.WalkDir(root, func(dir string, d fs.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return err
		}
		if dir != root && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata" || d.Name() == "node_modules") {
			return filepath.SkipDir
		}
		goFiles, _ := filepath.Glob(filepath.Join(dir, "*.go"))
		rel, _ := filepath.Rel(root, dir)
		if len(goFiles) > 0 && !listed[filepath.ToSlash(rel)] {
			t.Errorf("docs/development.md#layout does not list the package %s/", filepath.ToSlash(rel))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
