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
)

// LimitError reports a document over one of the limits: which one, the
// limit and the value found. Found is a lower bound for a file read with
// [ReadFile], which stops reading one byte past MaxFileSize.
type LimitError struct {
	Limit string // "file size" or "nesting depth"
	Max   int
	Found int
	// Line is where the depth first went over the limit (1-based; 0 for
	// the file size).
	Line int
}

func (e *LimitError) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("thresholds: nesting depth %d (first over the limit at line %d) exceeds the limit of %d levels",
			e.Found, e.Line, e.Max)
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

// checkLimits refuses a document over MaxFileSize or MaxDepth before any
// YAML parser sees it.
func checkLimits(data []byte) error {
	if len(data) > MaxFileSize {
		return &LimitError{Limit: "file size", Max: MaxFileSize, Found: len(data)}
	}
	if depth, line := nestingDepth(data, MaxDepth); depth > MaxDepth {
		return &LimitError{Limit: "nesting depth", Max: MaxDepth, Found: depth, Line: line}
	}
	return nil
}

// nestingDepth estimates the deepest nesting of collections in a YAML
// stream in one linear pass, without building anything, and returns it with
// the line where it first exceeded limit (0 if it never did).
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
// parser cost needs.
func nestingDepth(data []byte, limit int) (maxDepth, overAt int) {
	var (
		stack       []opened // the open block collections
		flow        int      // open '[' and '{'
		quote       byte     // the quote of a quoted scalar open across lines
		blockScalar = -2     // > -2: inside a block scalar whose parent is at this column
		line        int
		atToken     bool // the next non-blank byte starts a node
		tokenCol    int  // column where the current plain or quoted token began
		deeper      = func(d int) {
			if d > maxDepth {
				maxDepth = d
			}
			if d > limit && overAt == 0 {
				overAt = line
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
			case (c == '[' || c == '{') && (atToken || flow > 0):
				flow++
				deeper(len(stack) + flow)
				atToken = true
			case (c == ']' || c == '}') && flow > 0:
				flow--
				atToken = false
			case c == ',' && flow > 0:
				atToken = true
			case (c == '-' || c == '?') && atToken && flow == 0 && (next == ' ' || next == '\t'):
				stack = append(stack, opened{col: i})
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
			default:
				if atToken {
					atToken, tokenCol = false, i
				}
			}
		}
	}
	return maxDepth, overAt
}

// opened is a block collection nestingDepth has seen open: at which column,
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
