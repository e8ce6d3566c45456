package docs

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/icereactor/reactor/jobkind"
)

// kindListOwners are the only directories whose code may spell several job
// kinds: the vocabulary itself, and Spark's procedure names, which map the
// kinds onto another system's words.
var kindListOwners = []string{"jobkind", "sparkcall"}

// TestNoJobKindListOutsideTheVocabulary checks that no non-test Go file
// outside jobkind and sparkcall spells two or more job kinds as string
// literals: a second list is a copy that drifts (metrics, thresholds and the
// planner each held one before issue 40), so code names a kind through
// jobkind. One literal alone is allowed: "compact" is also a subcommand and
// "sort" a thresholds strategy.
func TestNoJobKindListOutsideTheVocabulary(t *testing.T) {
	names := map[string]bool{}
	for _, k := range jobkind.All() {
		names[k.String()] = true
	}
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	checked := 0
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		if d.IsDir() {
			if strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata" || d.Name() == "results" ||
				slices.Contains(kindListOwners, filepath.ToSlash(rel)) || strings.HasSuffix(filepath.ToSlash(rel), "/sparkcall") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		checked++
		imports := map[*ast.BasicLit]bool{}
		for _, spec := range f.Imports {
			imports[spec.Path] = true
		}
		spelled := map[string]bool{}
		ast.Inspect(f, func(n ast.Node) bool {
			lit, ok := n.(*ast.BasicLit)
			if !ok || lit.Kind != token.STRING || imports[lit] {
				return true
			}
			if s, err := strconv.Unquote(lit.Value); err == nil && names[s] {
				spelled[s] = true
			}
			return true
		})
		if len(spelled) >= 2 {
			kinds := slices.Sorted(func(yield func(string) bool) {
				for s := range spelled {
					if !yield(s) {
						return
					}
				}
			})
			t.Errorf("%s spells the job kinds %s as strings: name them through package jobkind (Kind.String, Parse, All)",
				filepath.ToSlash(rel), strings.Join(kinds, ", "))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if checked < 100 {
		t.Errorf("checked %d Go files; is the walk rooted at the repository?", checked)
	}
}
