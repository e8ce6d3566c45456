package redact

import "fmt"

// PanicError is a recovered panic, its value and stack redacted: a panic
// in code that handles credentials (a catalog client, a URL parser) must
// not print them, and the runtime's own crash output cannot be filtered.
type PanicError struct {
	// Value is the panic's value as text, through String.
	Value string
	// Stack is the goroutine's stack where it panicked, through String.
	Stack string
}

// Panic wraps a recovered panic value and its stack (runtime/debug.Stack).
func Panic(v any, stack []byte) *PanicError {
	return &PanicError{Value: String(fmt.Sprint(v)), Stack: String(string(stack))}
}

func (e *PanicError) Error() string { return "panic: " + e.Value }
