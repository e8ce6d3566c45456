// Package location owns how reactor spells and compares object locations.
//
// Object stores resolve several spellings to one object: versitygw and MinIO
// store keys as files, so "t/data//x" and "t/data/./x" are "t/data/x"; Hadoop
// clients write s3a:// where others write s3://; Iceberg Java writes file:/
// where iceberg-go writes file:///; iceberg-go's local IO decodes percent
// escapes that its object-store IO keeps literally; a case-insensitive store
// folds case. Anything that deletes must therefore never compare two
// locations as plain strings. This package gives every location two forms:
//
//   - [Canonical]: the one spelling reactor stats and deletes by. It exists
//     only for a location whose path is already clean (no empty, "." or ".."
//     segment, no trailing slash, no backslash, no control character, no '?'
//     or '#'); every other spelling is refused with a reason, never
//     repaired, since repairing it would pick one of the objects it might
//     name.
//   - [Identity]: the comparison key, defined for every string. It folds
//     every spelling any store might resolve to one object (scheme aliases,
//     case, percent escapes, '+' for space, backslashes, segments, Unicode
//     normalisation) so two locations that might be one object always have
//     the same identity. Over-matching only ever keeps a file.
//
// It does no I/O and must not: whether an object exists and how old it is
// are the object store's facts, asked at deletion time by the executor.
package location

import (
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"unicode/utf8"

	"golang.org/x/text/cases"
	"golang.org/x/text/unicode/norm"
)

// ErrNotCanonical wraps every reason [Canonical] refuses a location.
var ErrNotCanonical = errors.New("location is not in canonical form")

// maxQuoted bounds how much of a location an error message quotes: keys
// come from notifications anyone on the subject can publish.
const maxQuoted = 256

// schemeAliases maps a scheme to the one every alias of the same storage
// (the same iceberg-go IO, the same object) is spelled with.
var schemeAliases = map[string]string{
	"s3": "s3", "s3a": "s3", "s3n": "s3", "oss": "s3",
	"gs":   "gs",
	"abfs": "abfs", "abfss": "abfs", "wasb": "abfs", "wasbs": "abfs",
}

// Canonical returns the canonical spelling of loc: "s3://bucket/key" (the
// scheme lower-cased, s3a/s3n/oss as s3; other object-store schemes
// lower-cased) with the key exactly as the object store stores it, or, for
// a local file (file:, file:/, file:/// or file://localhost/ URIs, decoded
// the way iceberg-go's local IO decodes them, or a bare absolute path), the
// bare absolute path, which iceberg-go's local IO opens literally.
//
// It fails, wrapping ErrNotCanonical and saying why, when the path part is
// not clean: an empty segment (a doubled or trailing slash), a "." or ".."
// segment, a backslash, '?', '#', a control character or invalid UTF-8; or
// when the location has no bucket, no key, a relative path or a bucket in
// upper case. Percent escapes in object keys are literal characters (the
// object-store IO does not decode them) and so are allowed.
func Canonical(loc string) (string, error) {
	scheme, authority, path, err := split(loc)
	if err != nil {
		return "", notCanonical(loc, err.Error())
	}
	if scheme == "file" {
		if reason := dirty(strings.TrimPrefix(path, "/")); reason != "" {
			return "", notCanonical(loc, reason)
		}
		return path, nil
	}
	if reason := badAuthority(scheme, authority); reason != "" {
		return "", notCanonical(loc, reason)
	}
	if reason := dirty(path); reason != "" {
		return "", notCanonical(loc, reason)
	}
	if alias, ok := schemeAliases[scheme]; ok {
		scheme = alias
	}
	return scheme + "://" + authority + "/" + path, nil
}

// Under reports whether the canonical location loc lies strictly below the
// canonical directory dir (a trailing slash on dir is ignored).
func Under(loc, dir string) bool {
	dir = strings.TrimSuffix(dir, "/")
	return dir != "" && strings.HasPrefix(loc, dir+"/") && len(loc) > len(dir)+1
}

// Dir returns the canonical form of a directory location such as a table's
// location or data path: Canonical after dropping trailing slashes.
func Dir(loc string) (string, error) {
	trimmed := strings.TrimRight(loc, "/")
	if strings.HasSuffix(trimmed, ":") { // "s3://" or "file:///": no directory left
		trimmed = loc
	}
	return Canonical(trimmed)
}

// Identity returns the key two locations are compared by: equal for every
// pair of spellings some object store or iceberg-go IO resolves to the same
// object. It folds scheme aliases (s3a, s3n, oss as s3; abfss, wasb, wasbs as
// abfs, an Azure account's dfs. endpoint as its blob. one) and case; decodes percent escapes (more
// than once, so a doubly escaped name meets its decoded form), '+' as a
// space and backslashes as slashes; drops a '?' or '#' suffix; resolves
// empty, "." and ".." segments; and applies Unicode compatibility
// normalisation and case folding. It is defined for every string.
func Identity(loc string) string {
	scheme, authority, path := splitLoose(loc)
	path = decodeRepeatedly(path)
	path = strings.Map(func(r rune) rune {
		switch r {
		case '+':
			return ' '
		case '\\':
			return '/'
		}
		return r
	}, path)
	if i := strings.IndexAny(path, "?#"); i >= 0 {
		path = path[:i]
	}
	path = cleanSegments(path)
	path = fold(path)
	if scheme == "file" {
		return "file:///" + path
	}
	authority = fold(decodeRepeatedly(authority))
	if scheme == "abfs" {
		authority = azureBlobHost(authority)
	}
	return scheme + "://" + authority + "/" + path
}

// azureAuthority reports whether an Azure location's authority is
// container@account.host, the only form iceberg-go's Azure IO opens.
func azureAuthority(authority string) bool {
	container, host, ok := strings.Cut(authority, "@")
	account, _, _ := strings.Cut(host, ".")
	return ok && container != "" && account != "" && !strings.ContainsAny(authority[len(container)+1:], "@%\\ ") &&
		!strings.ContainsAny(container, "%:\\ ")
}

// azureBlobHost spells an Azure authority's ADLS Gen2 endpoint
// (account.dfs.core.windows.net, or another cloud's dfs.) as the Blob
// endpoint (account.blob....): abfs:// and wasb:// locations reach the same
// blob through either, and iceberg-go's Azure IO reads the account from
// the host's first label whichever it is.
func azureBlobHost(authority string) string {
	container, host, ok := strings.Cut(authority, "@")
	if !ok {
		return authority
	}
	account, rest, ok := strings.Cut(host, ".")
	if after, isDFS := strings.CutPrefix(rest, "dfs."); ok && isDFS {
		return container + "@" + account + ".blob." + after
	}
	return authority
}

// fold applies Unicode compatibility normalisation and full case folding
// (a Caser is stateful, so one per call).
func fold(s string) string {
	if isASCII(s) { // the common case: normalisation changes nothing, folding is lower-casing
		return strings.ToLower(s)
	}
	if !utf8.ValidString(s) {
		s = strings.ToValidUTF8(s, "\uFFFD")
	}
	return norm.NFKC.String(cases.Fold().String(norm.NFKC.String(s)))
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

// badAuthority says why a bucket (or container@account) is not in
// canonical form, or "" if it is.
func badAuthority(scheme, authority string) string {
	switch {
	case authority == "":
		return "no bucket"
	case authority != strings.ToLower(authority):
		return "the bucket is not in lower case"
	case (schemeAliases[scheme] == "s3" || schemeAliases[scheme] == "gs") && strings.ContainsAny(authority, "%@:\\ "):
		return "the bucket is not a plain bucket name"
	case schemeAliases[scheme] == "abfs" && !azureAuthority(authority):
		return "an Azure location's authority is container@account.host"
	case !utf8.ValidString(authority):
		return "invalid UTF-8 in the bucket"
	}
	return ""
}

// split parses loc strictly into a canonical scheme, authority and path
// (for files the decoded absolute path; for object stores the raw key
// without its leading slash).
func split(loc string) (scheme, authority, path string, err error) {
	if strings.HasPrefix(loc, "/") {
		return "file", "", loc, nil
	}
	rawScheme, rest, ok := cutScheme(loc)
	if !ok {
		return "", "", "", errors.New("no scheme and not an absolute path")
	}
	scheme = strings.ToLower(rawScheme)
	if scheme == "file" {
		u, err := url.Parse(loc)
		if err != nil {
			// url.Error quotes the whole location, unbounded; the caller
			// quotes it once, bounded.
			var ue *url.Error
			if errors.As(err, &ue) {
				err = ue.Err
			}
			return "", "", "", fmt.Errorf("not a valid file URI: %v", err)
		}
		switch {
		case u.Opaque != "":
			return "", "", "", errors.New("a relative file URI")
		case u.RawQuery != "" || u.ForceQuery || u.Fragment != "" || strings.ContainsAny(rest, "?#"):
			return "", "", "", errors.New("a query or fragment ('?' or '#')")
		case u.Host != "" && !strings.EqualFold(u.Host, "localhost"):
			return "", "", "", fmt.Errorf("file URI authority %s", quote(u.Host))
		case !strings.HasPrefix(u.Path, "/"):
			return "", "", "", errors.New("a relative file path")
		}
		return "file", "", u.Path, nil
	}
	rest, ok = strings.CutPrefix(rest, "//")
	if !ok {
		return "", "", "", errors.New("no authority (want scheme://bucket/key)")
	}
	end := strings.IndexAny(rest, "/?#")
	if end < 0 {
		return "", "", "", errors.New("no key")
	}
	if rest[end] != '/' {
		return "", "", "", errors.New("a query or fragment ('?' or '#') after the bucket")
	}
	authority, path = rest[:end], rest[end+1:]
	if path == "" {
		return "", "", "", errors.New("no key")
	}
	return scheme, authority, path, nil
}

// splitLoose is split for Identity: it never fails. A string without a
// scheme is a local path; file URIs lose their "localhost" authority.
func splitLoose(loc string) (scheme, authority, path string) {
	rawScheme, rest, ok := cutScheme(loc)
	if !ok {
		return "file", "", loc
	}
	scheme = strings.ToLower(rawScheme)
	if alias, ok := schemeAliases[scheme]; ok {
		scheme = alias
	}
	if scheme == "file" {
		if after, ok := strings.CutPrefix(rest, "//"); ok {
			host, p, _ := strings.Cut(after, "/")
			if host == "" || strings.EqualFold(host, "localhost") {
				return "file", "", p
			}
			return "file", "", "//" + after // a UNC-like authority: kept apart
		}
		return "file", "", rest
	}
	rest = strings.TrimPrefix(rest, "//")
	authority, path, _ = strings.Cut(rest, "/")
	return scheme, authority, path
}

// cutScheme splits "scheme:rest" when loc starts with an RFC 3986 scheme.
func cutScheme(loc string) (scheme, rest string, ok bool) {
	i := strings.IndexByte(loc, ':')
	if i < 1 {
		return "", "", false
	}
	for j := 0; j < i; j++ {
		c := loc[j]
		alpha := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
		if !alpha && (j == 0 || !(c >= '0' && c <= '9' || c == '+' || c == '-' || c == '.')) {
			return "", "", false
		}
	}
	return loc[:i], loc[i+1:], true
}

// dirty says why a path (an object key, or a local path without its
// leading slash) is not clean, or "" if it is.
func dirty(p string) string {
	switch {
	case p == "":
		return "an empty path"
	case !utf8.ValidString(p):
		return "invalid UTF-8"
	case strings.ContainsAny(p, `\?#`):
		return `a backslash, '?' or '#' in the path`
	}
	for _, r := range p {
		if r < 0x20 || r == 0x7f {
			return "a control character in the path"
		}
	}
	for seg := range strings.SplitSeq(p, "/") {
		switch seg {
		case "":
			return "an empty path segment (a doubled, leading or trailing slash)"
		case ".", "..":
			return fmt.Sprintf("a %q path segment", seg)
		}
	}
	return ""
}

// cleanSegments resolves empty, "." and ".." segments (".." never climbs
// above the root) and returns the path without a leading slash. Trailing
// dots and spaces of a segment are dropped too: Windows file systems, under
// some S3 gateways, ignore them.
func cleanSegments(p string) string {
	p = strings.TrimPrefix(p, "/")
	if segmentsClean(p) {
		return p
	}
	var out []string
	for seg := range strings.SplitSeq(p, "/") {
		if seg != "." && seg != ".." {
			seg = strings.TrimRight(seg, ". ")
		}
		switch seg {
		case "", ".":
		case "..":
			if len(out) > 0 {
				out = out[:len(out)-1]
			}
		default:
			out = append(out, seg)
		}
	}
	return strings.Join(out, "/")
}

// segmentsClean reports whether cleanSegments would leave p (without a
// leading slash) as it is.
func segmentsClean(p string) bool {
	if p == "" {
		return true
	}
	for seg := range strings.SplitSeq(p, "/") {
		if seg == "" || seg == "." || seg == ".." || strings.HasSuffix(seg, ".") || strings.HasSuffix(seg, " ") {
			return false
		}
	}
	return true
}

// decodeRepeatedly decodes every valid %XX escape, leaving malformed ones
// as they are, until nothing changes (at most a few rounds).
func decodeRepeatedly(s string) string {
	for range 4 {
		d := decodeValid(s)
		if d == s {
			break
		}
		s = d
	}
	return s
}

func decodeValid(s string) string {
	if !strings.Contains(s, "%") {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); i++ {
		if s[i] == '%' && i+2 < len(s) && isHex(s[i+1]) && isHex(s[i+2]) {
			b.WriteByte(unhex(s[i+1])<<4 | unhex(s[i+2]))
			i += 2
			continue
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

func isHex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

func unhex(c byte) byte {
	switch {
	case c >= '0' && c <= '9':
		return c - '0'
	case c >= 'a' && c <= 'f':
		return c - 'a' + 10
	}
	return c - 'A' + 10
}

func notCanonical(loc, reason string) error {
	return fmt.Errorf("%w: %s: %s", ErrNotCanonical, quote(loc), reason)
}

// quote quotes a location for an error message, bounded to about
// maxQuoted bytes however it escapes.
func quote(s string) string {
	q := strconv.Quote(s[:min(len(s), maxQuoted)])
	if len(q) > maxQuoted || len(s) > maxQuoted {
		q = strings.ToValidUTF8(q[:min(len(q), maxQuoted)], "") + `..."`
	}
	return q
}
