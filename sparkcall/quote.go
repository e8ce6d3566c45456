package sparkcall

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// QuoteIdent quotes one identifier part for Spark SQL: backticks around it,
// an embedded backtick doubled. Empty names and names that are not valid
// UTF-8 are rejected: Spark cannot name them.
func QuoteIdent(name string) (string, error) {
	if name == "" {
		return "", fmt.Errorf("%w: empty identifier", ErrNotExpressible)
	}
	if !utf8.ValidString(name) {
		return "", fmt.Errorf("%w: identifier %q is not valid UTF-8", ErrNotExpressible, name)
	}
	return "`" + strings.ReplaceAll(name, "`", "``") + "`", nil
}

// QuoteMultipart quotes each part and joins them with dots, the form Spark
// parses back into the same parts whatever they contain.
func QuoteMultipart(parts ...string) (string, error) {
	if len(parts) == 0 {
		return "", fmt.Errorf("%w: empty multipart identifier", ErrNotExpressible)
	}
	quoted := make([]string, len(parts))
	for i, p := range parts {
		q, err := QuoteIdent(p)
		if err != nil {
			return "", err
		}
		quoted[i] = q
	}
	return strings.Join(quoted, "."), nil
}

// QuoteString renders s as a Spark SQL string literal: single quotes, with
// backslash and quote escaped by a backslash and control characters written
// as \uXXXX, so the literal parses back to exactly s under Spark's default
// spark.sql.parser.escapedStringLiterals=false (with that setting true,
// Spark does not unescape and no literal containing a quote is safe).
// Strings that are not valid UTF-8 are rejected.
func QuoteString(s string) (string, error) {
	if !utf8.ValidString(s) {
		return "", fmt.Errorf("%w: string %q is not valid UTF-8", ErrNotExpressible, s)
	}
	var b strings.Builder
	b.Grow(len(s) + 2)
	b.WriteByte('\'')
	for _, r := range s {
		switch {
		case r == '\\':
			b.WriteString(`\\`)
		case r == '\'':
			b.WriteString(`\'`)
		case r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) || r == 0x2028 || r == 0x2029:
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('\'')
	return b.String(), nil
}

// mustQuoteString is QuoteString for strings the package built itself
// (numbers, option names, SQL it rendered from quoted parts): always valid.
func mustQuoteString(s string) string {
	q, err := QuoteString(s)
	if err != nil {
		panic(err)
	}
	return q
}
