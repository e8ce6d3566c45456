package docs

import (
	"io/fs"
	"path/filepath"
	"strings"
	"testing"
)

// maxTopLevelFiles is how many non-test Go files a library package may hold
// at its top level: past that a package is no longer read in one sitting,
// and it splits along its seams into internal leaves (issue 40; the
// executor had grown back to 32).
const maxTopLevelFiles = 20

// TestLibraryPackagesStaySmall checks every library package's top level
// against maxTopLevelFiles. The commands and harnesses (cmd/, bench/,
// interop/) are programs, not libraries, and are left out.
func TestLibraryPackagesStaySmall(t *testing.T) {
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	counts := map[string]int{}
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			switch {
			case strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata" || d.Name() == "results":
				return filepath.SkipDir
			case rel == "cmd" || rel == "bench" || rel == "interop":
				return filepath.SkipDir
			}
			return nil
		}
		if strings.HasSuffix(path, ".go") && !strings.HasSuffix(path, "_test.go") {
			counts[filepath.ToSlash(filepath.Dir(rel))]++
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if counts["executor"] == 0 || counts["planner"] == 0 {
		t.Fatalf("found no executor or planner files (%v): is the walk rooted at the repository?", counts)
	}
	for dir, n := range counts {
		if n > maxTopLevelFiles {
			t.Errorf("%s holds %d non-test Go files at its top level, more than %d: split it along its seams", dir, n, maxTopLevelFiles)
		}
	}
}
