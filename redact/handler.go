package redact

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"reflect"
)

// Handler wraps h so that every record's message and attributes go
// through [String] before h sees them: a URL or an error quoting one
// cannot reach the log with its credentials, whichever package logged it.
// An attribute whose key [SecretName] flags is masked whole. Strings,
// errors and fmt.Stringers go through [String]; maps (a named map type
// such as iceberg.Properties, map[string]any, nested), slices and arrays
// are walked, their secret keys masked and every other value redacted;
// structs are rendered as JSON and that text redacted. Numbers, booleans,
// times and durations are passed on as they are.
func Handler(h slog.Handler) slog.Handler {
	if _, ok := h.(*handler); ok {
		return h
	}
	return &handler{next: h}
}

type handler struct{ next slog.Handler }

func (h *handler) Enabled(ctx context.Context, l slog.Level) bool { return h.next.Enabled(ctx, l) }

func (h *handler) Handle(ctx context.Context, r slog.Record) error {
	out := slog.NewRecord(r.Time, r.Level, String(r.Message), r.PC)
	r.Attrs(func(a slog.Attr) bool {
		out.AddAttrs(attr(a))
		return true
	})
	return h.next.Handle(ctx, out)
}

func (h *handler) WithAttrs(as []slog.Attr) slog.Handler {
	red := make([]slog.Attr, len(as))
	for i, a := range as {
		red[i] = attr(a)
	}
	return &handler{next: h.next.WithAttrs(red)}
}

func (h *handler) WithGroup(name string) slog.Handler {
	return &handler{next: h.next.WithGroup(name)}
}

func attr(a slog.Attr) slog.Attr {
	v := a.Value.Resolve()
	if SecretName(a.Key) && (v.Kind() == slog.KindString && v.String() != "" || v.Kind() == slog.KindAny && v.Any() != nil) {
		return slog.String(a.Key, Mask)
	}
	return slog.Attr{Key: a.Key, Value: value(v)}
}

func value(v slog.Value) slog.Value {
	switch v.Kind() {
	case slog.KindString:
		return slog.StringValue(String(v.String()))
	case slog.KindGroup:
		as := v.Group()
		red := make([]slog.Attr, len(as))
		for i, a := range as {
			red[i] = attr(a)
		}
		return slog.GroupValue(red...)
	case slog.KindAny:
		return slog.AnyValue(walk(v.Any(), 0))
	}
	return v
}

// maxDepth bounds how deep walk follows nested maps and slices (a value
// that holds itself would never end).
const maxDepth = 8

// walk returns x with every secret masked: strings, errors and Stringers
// through [String]; maps with their secret keys masked and the other
// values walked; slices walked; structs as redacted JSON. It keeps x when
// nothing in it changed.
func walk(x any, depth int) any {
	switch t := x.(type) {
	case nil:
		return nil
	case json.Number, bool, float64, int, int64:
		return x
	case string:
		return String(t)
	case error:
		return String(t.Error())
	case fmt.Stringer:
		return String(t.String())
	case []string:
		out := make([]string, len(t))
		for i, s := range t {
			out[i] = String(s)
		}
		return out
	case map[string]string:
		out := make(map[string]string, len(t))
		for k, s := range t {
			out[k] = Value(k, s)
		}
		return out
	case json.RawMessage:
		return redactedJSON(String(string(t)))
	case []byte:
		return x
	}
	rv := reflect.ValueOf(x)
	if depth >= maxDepth {
		return Mask
	}
	switch rv.Kind() {
	case reflect.String:
		return String(rv.String())
	case reflect.Map:
		if rv.Len() == 0 {
			return x
		}
		out := make(map[string]any, rv.Len())
		for it := rv.MapRange(); it.Next(); {
			k := fmt.Sprint(it.Key().Interface())
			if SecretName(k) && !isZero(it.Value()) {
				out[k] = Mask
				continue
			}
			out[k] = walk(it.Value().Interface(), depth+1)
		}
		return out
	case reflect.Slice, reflect.Array:
		if rv.Len() == 0 {
			return x
		}
		out := make([]any, rv.Len())
		for i := range out {
			out[i] = walk(rv.Index(i).Interface(), depth+1)
		}
		return out
	case reflect.Pointer, reflect.Interface:
		if rv.IsNil() {
			return x
		}
		if e := rv.Elem(); e.Kind() == reflect.Struct || e.Kind() == reflect.Map || e.Kind() == reflect.Slice {
			return walk(e.Interface(), depth+1)
		}
		return x
	case reflect.Struct:
		// As JSON sees it (its field names and tags), so secret fields
		// are found by name and the result stays valid JSON.
		data, err := json.Marshal(x)
		if err != nil {
			return String(fmt.Sprintf("%+v", x))
		}
		dec := json.NewDecoder(bytes.NewReader(data))
		dec.UseNumber()
		var tree any
		if err := dec.Decode(&tree); err != nil {
			return redactedJSON(String(string(data)))
		}
		return walk(tree, depth+1)
	}
	return x
}

// Any returns x with every secret masked, as [Handler] masks a log
// attribute's value: strings, errors and Stringers through [String]; maps
// walked, their secret keys masked; slices walked; structs as JSON sees
// them (a map of their JSON fields), walked. What it returns marshals to
// JSON like x, with the secrets masked (`reactor plan --json`).
func Any(x any) any { return walk(x, 0) }

func isZero(v reflect.Value) bool {
	for v.Kind() == reflect.Interface && !v.IsNil() {
		v = v.Elem()
	}
	return v.IsZero()
}

// redactedJSON is JSON text already redacted: a JSON handler writes it as
// it is, a text handler as a quoted string.
type redactedJSON string

func (r redactedJSON) MarshalJSON() ([]byte, error) {
	if !json.Valid([]byte(r)) {
		return json.Marshal(string(r))
	}
	return []byte(r), nil
}

func (r redactedJSON) MarshalText() ([]byte, error) { return []byte(r), nil }
