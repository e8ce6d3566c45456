package sortorder

import (
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/icereactor/reactor/excerpt"
)

// ErrInvalid is wrapped by every error Parse, FromTable and Bind return
// for an order that cannot be used, so callers can tell a bad configuration
// from an I/O failure with errors.Is.
var ErrInvalid = errors.New("invalid sort order")

// Order is a sort order in Spark's syntax: a linear order of columns, or a
// z-order.
type Order struct {
	ZOrder bool
	Fields []Field // for a z-order: 2..4 columns, directions unused
}

// Field is one column of an Order.
type Field struct {
	Column     string // top-level column name as written (backticks removed)
	Descending bool
	NullsFirst bool // Spark/Iceberg default: ASC -> NULLS FIRST, DESC -> NULLS LAST
}

// The number of columns a z-order takes: one column is a linear sort, and
// beyond four each column gets too few of the key's leading bits to
// cluster by (Spark's limit is the same in practice).
const (
	minZOrderColumns = 2
	maxZOrderColumns = 4
)

// parseError is a syntax error in a sort order: it quotes the input and
// says where, so a message in a log or a config check stands on its own.
// Every piece of input it quotes is cut to excerpt.Max bytes: the order
// comes from a ConfigMap anyone with edit rights can fill with a megabyte.
type parseError struct {
	input string
	off   int
	msg   string
}

func (e *parseError) Error() string {
	return fmt.Sprintf("%s %s: %s (at offset %d)", ErrInvalid, excerpt.Quote(e.input), e.msg, e.off)
}

func (e *parseError) Unwrap() error { return ErrInvalid }

// Parse parses Spark's sort_order syntax: "customer_id ASC NULLS LAST,
// order_ts DESC", "a", "`weird col` desc nulls first", or "zorder(c1, c2[,
// c3, c4])". Keywords are case-insensitive and whitespace between tokens is
// optional; in a backtick-quoted identifier a doubled backtick stands for
// one.
// Nested fields (a.b) and transforms (bucket(4, x)) are refused, as is a
// column named twice. In a z-order every Field has Descending false and
// NullsFirst true (nulls normalise to 0, the first position).
func Parse(s string) (Order, error) {
	p := parser{s: s}
	p.skipSpace()
	if p.eof() {
		return Order{}, p.errorf(p.pos, "sort order is empty")
	}
	var (
		o   Order
		err error
	)
	if p.atZOrder() {
		o, err = p.zorder()
	} else {
		o, err = p.linear()
	}
	if err != nil {
		return Order{}, err
	}
	seen := make(map[string]bool, len(o.Fields))
	for i, f := range o.Fields {
		// A repeated column is harmless in a linear order but is nearly
		// always a typo for another column, so it is refused while the
		// text is at hand rather than silently ignored.
		if seen[f.Column] {
			return Order{}, p.errorf(p.starts[i], "column %s appears more than once", excerpt.String(quoteIdent(f.Column), excerpt.Max))
		}
		seen[f.Column] = true
	}
	return o, nil
}

// String renders the canonical Spark form, which Parse reads back to an
// equal Order: every linear field with its direction and null order
// spelled out ("a ASC NULLS FIRST, b DESC NULLS LAST"), or "zorder(a, b)";
// names that are not plain identifiers, or are keywords, in backticks.
func (o Order) String() string {
	var b strings.Builder
	if o.ZOrder {
		b.WriteString("zorder(")
		for i, f := range o.Fields {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString(quoteIdent(f.Column))
		}
		b.WriteString(")")
		return b.String()
	}
	for i, f := range o.Fields {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(quoteIdent(f.Column))
		if f.Descending {
			b.WriteString(" DESC")
		} else {
			b.WriteString(" ASC")
		}
		if f.NullsFirst {
			b.WriteString(" NULLS FIRST")
		} else {
			b.WriteString(" NULLS LAST")
		}
	}
	return b.String()
}

// keywords are quoted by String even though Parse would read most of them
// as column names in column position: a reader should not have to know.
var keywords = [...]string{"asc", "desc", "nulls", "first", "last", "zorder"}

func quoteIdent(name string) string {
	plain := name != "" && !isDigit(name[0])
	for i := 0; i < len(name) && plain; i++ {
		plain = isIdentByte(name[i])
	}
	for _, k := range keywords {
		if strings.EqualFold(name, k) {
			plain = false
		}
	}
	if plain {
		return name
	}
	return "`" + strings.ReplaceAll(name, "`", "``") + "`"
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// isIdentByte is Spark's unquoted identifier alphabet (its lexer's
// LETTER | DIGIT | '_', ASCII only).
func isIdentByte(c byte) bool {
	return c == '_' || isDigit(c) || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

type parser struct {
	s      string
	pos    int
	starts []int // offset of each field's column name, for messages
}

func (p *parser) errorf(off int, format string, args ...any) error {
	return &parseError{input: p.s, off: max(off, 0), msg: fmt.Sprintf(format, args...)}
}

func (p *parser) eof() bool { return p.pos >= len(p.s) }

func (p *parser) peek() byte {
	if p.eof() {
		return 0
	}
	return p.s[p.pos]
}

func (p *parser) skipSpace() {
	for !p.eof() && isSpace(p.s[p.pos]) {
		p.pos++
	}
}

// word reads a bare identifier or keyword at the current position ("" if
// there is none).
func (p *parser) word() string {
	start := p.pos
	for !p.eof() && isIdentByte(p.s[p.pos]) {
		p.pos++
	}
	return p.s[start:p.pos]
}

// atZOrder reports whether the input starts with an unquoted zorder
// followed by "(" — only then is it the z-order form; a column that
// happens to be named zorder is still a column.
func (p *parser) atZOrder() bool {
	save := p.pos
	defer func() { p.pos = save }()
	if !strings.EqualFold(p.word(), "zorder") {
		return false
	}
	p.skipSpace()
	return p.peek() == '('
}

// token describes the text at the current position for an error message:
// the next word, quoted identifier or character.
func (p *parser) token() string {
	if p.eof() {
		return "end of input"
	}
	save := p.pos
	defer func() { p.pos = save }()
	if w := p.word(); w != "" {
		return excerpt.Quote(w)
	}
	if p.peek() == '`' {
		if _, err := p.ident(); err == nil {
			return excerpt.Quote(p.s[save:p.pos])
		}
		// An unterminated quote ran to the end of the input: describe
		// the backtick itself, not what follows the end.
		p.pos = save
	}
	r, _ := utf8.DecodeRuneInString(p.s[p.pos:])
	return excerpt.Quote(string(r))
}

// ident reads a column name: a bare identifier or a backtick-quoted one.
func (p *parser) ident() (string, error) {
	start := p.pos
	switch c := p.peek(); {
	case p.eof():
		return "", p.errorf(start, "missing column name at end of input")
	case c == '`':
		var b strings.Builder
		p.pos++
		for {
			if p.eof() {
				return "", p.errorf(start, "unterminated backtick-quoted column %s", excerpt.String(p.s[start:], excerpt.Max))
			}
			c := p.s[p.pos]
			p.pos++
			if c != '`' {
				b.WriteByte(c)
				continue
			}
			if p.peek() == '`' { // `` inside quotes is a literal backtick
				b.WriteByte('`')
				p.pos++
				continue
			}
			break
		}
		if b.Len() == 0 {
			return "", p.errorf(start, "empty column name ``")
		}
		return b.String(), nil
	case isIdentByte(c):
		return p.word(), nil
	case c == ',':
		return "", p.errorf(start, "empty column before ','")
	case c >= 0x80:
		return "", p.errorf(start, "unexpected character %s where a column name was expected (quote names with other characters in backticks)", p.token())
	default:
		return "", p.errorf(start, "unexpected %s where a column name was expected", p.token())
	}
}

// column reads a column name and refuses what would make it something
// other than a plain top-level column: a dotted path or a call.
func (p *parser) column() (string, int, error) {
	start := p.pos
	name, err := p.ident()
	if err != nil {
		return "", start, err
	}
	p.skipSpace()
	switch p.peek() {
	case '.':
		// Read the rest of the path so the message shows all of it.
		for p.peek() == '.' {
			p.pos++
			p.skipSpace()
			if _, err := p.ident(); err != nil {
				break
			}
			p.skipSpace()
		}
		return "", start, p.errorf(start, "nested field %s is not supported: sort orders take top-level columns only (quote a name containing dots in backticks)", excerpt.Quote(strings.TrimSpace(p.s[start:p.pos])))
	case '(':
		end := p.closingParen(p.pos)
		if strings.EqualFold(name, "zorder") {
			return "", start, p.errorf(start, "%s must be the whole sort order, not one of its terms", excerpt.Quote(p.s[start:end]))
		}
		return "", start, p.errorf(start, "transform %s is not supported: sort orders take plain columns (identity), not bucket, truncate, years, months, days, hours or other functions", excerpt.Quote(p.s[start:end]))
	}
	return name, start, nil
}

// closingParen is the offset just past the parenthesis matching the one at
// open, or the end of input if it is unbalanced.
func (p *parser) closingParen(open int) int {
	depth := 0
	for i := open; i < len(p.s); i++ {
		switch p.s[i] {
		case '(':
			depth++
		case ')':
			depth--
			if depth == 0 {
				return i + 1
			}
		}
	}
	return len(p.s)
}

func (p *parser) linear() (Order, error) {
	var o Order
	for {
		p.skipSpace()
		if p.eof() {
			// Only reachable after a comma: Parse refuses empty input.
			return Order{}, p.errorf(p.pos, "trailing comma")
		}
		name, start, err := p.column()
		if err != nil {
			return Order{}, err
		}
		f := Field{Column: name, NullsFirst: true}
		if err := p.modifiers(&f, start); err != nil {
			return Order{}, err
		}
		o.Fields = append(o.Fields, f)
		p.starts = append(p.starts, start)
		p.skipSpace()
		if p.eof() {
			return o, nil
		}
		if p.peek() != ',' {
			return Order{}, p.errorf(p.pos, "unexpected %s after %s (terms are separated by commas)", p.token(), excerpt.Quote(strings.TrimSpace(p.s[start:p.pos])))
		}
		p.pos++
	}
}

// modifiers reads the optional ASC|DESC and NULLS FIRST|LAST after a
// column, applying Spark's default null order when none is given.
func (p *parser) modifiers(f *Field, start int) error {
	nullsGiven := false
	p.skipSpace()
	at := p.pos
	w := p.word()
	switch strings.ToUpper(w) {
	case "":
		return nil
	case "ASC":
	case "DESC":
		f.Descending = true
	case "NULLS":
		p.pos = at // read again below as the null order
	default:
		p.pos = at
		return p.errorf(at, "unknown keyword %s after column %s (expected ASC, DESC, NULLS FIRST, NULLS LAST, or a comma before the next column)", excerpt.Quote(w), excerpt.String(quoteIdent(f.Column), excerpt.Max))
	}
	p.skipSpace()
	at = p.pos
	w = p.word()
	switch strings.ToUpper(w) {
	case "":
	case "NULLS":
		p.skipSpace()
		nat := p.pos
		switch n := p.word(); strings.ToUpper(n) {
		case "FIRST":
			f.NullsFirst, nullsGiven = true, true
		case "LAST":
			f.NullsFirst, nullsGiven = false, true
		case "":
			return p.errorf(nat, "NULLS must be followed by FIRST or LAST, got %s", p.token())
		default:
			return p.errorf(nat, "unknown keyword %s after NULLS (expected FIRST or LAST)", excerpt.Quote(n))
		}
	default:
		p.pos = at
		return p.errorf(at, "unexpected %s after %s (expected NULLS FIRST, NULLS LAST or a comma)", excerpt.Quote(w), excerpt.Quote(strings.TrimSpace(p.s[start:at])))
	}
	if !nullsGiven {
		f.NullsFirst = !f.Descending
	}
	return nil
}

func (p *parser) zorder() (Order, error) {
	start := p.pos
	p.word() // zorder
	p.skipSpace()
	p.pos++ // '(' (atZOrder checked it)
	o := Order{ZOrder: true}
	p.skipSpace()
	if p.peek() != ')' {
		for {
			p.skipSpace()
			if p.peek() == ')' {
				return Order{}, p.errorf(p.pos, "trailing comma in zorder(...)")
			}
			name, colStart, err := p.column()
			if err != nil {
				return Order{}, err
			}
			p.skipSpace()
			if isIdentByte(p.peek()) {
				at := p.pos
				w := p.word()
				return Order{}, p.errorf(at, "zorder columns take no direction or null order: %s after %s", excerpt.Quote(w), excerpt.String(strings.TrimSpace(p.s[colStart:at]), excerpt.Max))
			}
			o.Fields = append(o.Fields, Field{Column: name, NullsFirst: true})
			p.starts = append(p.starts, colStart)
			if p.peek() == ',' {
				p.pos++
				continue
			}
			if p.peek() == ')' {
				break
			}
			if p.eof() {
				return Order{}, p.errorf(start, "missing ')' closing %s", excerpt.String(strings.TrimSpace(p.s[start:]), excerpt.Max))
			}
			return Order{}, p.errorf(p.pos, "unexpected %s in zorder(...)", p.token())
		}
	}
	p.pos++ // ')'
	if n := len(o.Fields); n < minZOrderColumns || n > maxZOrderColumns {
		return Order{}, p.errorf(start, "zorder needs %d to %d columns, got %d", minZOrderColumns, maxZOrderColumns, n)
	}
	p.skipSpace()
	if !p.eof() {
		return Order{}, p.errorf(p.pos, "unexpected %s after %s (a z-order is the whole sort order)", p.token(), excerpt.String(strings.TrimSpace(p.s[start:p.pos]), excerpt.Max))
	}
	return o, nil
}
