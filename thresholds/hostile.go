package thresholds

import (
	"errors"
	"fmt"
	"reflect"
	"runtime/debug"

	"github.com/goccy/go-yaml/ast"

	"github.com/icereactor/reactor/excerpt"
)

// What a hostile or broken document may cost beyond the limits checked
// before parsing (see limits.go): every error quotes at most excerpt.Max
// bytes of any value or path, and at most MaxReportedErrors problems are
// listed, so a rejected 1 MiB document is still a short log line.

// MaxReportedErrors bounds how many problems [Config.Validate] lists; the
// rest are counted in a last line.
const MaxReportedErrors = 20

// InternalError is a panic recovered inside [Parse]: a bug in reactor or in
// the YAML library, triggered by the document. The document is rejected;
// Stack is for the log line that reports it.
type InternalError struct {
	Value any
	Stack []byte
}

func newInternalError(v any) *InternalError {
	return &InternalError{Value: v, Stack: debug.Stack()}
}

func (e *InternalError) Error() string {
	return "thresholds: internal error while parsing (a bug in reactor or its YAML library; the document is rejected): " +
		excerpt.String(fmt.Sprint(e.Value), excerpt.Max)
}

// joinBounded is errors.Join of the first MaxReportedErrors of errs, and a
// line counting the others.
func joinBounded(errs []error) error {
	if len(errs) > MaxReportedErrors {
		more := len(errs) - MaxReportedErrors
		errs = append(errs[:MaxReportedErrors:MaxReportedErrors], fmt.Errorf("... and %d more problems", more))
	}
	return errors.Join(errs...)
}

// checkTags refuses every YAML tag ("!!str 5", "!custom x", a bare "!"):
// go-yaml's decoder dereferences nil on a tag without a value and on a
// tagged scalar where a list is expected ("tables: ! " crashed reactor),
// and a thresholds document has no use for tags: quoting makes a string.
func checkTags(root ast.Node) error {
	v := &tagFinder{}
	ast.Walk(v, root)
	return v.err
}

type tagFinder struct{ err error }

func (f *tagFinder) Visit(n ast.Node) ast.Visitor {
	if f.err != nil || n == nil {
		return nil
	}
	tag, ok := n.(*ast.TagNode)
	if !ok {
		return f
	}
	name := ""
	if tag.Start != nil {
		name = tag.Start.Value
	}
	f.err = located(&FieldError{Path: nodePath(n), Value: name,
		Reason: "YAML tags are not supported in a thresholds document (write the value plainly; quote it for a string)"}, n)
	return nil
}

// checkUnknownFields reports the first key, in document order, that names
// no field of the type at its place (Config at the root). go-yaml's strict
// mode finds unknown keys too, but reports one picked from a Go map: the
// same file gave different errors from one run to the next. Values behind
// an alias are left to the decoder; the anchor's own place was checked.
func checkUnknownFields(n ast.Node, t reflect.Type) error {
	n = unwrapNode(n)
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.Slice:
		if seq, ok := n.(*ast.SequenceNode); ok {
			for _, v := range seq.Values {
				if err := checkUnknownFields(v, t.Elem()); err != nil {
					return err
				}
			}
		}
		return nil
	case reflect.Struct:
	default:
		return nil
	}
	var pairs []*ast.MappingValueNode
	switch m := n.(type) {
	case *ast.MappingNode:
		pairs = m.Values
	case *ast.MappingValueNode:
		pairs = []*ast.MappingValueNode{m}
	default:
		return nil
	}
	fields := structFields(t)
	for _, mv := range pairs {
		if mv == nil || mv.Key == nil || mv.Key.IsMergeKey() {
			continue
		}
		var key ast.Node = mv.Key
		if mk, ok := key.(*ast.MappingKeyNode); ok && mk.Value != nil {
			key = mk.Value
		}
		tok := key.GetToken()
		if tok == nil {
			continue
		}
		ft, ok := fields[tok.Value]
		if !ok {
			path := nodePath(key)
			return &locatedError{field: &FieldError{Path: path, Reason: unknownFieldReason(path, tok)}, pos: tok.Position}
		}
		if err := checkUnknownFields(mv.Value, ft); err != nil {
			return err
		}
	}
	return nil
}

// structFields maps the YAML keys of struct type t to their field types.
func structFields(t reflect.Type) map[string]reflect.Type {
	out := map[string]reflect.Type{}
	eachYAMLField(t, func(name string, typ reflect.Type) { out[name] = typ })
	return out
}
