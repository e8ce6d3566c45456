package planner

import (
	"go/ast"
	"go/parser"
	"go/token"
	"slices"
	"testing"
)

// Every JobKind constant declared in job.go is in Kinds, once: the list
// the thresholds, the demo summary and the Spark routing go by.
func TestKindsListsEveryKind(t *testing.T) {
	f, err := parser.ParseFile(token.NewFileSet(), "job.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	var declared []JobKind
	for _, d := range f.Decls {
		gd, ok := d.(*ast.GenDecl)
		if !ok || gd.Tok != token.CONST {
			continue
		}
		for _, s := range gd.Specs {
			vs := s.(*ast.ValueSpec)
			if id, ok := vs.Type.(*ast.Ident); !ok || id.Name != "JobKind" {
				continue
			}
			for _, v := range vs.Values {
				lit := v.(*ast.BasicLit)
				declared = append(declared, JobKind(lit.Value[1:len(lit.Value)-1]))
			}
		}
	}
	if len(declared) == 0 {
		t.Fatal("no JobKind constant found in job.go")
	}
	kinds := Kinds()
	for _, k := range declared {
		if n := len(slices.DeleteFunc(slices.Clone(kinds), func(x JobKind) bool { return x != k })); n != 1 {
			t.Errorf("kind %q is in Kinds %d times, want once", k, n)
		}
	}
	if len(kinds) != len(declared) {
		t.Errorf("Kinds has %d kinds, job.go declares %d", len(kinds), len(declared))
	}
}
