package thresholds

import (
	"bytes"
	"fmt"
	"io"
	"os"
)

// Limits on a thresholds document, checked before it is parsed. go-yaml's
// cost grows with the square of the nesting depth (measured: a 60 KB file of
// 30,000 nested levels took 1.5 GB of memory, 200 KB took 15 GB), and a
// reload must never be able to take the process down.
const (
	// MaxFileSize is the largest thresholds file accepted: what one
	// Kubernetes ConfigMap can hold (1 MiB). A real document is a few KiB.
	MaxFileSize = 1 << 20
	// MaxDepth is the deepest nesting of mappings and lists accepted. A
	// thresholds document needs three levels (document, tables, one
	// override); the rest is headroom for flow style and anchors.
	MaxDepth = 32
	// MaxNodes bounds the scalars and collections in a document. go-yaml
	// holds about 1 KB per node while decoding, so a 1 MiB document of
	// short values would cost 300-500 MB; 100,000 nodes is some 1,200
	// overrides with every field set.
	MaxNodes = 100_000
)

// LimitError reports a document over one of the limits: which one, the
// limit and the value found.
type LimitError struct {
	Limit string // "file size", "nesting depth" or "nodes"
	Max   int
	Found int
	// Line is where the depth first went over the limit (1-based; 0 for
	// the other limits).
	Line int
}

func (e *LimitError) Error() string {
	switch e.Limit {
	case "nesting depth":
		return fmt.Sprintf("thresholds: nesting depth %d (first over the limit at line %d) exceeds the limit of %d levels",
			e.Found, e.Line, e.Max)
	case "nodes":
		return fmt.Sprintf("thresholds: the document has %d values, lists and mappings, more than the limit of %d", e.Found, e.Max)
	}
	return fmt.Sprintf("thresholds: file size %d bytes exceeds the limit of %d bytes (%s, what a ConfigMap holds)",
		e.Found, e.Max, Size(e.Max))
}

// ReadFile reads a thresholds file without reading more than MaxFileSize+1
// bytes of it: a file over the limit is a *LimitError, whatever its size.
func ReadFile(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxFileSize+1))
	if err != nil {
		return nil, err
	}
	if len(data) > MaxFileSize {
		found := len(data)
		if st, err := f.Stat(); err == nil && st.Size() > int64(found) {
			found = int(min(st.Size(), int64(^uint(0)>>1)))
		}
		return nil, &LimitError{Limit: "file size", Max: MaxFileSize, Found: found}
	}
	return data, nil
}

// checkLimits refuses a document over MaxFileSize, MaxDepth or MaxNodes
// before any YAML parser sees it.
func checkLimits(data []byte) error {
	if len(data) > MaxFileSize {
		return &LimitError{Limit: "file size", Max: MaxFileSize, Found: len(data)}
	}
	sh := measure(data, MaxDepth)
	if sh.depth > MaxDepth {
		return &LimitError{Limit: "nesting depth", Max: MaxDepth, Found: sh.depth, Line: sh.overAt}
	}
	if sh.nodes > MaxNodes {
		return &LimitError{Limit: "nodes", Max: MaxNodes, Found: sh.nodes}
	}
	return nil
}

// shape is what measure finds: the deepest nesting, the line where it
// first went over the limit (0 if it never did), and the number of nodes
// (scalars, aliases and collections).
type shape struct {
	depth, overAt, nodes int
}

// measure estimates a YAML stream's shape in one linear pass, without
// building anything.
//
// It counts what opens a collection: '[' and '{' (flow style, across
// lines), and in block style a "- " or "? " entry or a "key:" at an
// indentation deeper than the enclosing block's, several of them on one
// line counting one level each ("- - - x" is three). Quoted scalars,
// comments, block scalars (| and >) and the text of plain scalars open
// nothing. The estimate may exceed the real depth by a level where a value
// looks like a key ("a: b: c") and fall short of it where a single-pair
// mapping sits inside a flow sequence ("[a: [b: 1]]" is four levels, two
// counted): it stays within a factor of two, which is all a bound on
// parser cost needs. Nodes are counted where they start: a scalar, a quote,
// an alias, a block scalar, a '[' or '{', a "- " or "? " entry.
func measure(data []byte, limit int) (sh shape) {
	var (
		stack       []opened // the open block collections
		flow        int      // open '[' and '{'
		quote       byte     // the quote of a quoted scalar open across lines
		blockScalar = -2     // > -2: inside a block scalar whose parent is at this column
		line        int
		atToken     bool // the next non-blank byte starts a node
		tokenCol    int  // column where the current plain or quoted token began
		deeper      = func(d int) {
			sh.depth = max(sh.depth, d)
			if d > limit && sh.overAt == 0 {
				sh.overAt = line
			}
		}
	)
	for len(data) > 0 {
		line++
		var text []byte
		if i := bytes.IndexByte(data, '\n'); i >= 0 {
			text, data = data[:i], data[i+1:]
		} else {
			text, data = data, nil
		}
		if n := len(text); n > 0 && text[n-1] == '\r' {
			text = text[:n-1]
		}
		indent := 0
		for indent < len(text) && text[indent] == ' ' {
			indent++
		}
		blank := indent == len(text) || text[indent] == '#'
		if blockScalar > -2 {
			if blank || indent > blockScalar {
				continue
			}
			blockScalar = -2
		}
		i := 0
		if quote == 0 && flow == 0 {
			if blank {
				continue
			}
			if indent == 0 && (hasMarker(text, "---") || hasMarker(text, "...")) {
				stack = stack[:0]
				i = 3
			} else if indent == 0 && text[0] == '%' {
				continue // a directive
			}
			// A list may sit at its key's own indentation ("tables:\n- a"):
			// an entry there stays inside the key.
			entry := text[indent] == '-' && (indent+1 == len(text) || text[indent+1] == ' ' || text[indent+1] == '\t')
			for len(stack) > 0 {
				top := stack[len(stack)-1]
				if top.col < indent || (top.col == indent && top.key && entry) {
					break
				}
				stack = stack[:len(stack)-1]
			}
			atToken = true
		}
		if i < indent {
			i = indent
		}
	scan:
		for ; i < len(text); i++ {
			c := text[i]
			if quote != 0 {
				switch {
				case quote == '"' && c == '\\':
					i++
				case c == quote && quote == '\'' && i+1 < len(text) && text[i+1] == '\'':
					i++
				case c == quote:
					quote = 0
				}
				continue
			}
			next := byte(' ')
			if i+1 < len(text) {
				next = text[i+1]
			}
			switch {
			case c == ' ' || c == '\t':
			case c == '#' && (i == 0 || text[i-1] == ' ' || text[i-1] == '\t'):
				break scan
			case (c == '"' || c == '\'') && atToken:
				quote, atToken, tokenCol = c, false, i
				sh.nodes++
			case (c == '[' || c == '{') && (atToken || flow > 0):
				flow++
				sh.nodes++
				deeper(len(stack) + flow)
				atToken = true
			case (c == ']' || c == '}') && flow > 0:
				flow--
				atToken = false
			case c == ',' && flow > 0:
				atToken = true
			case (c == '-' || c == '?') && atToken && flow == 0 && (next == ' ' || next == '\t'):
				stack = append(stack, opened{col: i})
				sh.nodes++
				deeper(len(stack))
				i++
			case c == ':' && (next == ' ' || next == '\t' || flow > 0):
				if flow == 0 {
					stack = append(stack, opened{col: tokenCol, key: true})
					deeper(len(stack))
				}
				atToken = true
				tokenCol = i + 1
			case (c == '|' || c == '>') && atToken && flow == 0:
				sh.nodes++
				blockScalar = -1
				if len(stack) > 0 {
					blockScalar = stack[len(stack)-1].col
				}
				break scan
			case (c == '&' || c == '!' || c == '*') && atToken:
				// An anchor, tag or alias: skip its name. After an
				// anchor or a tag the node itself follows.
				for i+1 < len(text) && text[i+1] != ' ' && text[i+1] != '\t' && (flow == 0 || !isFlowIndicator(text[i+1])) {
					i++
				}
				atToken = c != '*'
				if c == '*' {
					sh.nodes++
				}
			default:
				if atToken {
					atToken, tokenCol = false, i
					sh.nodes++
				}
			}
		}
	}
	return sh
}

// opened is a block collection measure has seen open: at which column,
// and whether by a key (whose list may share its indentation).
type opened struct {
	col int
	key bool
}

func isFlowIndicator(c byte) bool { return c == ',' || c == '[' || c == ']' || c == '{' || c == '}' }

// hasMarker reports whether text starts with a document marker (--- or ...)
// standing alone or followed by a blank.
func hasMarker(text []byte, marker string) bool {
	if len(text) < 3 || string(text[:3]) != marker {
		return false
	}
	return len(text) == 3 || text[3] == ' ' || text[3] == '\t'
}
