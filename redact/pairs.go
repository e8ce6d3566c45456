package redact

import "strings"

// maskPairs masks the value of every pair whose name [SecretName] flags:
//
//	password=x  password="x"  password='x'  password = x     (query strings, DSNs, config)
//	{"token":"x"}  {"s3.secret-access-key": "x"}  'token': 'x' (JSON, dict reprs)
//	s3.secret-access-key: x   (YAML: the rest of the line, when the name starts it)
//	Authorization: Bearer x   (HTTP headers: the rest of the line)
//	token: x                  (in running text: one word)
//
// A quoted value keeps its quotes ("***"), a bare JSON value becomes "***"
// so the JSON stays valid; null, true, false, objects and arrays are left
// (an object's own pairs are looked at one by one).
func maskPairs(s string) string {
	var b strings.Builder
	done := 0 // s[:done] is written to b, or unchanged while b is empty
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '=' && c != ':' {
			continue
		}
		if c == '=' && i+1 < len(s) && s[i+1] == '=' {
			i++ // ==, a comparison
			continue
		}
		p, ok := pairAt(s, done, i)
		if !ok {
			continue
		}
		if b.Len() == 0 {
			b.Grow(len(s))
		}
		b.WriteString(s[done:p.valueStart])
		b.WriteString(p.replacement)
		done = p.valueEnd
		i = p.valueEnd - 1
	}
	if done == 0 {
		return s
	}
	b.WriteString(s[done:])
	return b.String()
}

// pair is the value of a secret pair found at a separator, and what
// replaces it.
type pair struct {
	valueStart, valueEnd int
	replacement          string
}

// pairAt looks at the separator s[sep] ('=' or ':'): the name before it
// (not reaching back before floor) and the value after it.
func pairAt(s string, floor, sep int) (pair, bool) {
	isColon := s[sep] == ':'
	if isColon && sep+1 < len(s) && s[sep+1] == '/' {
		return pair{}, false // a URL's scheme, or a path
	}
	// The name, back from the separator over blanks and a closing quote.
	end := sep
	for end > floor && isBlank(s[end-1]) {
		end--
	}
	spacedBefore := end < sep
	// A quoted name; inside a quoted string (JSON in a JSON string, Go's
	// %q) its quotes are escaped: k backslashes before each.
	nameQuote := ""
	if end > floor && isQuote(s[end-1]) {
		k := 0
		for end-1-k > floor && s[end-2-k] == '\\' {
			k++
		}
		nameQuote = s[end-1-k : end]
		end -= 1 + k
	}
	start := end
	for start > floor && isNameByte(s[start-1]) {
		start--
	}
	if start == end {
		return pair{}, false
	}
	if nameQuote != "" && (start < len(nameQuote) || s[start-len(nameQuote):start] != nameQuote) {
		// No opening quote: a bare name after all. (An opening quote may
		// be the closing one of the value masked before: only names are
		// bounded by floor.)
		nameQuote = ""
	}
	quote := nameQuote != ""
	name := s[start:end]
	if !SecretName(name) {
		return pair{}, false
	}
	// The value, after blanks.
	v := sep + 1
	for v < len(s) && isBlank(s[v]) {
		v++
	}
	spacedAfter := v > sep+1
	valueQuote := quoteAt(s, v)
	if isColon && !quote && !spacedAfter && valueQuote == "" {
		// name:value without a blank is a host:port, a time, a scheme.
		return pair{}, false
	}
	if !isColon && spacedBefore && !spacedAfter {
		return pair{}, false
	}
	if v >= len(s) || s[v] == '\n' || s[v] == '\r' {
		if isColon {
			return pair{}, false // a YAML mapping whose values follow
		}
		return pair{valueStart: v, valueEnd: v, replacement: Mask}, true
	}
	switch c := s[v]; {
	case valueQuote != "":
		open := v + len(valueQuote)
		close := closingQuote(s, open, valueQuote)
		if close < 0 {
			// Cut off before its end (an excerpt): the rest of the line.
			return pair{valueStart: v, valueEnd: lineEnd(s, v), replacement: valueQuote + Mask}, true
		}
		if s[open:close] == Mask {
			return pair{}, false
		}
		return pair{valueStart: v, valueEnd: close + len(valueQuote), replacement: valueQuote + Mask + valueQuote}, true
	case c == '{' || c == '[':
		return pair{}, false
	}
	switch {
	case headerName(name) || isColon && !quote && startsLine(s, start):
		e := lineEnd(s, v)
		for e > v && isBlank(s[e-1]) {
			e--
		}
		if s[v:e] == Mask {
			return pair{}, false
		}
		return pair{valueStart: v, valueEnd: e, replacement: Mask}, true
	case isColon && quote:
		e := v
		for e < len(s) && !isBlank(s[e]) && strings.IndexByte(",}]\\\r\n", s[e]) < 0 {
			e++
		}
		switch s[v:e] {
		case "null", "true", "false":
			return pair{}, false
		}
		if e == v {
			return pair{}, false
		}
		return pair{valueStart: v, valueEnd: e, replacement: nameQuote + Mask + nameQuote}, true
	}
	stop := "&;,\"'`<>\r\n"
	if isColon {
		stop = ",;)}]\"'`<>\r\n"
	}
	e := bareEnd(s, v, stop)
	if s[v:e] == Mask {
		return pair{}, false
	}
	if authScheme(s[v:e]) {
		// "token: Bearer x": the credentials follow the scheme.
		for e < len(s) && isBlank(s[e]) {
			e++
		}
		e = bareEnd(s, e, stop)
	}
	return pair{valueStart: v, valueEnd: e, replacement: Mask}, true
}

// bareEnd is the end of an unquoted value starting at s[v]: the first
// blank or byte of stop. A value that itself ends in a pair's separator
// ("password=\password=" before a quote) goes on through the quoted
// value that follows, so no nesting leaves a secret outside the mask.
func bareEnd(s string, v int, stop string) int {
	e := v
	for e < len(s) && !isBlank(s[e]) {
		if q := quoteAt(s, e); q != "" && strings.IndexByte(stop, q[len(q)-1]) >= 0 {
			// A quote, maybe escaped (a value quoted inside a string).
			if e == v || s[e-1] != '=' && s[e-1] != ':' {
				break
			}
			close := closingQuote(s, e+len(q), q)
			if close < 0 {
				return lineEnd(s, e)
			}
			return close + len(q)
		}
		if strings.IndexByte(stop, s[e]) >= 0 {
			break
		}
		e++
	}
	return e
}

// quoteAt returns the quote that opens at s[i] — a quote character, or
// one escaped by backslashes inside a quoted string — or "".
func quoteAt(s string, i int) string {
	j := i
	for j < len(s) && s[j] == '\\' {
		j++
	}
	if j < len(s) && isQuote(s[j]) {
		return s[i : j+1]
	}
	return ""
}

// closingQuote returns the index of the quote that closes a string opened
// by quote (k backslashes and a quote character) and starting at s[from],
// or -1 when the line ends first. At k backslashes a quote inside the
// string carries 2k+1 of them and a backslash inside it 2(k+1): the
// closing quote is the one whose run of backslashes exceeds k by a
// multiple of 2(k+1).
//
// A string whose text ends in a pair's separator (password="token=" or
// "x"="token="...) does not end at that quote: the quote opens the nested
// pair's value, and the string goes on to that value's end.
func closingQuote(s string, from int, quote string) int {
	for {
		close := nextQuote(s, from, quote)
		if close <= from || s[close-1] != '=' && s[close-1] != ':' {
			return close
		}
		from = close + len(quote)
	}
}

// nextQuote is closingQuote without the nesting.
func nextQuote(s string, from int, quote string) int {
	k, q := len(quote)-1, quote[len(quote)-1]
	for i := from; i < len(s); i++ {
		switch s[i] {
		case q:
			r := 0
			for i-1-r >= from && s[i-1-r] == '\\' {
				r++
			}
			if r >= k && (r-k)%(2*(k+1)) == 0 {
				return i - k
			}
		case '\n':
			return -1
		}
	}
	return -1
}

// lineEnd is the index of the end of the line holding s[i].
func lineEnd(s string, i int) int {
	if n := strings.IndexAny(s[i:], "\r\n"); n >= 0 {
		return i + n
	}
	return len(s)
}

// startsLine reports whether only indentation, or a YAML list's "- ",
// stands between the start of the line and s[i].
func startsLine(s string, i int) bool {
	j := i
	for j > 0 && isBlank(s[j-1]) {
		j--
	}
	if j > 0 && s[j-1] == '-' {
		j--
		for j > 0 && isBlank(s[j-1]) {
			j--
		}
	}
	return j == 0 || s[j-1] == '\n'
}

// headerName reports whether name is an HTTP header whose whole value is
// a credential (its scheme included).
func headerName(name string) bool {
	return containsFold(name, "authorization") || containsFold(name, "cookie")
}

// authScheme reports whether word is an HTTP authentication scheme, whose
// credentials follow it.
func authScheme(word string) bool {
	for _, s := range [...]string{"bearer", "basic", "digest", "negotiate", "token", "aws4-hmac-sha256"} {
		if len(word) == len(s) && containsFold(word, s) {
			return true
		}
	}
	return false
}

func isBlank(c byte) bool { return c == ' ' || c == '\t' }

func isQuote(c byte) bool { return c == '"' || c == '\'' }

func isNameByte(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '.' || c == '%' || c == '-'
}
