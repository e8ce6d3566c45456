package redact

import "strings"

// maskTokens masks secrets recognised by their shape, wherever they stand
// (no name before them says what they are):
//
//   - a Bearer token: "Bearer x" (any case of "bearer"; after a lower-case
//     "bearer" only a word that is not plain lower-case letters, so prose
//     such as "a bearer token" stays);
//   - a NATS nkey seed: S, a type letter and 56 base32 characters;
//   - a JWT: three base64url segments, the first two starting "eyJ";
//   - a PEM private key: from its BEGIN line to its END line.
func maskTokens(s string) string {
	s = maskBearer(s)
	s = maskSeeds(s)
	s = maskJWTs(s)
	return maskPEM(s)
}

func maskBearer(s string) string {
	var b strings.Builder
	done := 0
	for i := 0; i+len("bearer ") < len(s); i++ {
		if s[i] != 'b' && s[i] != 'B' || !containsFold(s[i:i+6], "bearer") || i > 0 && isWordByte(s[i-1]) {
			continue
		}
		v := i + 6
		if v >= len(s) || !isBlank(s[v]) {
			continue
		}
		for v < len(s) && isBlank(s[v]) {
			v++
		}
		e := v
		for e < len(s) && isToken68(s[e]) {
			e++
		}
		if e == v {
			continue
		}
		word := s[v:e]
		if s[i] == 'b' && isLowerWord(word) {
			continue
		}
		b.WriteString(s[done:v])
		b.WriteString(Mask)
		done, i = e, e-1
	}
	if done == 0 {
		return s
	}
	b.WriteString(s[done:])
	return b.String()
}

// seedLen is the length of an encoded nkey seed.
const seedLen = 58

func maskSeeds(s string) string {
	if len(s) < seedLen {
		return s
	}
	var b strings.Builder
	done := 0
	for i := 0; i+seedLen <= len(s); i++ {
		if s[i] != 'S' || strings.IndexByte("UANOCXP", s[i+1]) < 0 || i > 0 && isWordByte(s[i-1]) {
			continue
		}
		j := i + 2
		for j < i+seedLen && isBase32(s[j]) {
			j++
		}
		if j < i+seedLen || j < len(s) && isWordByte(s[j]) {
			continue
		}
		b.WriteString(s[done:i])
		b.WriteString(Mask)
		done, i = j, j-1
	}
	if done == 0 {
		return s
	}
	b.WriteString(s[done:])
	return b.String()
}

func maskJWTs(s string) string {
	if !strings.Contains(s, "eyJ") {
		return s
	}
	var b strings.Builder
	done := 0
	for i := strings.Index(s, "eyJ"); i >= 0; {
		end := jwtEnd(s, i)
		if end > 0 && (i == 0 || !isBase64URL(s[i-1])) {
			b.WriteString(s[done:i])
			b.WriteString(Mask)
			done = end
		} else {
			end = i + 3
		}
		n := strings.Index(s[end:], "eyJ")
		if n < 0 {
			break
		}
		i = end + n
	}
	if done == 0 {
		return s
	}
	b.WriteString(s[done:])
	return b.String()
}

// jwtEnd returns the end of a JWT (header.payload.signature, the first
// two segments base64url JSON objects) starting at s[i], or -1.
func jwtEnd(s string, i int) int {
	j := i
	for seg := 0; seg < 3; seg++ {
		start := j
		for j < len(s) && isBase64URL(s[j]) {
			j++
		}
		switch {
		case seg < 2 && (j-start < 8 || !strings.HasPrefix(s[start:], "eyJ")):
			return -1
		case seg < 2 && (j >= len(s) || s[j] != '.'):
			return -1
		case seg < 2:
			j++
		}
	}
	return j
}

func maskPEM(s string) string {
	const begin, end = "-----BEGIN ", "-----END "
	if !strings.Contains(s, "PRIVATE KEY") {
		return s
	}
	var b strings.Builder
	done := 0
	for {
		i := strings.Index(s[done:], begin)
		if i < 0 {
			break
		}
		i += done
		head := strings.Index(s[i+len(begin):], "-----")
		if head < 0 {
			break
		}
		bodyStart := i + len(begin) + head + len("-----")
		label := s[i+len(begin) : bodyStart-len("-----")]
		if !strings.HasSuffix(label, "PRIVATE KEY") {
			b.WriteString(s[done:bodyStart])
			done = bodyStart
			continue
		}
		bodyEnd := len(s)
		if k := strings.Index(s[bodyStart:], end); k >= 0 {
			bodyEnd = bodyStart + k
		}
		b.WriteString(s[done:bodyStart])
		if s[bodyStart:bodyEnd] != Mask {
			b.WriteString(Mask)
		} else {
			b.WriteString(s[bodyStart:bodyEnd])
		}
		done = bodyEnd
	}
	if done == 0 {
		return s
	}
	b.WriteString(s[done:])
	return b.String()
}

func isWordByte(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_'
}

// isToken68 is RFC 7235's token68 alphabet (a Bearer token's).
func isToken68(c byte) bool {
	return isWordByte(c) || strings.IndexByte("-._~+/=", c) >= 0
}

func isBase64URL(c byte) bool { return isWordByte(c) || c == '-' }

func isBase32(c byte) bool { return 'A' <= c && c <= 'Z' || '2' <= c && c <= '7' }

func isLowerWord(w string) bool {
	for i := 0; i < len(w); i++ {
		if w[i] < 'a' || w[i] > 'z' {
			return false
		}
	}
	return true
}
