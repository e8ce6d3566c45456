// Package excerpt bounds untrusted text before reactor repeats it: in an
// error message, a log line, a dead letter's headers or a metric label. A
// producer controls the table names, object keys and timestamps it sends,
// and an error that quotes a 1 MB value in full is a 1 MB log line, and a
// dead letter too large to publish.
//
// It owns cutting text at a rune boundary and saying how much was cut; it
// knows nothing about what the text is.
package excerpt

import (
	"strconv"
	"unicode/utf8"
)

// Max is how many bytes of one value Quote and String keep: enough to
// recognise a table name, an object key or a timestamp, small enough that
// an error quoting a handful of values stays a short line.
const Max = 256

// MaxError bounds an error message as Error cuts it.
const MaxError = 2048

// String returns s if it is at most max bytes long, else its first max bytes
// (cut back to a rune boundary) followed by "…(N bytes)", N being the
// length of s.
func String(s string, max int) string {
	if len(s) <= max {
		return s
	}
	return s[:cut(s, max)] + "…(" + strconv.Itoa(len(s)) + " bytes)"
}

// Quote is strconv.Quote of s's first Max bytes; a longer s is followed by
// "…(N bytes)" outside the quotes, so a reader sees both the start of the
// value and that it went on.
func Quote(s string) string {
	if len(s) <= Max {
		return strconv.Quote(s)
	}
	return strconv.Quote(s[:cut(s, Max)]) + "…(" + strconv.Itoa(len(s)) + " bytes)"
}

// cut is the largest n <= max at which s can be cut without splitting a
// UTF-8 sequence. Invalid UTF-8 is cut anywhere: it has no boundaries to
// respect.
func cut(s string, max int) int {
	n := max
	for i := 0; i < utf8.UTFMax && n > 0 && !utf8.RuneStart(s[n]); i++ {
		n--
	}
	if !utf8.RuneStart(s[n]) {
		return max
	}
	return n
}

// Error returns err unchanged when its message is at most MaxError bytes,
// else an error with the message cut by String that still unwraps to err,
// so errors.Is and errors.As see the original. nil stays nil.
func Error(err error) error {
	if err == nil {
		return nil
	}
	msg := err.Error()
	if len(msg) <= MaxError {
		return err
	}
	return &bounded{msg: String(msg, MaxError), err: err}
}

type bounded struct {
	msg string
	err error
}

func (e *bounded) Error() string { return e.msg }
func (e *bounded) Unwrap() error { return e.err }
