package thresholds

import (
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"strings"

	"github.com/goccy/go-yaml"
	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/token"

	"github.com/icereactor/reactor/excerpt"
)

// FieldError reports one invalid field of a thresholds document.
//
// Path is the field's location in the document, e.g. "defaults.cooldown" or
// "tables[1].small_file_ratio" (list indexes are 0-based); it is empty for
// the document root. Value is the offending value (nil when there is none to
// show, e.g. for an unknown field). Reason says what is wrong.
//
// Errors from [Parse], [Load] and [Config.Validate] contain *FieldError values
// wherever a field can be named; use errors.As to get at them (with
// errors.Join'ed validation errors, walk the joined list to see all of them).
type FieldError struct {
	Path   string
	Value  any
	Reason string
}

// Error returns "path: reason, got value" (omitting the parts that are
// empty). The path and the value are cut to excerpt.Max bytes: both come
// from the document, and a key or value may be a megabyte long.
func (e *FieldError) Error() string {
	var b strings.Builder
	if e.Path != "" {
		b.WriteString(excerpt.String(e.Path, excerpt.Max))
		b.WriteString(": ")
	}
	b.WriteString(e.Reason)
	if e.Value != nil {
		b.WriteString(", got ")
		b.WriteString(formatValue(e.Value))
	}
	return b.String()
}

func formatValue(v any) string {
	switch x := v.(type) {
	case string:
		return excerpt.Quote(x)
	case float64:
		return strconv.FormatFloat(x, 'g', -1, 64)
	case fmt.Stringer:
		return excerpt.String(x.String(), excerpt.Max)
	}
	return excerpt.String(fmt.Sprint(v), excerpt.Max)
}

// locatedError is a FieldError found while decoding YAML, with the source
// position appended to its message. It unwraps to both the FieldError and
// the underlying go-yaml error (so yaml.FormatError can still render the
// source snippet).
type locatedError struct {
	field *FieldError
	yaml  error
	pos   *token.Position
}

func (e *locatedError) Error() string {
	if e.pos == nil {
		return e.field.Error()
	}
	return fmt.Sprintf("%s (line %d, column %d)", e.field.Error(), e.pos.Line, e.pos.Column)
}

func (e *locatedError) Unwrap() []error {
	if e.yaml == nil {
		return []error{e.field}
	}
	return []error{e.field, e.yaml}
}

// located attaches n's source position to fe.
func located(fe *FieldError, n ast.Node) error {
	var pos *token.Position
	if tok := n.GetToken(); tok != nil {
		pos = tok.Position
	}
	return &locatedError{field: fe, pos: pos}
}

// wrappedError has its own message but unwraps to err; used to keep go-yaml's
// multi-line error text (with source snippet) out of our one-line messages
// while leaving it reachable for errors.As and yaml.FormatError.
type wrappedError struct {
	msg string
	err error
}

func (e *wrappedError) Error() string { return e.msg }
func (e *wrappedError) Unwrap() error { return e.err }

// decodeError turns an error from go-yaml's decoder into one naming the
// field path where possible. root is the decoded document body, used to map
// the error's token back to a node path.
func decodeError(root ast.Node, err error) error {
	var fe *FieldError
	if errors.As(err, &fe) { // from Size / Duration UnmarshalYAML: already has a path
		return err
	}
	var yerr yaml.Error
	if !errors.As(err, &yerr) {
		return fmt.Errorf("thresholds: decode: %w", excerpt.Error(err))
	}
	tok := yerr.GetToken()
	path := ""
	if n := findByToken(root, tok); n != nil {
		path = nodePath(n)
	}
	var (
		unknown  *yaml.UnknownFieldError
		typeErr  *yaml.TypeError
		overflow *yaml.OverflowError
		nodeType *yaml.UnexpectedNodeTypeError
	)
	switch {
	case errors.As(err, &unknown):
		fe = &FieldError{Path: path, Reason: unknownFieldReason(path, tok)}
	case errors.As(err, &typeErr):
		fe = &FieldError{Path: path, Value: tokenValue(tok), Reason: "must be " + describeType(typeErr.DstType)}
	case errors.As(err, &overflow):
		fe = &FieldError{Path: path, Value: overflow.SrcNum, Reason: "out of range for " + describeType(overflow.DstType)}
	case errors.As(err, &nodeType):
		fe = &FieldError{Path: path, Reason: fmt.Sprintf("must be %s, got %s",
			describeNodeType(nodeType.Expected), describeNodeType(nodeType.Actual))}
	default:
		detail := excerpt.String(yerr.GetMessage(), excerpt.Max)
		msg := "thresholds: " + detail
		if tok != nil && tok.Position != nil {
			msg = fmt.Sprintf("thresholds: line %d, column %d: %s", tok.Position.Line, tok.Position.Column, detail)
		}
		return &wrappedError{msg: msg, err: err}
	}
	var pos *token.Position
	if tok != nil {
		pos = tok.Position
	}
	return &locatedError{field: fe, yaml: err, pos: pos}
}

// syntaxError wraps a go-yaml parser error in a one-line message.
func syntaxError(err error) error {
	var yerr yaml.Error
	if errors.As(err, &yerr) {
		detail := excerpt.String(yerr.GetMessage(), excerpt.Max)
		msg := "thresholds: invalid YAML: " + detail
		if tok := yerr.GetToken(); tok != nil && tok.Position != nil {
			msg = fmt.Sprintf("thresholds: invalid YAML at line %d, column %d: %s", tok.Position.Line, tok.Position.Column, detail)
		}
		return &wrappedError{msg: msg, err: err}
	}
	return fmt.Errorf("thresholds: invalid YAML: %w", excerpt.Error(err))
}

// findByToken returns the first node (in document order) whose token is tok.
func findByToken(root ast.Node, tok *token.Token) ast.Node {
	if root == nil || tok == nil {
		return nil
	}
	f := &tokenFinder{tok: tok}
	ast.Walk(f, root)
	return f.found
}

type tokenFinder struct {
	tok   *token.Token
	found ast.Node
}

func (f *tokenFinder) Visit(n ast.Node) ast.Visitor {
	if f.found != nil || n == nil {
		return nil
	}
	if n.GetToken() == f.tok {
		f.found = n
		return nil
	}
	return f
}

// nodePath converts a go-yaml node path ("$.tables[1].match") to the form
// used in messages ("tables[1].match"); the root is "".
func nodePath(n ast.Node) string {
	p := n.GetPath()
	if p == "$" {
		return ""
	}
	return strings.TrimPrefix(p, "$.")
}

// unwrapNode strips tags (!!str) and anchors (&a) from a value node.
func unwrapNode(n ast.Node) ast.Node {
	for {
		switch x := n.(type) {
		case *ast.TagNode:
			n = x.Value
		case *ast.AnchorNode:
			n = x.Value
		default:
			return n
		}
	}
}

// scalarText is the source text of a scalar node.
func scalarText(n ast.Node) string {
	if tok := n.GetToken(); tok != nil {
		return tok.Value
	}
	return n.String()
}

func tokenValue(tok *token.Token) any {
	if tok == nil {
		return nil
	}
	return tok.Value
}

// nodeTypeError reports a node of the wrong kind for a scalar field.
func nodeTypeError(n ast.Node, want string) error {
	fe := &FieldError{Path: nodePath(n), Reason: "must be " + want}
	switch n.Type() {
	case ast.MappingType, ast.MappingValueType, ast.SequenceType:
		fe.Reason += ", got " + describeNodeType(n.Type())
	default:
		fe.Value = scalarText(n)
	}
	return located(fe, n)
}

func describeNodeType(t ast.NodeType) string {
	switch t {
	case ast.MappingType, ast.MappingValueType, ast.MappingKeyType:
		return "a mapping"
	case ast.SequenceType:
		return "a list"
	case ast.StringType:
		return "a string"
	case ast.IntegerType:
		return "an integer"
	case ast.FloatType, ast.InfinityType, ast.NanType:
		return "a number"
	case ast.BoolType:
		return "a boolean"
	case ast.NullType:
		return "null"
	}
	return "a " + strings.ToLower(t.String())
}

func describeType(t reflect.Type) string {
	if t == nil {
		return "a different type"
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "an integer"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "a boolean"
	case reflect.Slice, reflect.Array:
		return "a list"
	case reflect.Struct, reflect.Map:
		return "a mapping"
	}
	return "a " + t.String()
}

// unknownFieldReason explains an unknown key and suggests the closest valid
// one (or lists them) for the mapping it appeared in.
func unknownFieldReason(path string, tok *token.Token) string {
	var valid []string
	switch {
	case strings.HasPrefix(path, "defaults."):
		valid = yamlFieldNames(reflect.TypeFor[Policy]())
	case strings.HasPrefix(path, "tables["):
		valid = yamlFieldNames(reflect.TypeFor[Override]())
	default:
		valid = yamlFieldNames(reflect.TypeFor[Config]())
	}
	name := ""
	if tok != nil {
		name = tok.Value
	}
	if len(name) > 64 {
		// No field is that long, and the distance costs len(name) per
		// candidate: list them instead.
		return "unknown field (valid fields: " + strings.Join(valid, ", ") + ")"
	}
	best, bestDist := "", -1
	for _, v := range valid {
		if d := editDistance(name, v); bestDist < 0 || d < bestDist {
			best, bestDist = v, d
		}
	}
	if best != "" && bestDist <= max(2, len(best)/4) {
		return fmt.Sprintf("unknown field (did you mean %q?)", best)
	}
	return "unknown field (valid fields: " + strings.Join(valid, ", ") + ")"
}

// yamlFieldNames lists the YAML keys of struct type t, descending into
// inline fields.
func yamlFieldNames(t reflect.Type) []string {
	var names []string
	eachYAMLField(t, func(name string, _ reflect.Type) { names = append(names, name) })
	return names
}

// eachYAMLField calls fn with the YAML key and type of every field of
// struct type t, in order, descending into inline fields.
func eachYAMLField(t reflect.Type, fn func(name string, typ reflect.Type)) {
	for i := range t.NumField() {
		f := t.Field(i)
		tag := f.Tag.Get("yaml")
		name, opts, _ := strings.Cut(tag, ",")
		if tag == "-" || !f.IsExported() {
			continue
		}
		if strings.Contains(","+opts+",", ",inline,") && f.Type.Kind() == reflect.Struct {
			eachYAMLField(f.Type, fn)
			continue
		}
		if name == "" {
			name = strings.ToLower(f.Name)
		}
		fn(name, f.Type)
	}
}

// editDistance is the Levenshtein distance between a and b (bytes).
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
