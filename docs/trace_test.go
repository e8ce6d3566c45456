package docs

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// traceAnchor opens design.md's short trace of one commit event; the
// section runs to the next top-level anchor or heading.
const traceAnchor = `<a id="one-event"></a>`

// maxTraceSteps keeps the trace what a newcomer reads on one screen.
const maxTraceSteps = 12

var (
	traceStep = regexp.MustCompile(`^(\d+)\.\s`)
	// traceCitation is a function named in a code span: pkg.Func,
	// pkg.(*Type).Method or pkg.(Type).Method.
	traceCitation = regexp.MustCompile(`^([a-z][a-z0-9]*)\.(?:\((\*?)([A-Za-z_]\w*)\)\.)?([A-Za-z_]\w*)$`)
)

// TestTraceNamesRealFunctions keeps design.md#one-event true to the code:
// at most maxTraceSteps numbered steps, each naming at least one function,
// and every function it names (in a code span, as pkg.Func or
// pkg.(*Type).Method) declared, in a non-test file of the package, in a
// file the same step (or paragraph) links. A function renamed or moved to
// another file fails here, naming it, instead of leaving the trace stale.
// A code span shaped like pkg.Name whose package the step links no file
// of fails too: the test cannot tell a typo from prose.
func TestTraceNamesRealFunctions(t *testing.T) {
	data, err := os.ReadFile("design.md")
	if err != nil {
		t.Fatal(err)
	}
	blocks, steps, err := traceBlocks(string(data))
	if err != nil {
		t.Fatal(err)
	}
	if steps == 0 {
		t.Fatalf("design.md#one-event has no numbered steps")
	}
	if steps > maxTraceSteps {
		t.Errorf("design.md#one-event has %d numbered steps; a newcomer's trace of one commit event has at most %d", steps, maxTraceSteps)
	}
	pkgs := map[string]*goPackage{}
	cited := 0
	for _, b := range blocks {
		n := checkTraceBlock(t, b, pkgs)
		if n == 0 && b.step > 0 {
			t.Errorf("design.md:%d: step %d names no function (pkg.Func or pkg.(*Type).Method in a code span)", b.line, b.step)
		}
		cited += n
	}
	if cited == 0 {
		t.Error("design.md#one-event names no function: is the pattern right?")
	}
}

// traceBlock is one numbered step of the trace, or a paragraph around
// them (step 0), with the line it starts on.
type traceBlock struct {
	step int
	line int
	text string
}

// traceBlocks cuts the trace section into its paragraphs and steps and
// counts the steps; the steps must be numbered 1, 2, 3...
func traceBlocks(doc string) (blocks []traceBlock, steps int, err error) {
	lines := strings.Split(doc, "\n")
	start := -1
	for i, l := range lines {
		if strings.TrimSpace(l) == traceAnchor {
			start = i
			break
		}
	}
	if start < 0 {
		return nil, 0, fmt.Errorf("design.md has no %s section", traceAnchor)
	}
	var cur *traceBlock
	flush := func() {
		if cur != nil && strings.TrimSpace(cur.text) != "" {
			blocks = append(blocks, *cur)
		}
		cur = nil
	}
	for i := start + 1; i < len(lines); i++ {
		l := lines[i]
		if strings.HasPrefix(l, "#") && i == start+1 {
			continue // the section's own heading
		}
		if strings.HasPrefix(l, "#") || strings.HasPrefix(l, "<a id=") {
			break
		}
		if m := traceStep.FindStringSubmatch(l); m != nil {
			flush()
			steps++
			if m[1] != fmt.Sprint(steps) {
				return nil, 0, fmt.Errorf("design.md:%d: step numbered %s, expected %d", i+1, m[1], steps)
			}
			cur = &traceBlock{step: steps, line: i + 1}
		} else if strings.TrimSpace(l) == "" {
			flush()
			continue
		}
		if cur == nil {
			cur = &traceBlock{line: i + 1}
		}
		cur.text += l + "\n"
	}
	flush()
	return blocks, steps, nil
}

// checkTraceBlock checks the functions one block names against the Go
// files it links and returns how many it names.
func checkTraceBlock(t *testing.T, b traceBlock, pkgs map[string]*goPackage) int {
	t.Helper()
	where := fmt.Sprintf("design.md:%d", b.line)
	if b.step > 0 {
		where += fmt.Sprintf(" (step %d)", b.step)
	}
	// The Go files the block links, by directory.
	linked := map[string]map[string]bool{}
	for _, m := range inlineLink.FindAllStringSubmatch(codeSpan.ReplaceAllString(b.text, ""), -1) {
		target, _, _ := strings.Cut(m[1], "#")
		if !strings.HasSuffix(target, ".go") || strings.Contains(target, "://") {
			continue
		}
		path := filepath.Clean(filepath.FromSlash(target))
		dir := filepath.Dir(path)
		if linked[dir] == nil {
			linked[dir] = map[string]bool{}
		}
		linked[dir][filepath.Base(path)] = true
	}
	n := 0
	for _, span := range codeSpan.FindAllString(b.text, -1) {
		m := traceCitation.FindStringSubmatch(strings.Trim(span, "`"))
		if m == nil {
			continue
		}
		n++
		name, pkgName, star, recv, fn := m[0], m[1], m[2] == "*", m[3], m[4]
		var dirs []string
		for dir := range linked {
			p, err := loadGoPackage(pkgs, dir)
			if err != nil {
				t.Errorf("%s: %v", where, err)
				continue
			}
			if p.name == pkgName {
				dirs = append(dirs, dir)
			}
		}
		if len(dirs) == 0 {
			t.Errorf("%s: names `%s`, but links no Go file of a package %s", where, name, pkgName)
			continue
		}
		found := false
		for _, dir := range dirs {
			file, isStar, ok := pkgs[dir].find(recv, fn)
			if !ok {
				continue
			}
			found = true
			rel := repoPath(filepath.Join(dir, file))
			switch {
			case recv != "" && isStar != star:
				t.Errorf("%s: names `%s`, but %s declares the method on %s", where, name, rel, receiverText(recv, isStar))
			case !linked[dir][file]:
				t.Errorf("%s: names `%s`, declared in %s, which the step does not link", where, name, rel)
			}
		}
		if !found {
			for i := range dirs {
				dirs[i] = repoPath(dirs[i])
			}
			t.Errorf("%s: names `%s`, which package %s (%s) does not declare: renamed or removed? Update design.md#one-event",
				where, name, pkgName, strings.Join(dirs, ", "))
		}
	}
	return n
}

// repoPath is a path relative to docs/ as the repository spells it.
func repoPath(p string) string { return strings.TrimPrefix(filepath.ToSlash(p), "../") }

func receiverText(recv string, star bool) string {
	if star {
		return "(*" + recv + ")"
	}
	return "(" + recv + ")"
}

// goPackage is a package's name and where its non-test files declare
// their functions and methods.
type goPackage struct {
	name string
	// decls maps "Func" or "Type.Method" to its file and, for a method,
	// whether the receiver is a pointer.
	decls map[string]goDecl
}

type goDecl struct {
	file string
	star bool
}

func (p *goPackage) find(recv, fn string) (file string, star, ok bool) {
	key := fn
	if recv != "" {
		key = recv + "." + fn
	}
	d, ok := p.decls[key]
	return d.file, d.star, ok
}

// loadGoPackage parses the non-test Go files of dir (relative to docs/)
// once.
func loadGoPackage(pkgs map[string]*goPackage, dir string) (*goPackage, error) {
	if p, ok := pkgs[dir]; ok {
		return p, nil
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("linked Go package %s: %w", repoPath(dir), err)
	}
	p := &goPackage{decls: map[string]goDecl{}}
	fset := token.NewFileSet()
	for _, e := range entries {
		name := e.Name()
		if e.IsDir() || !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, filepath.Join(dir, name), nil, parser.SkipObjectResolution)
		if err != nil {
			return nil, fmt.Errorf("parse %s: %w", repoPath(filepath.Join(dir, name)), err)
		}
		p.name = f.Name.Name
		for _, d := range f.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if !ok {
				continue
			}
			if fd.Recv == nil || len(fd.Recv.List) == 0 {
				p.decls[fd.Name.Name] = goDecl{file: name}
				continue
			}
			recv, star := receiverType(fd.Recv.List[0].Type)
			p.decls[recv+"."+fd.Name.Name] = goDecl{file: name, star: star}
		}
	}
	pkgs[dir] = p
	return p, nil
}

// receiverType is a method receiver's type name, type parameters dropped,
// and whether it is a pointer.
func receiverType(e ast.Expr) (string, bool) {
	star := false
	if s, ok := e.(*ast.StarExpr); ok {
		star, e = true, s.X
	}
	switch x := e.(type) {
	case *ast.IndexExpr:
		e = x.X
	case *ast.IndexListExpr:
		e = x.X
	}
	if id, ok := e.(*ast.Ident); ok {
		return id.Name, star
	}
	return "", star
}
