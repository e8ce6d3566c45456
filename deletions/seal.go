package deletions

import (
	"bytes"
	"crypto/hmac"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	iofs "io/fs"
	"unicode/utf8"

	iceio "github.com/apache/iceberg-go/io"
)

// Record kinds: what a signed record may be read as. A record of one kind
// is never accepted as another.
const (
	KindPendingDeletes = "pending-deletes"
	KindExpiryIntent   = "expiry-intent"
	KindOutputIntent   = "output-intent"
	KindOwnSnapshots   = "own-snapshots"
)

// Reasons a record is refused: the values of the reason label of
// reactor_records_refused_total.
const (
	RefusedUnsigned     = "unsigned"      // no signature: a file reactor did not write, or an earlier version's record
	RefusedUnknownKey   = "unknown_key"   // signed with a key this process does not hold
	RefusedBadSignature = "bad_signature" // the signature does not match the content
	RefusedOtherTable   = "other_table"   // signed for another table
	RefusedWrongKind    = "wrong_kind"    // a record of another kind under this name
	RefusedTooLarge     = "too_large"     // larger than the record size limit
	RefusedMalformed    = "malformed"     // not a record at all
)

// RecordReasons lists every refusal reason (metrics start them at zero).
var RecordReasons = []string{RefusedUnsigned, RefusedUnknownKey, RefusedBadSignature, RefusedOtherTable, RefusedWrongKind,
	RefusedTooLarge, RefusedMalformed}

// ErrRefused is wrapped by every *Refusal: the record was not acted on and
// is left where it is, for an operator.
var ErrRefused = errors.New("record refused")

// Refusal is why a record was refused.
type Refusal struct {
	Location string
	Reason   string
	Detail   string
}

func (r *Refusal) Error() string {
	return fmt.Sprintf("record %s refused (%s): %s", r.Location, r.Reason, r.Detail)
}

func (r *Refusal) Unwrap() error { return ErrRefused }

// envelope is a record as stored: its body and what binds it to its kind,
// its table and reactor's key.
type envelope struct {
	Version int             `json:"reactor_record"`
	Kind    string          `json:"kind"`
	Table   string          `json:"table_binding"`
	KeyID   string          `json:"key_id"`
	Body    json.RawMessage `json:"body"`
	MAC     string          `json:"mac"`
}

// seal encodes v as a record of kind for the table bound by binding.
func (k *Keyring) seal(kind, binding string, v any) ([]byte, error) {
	body, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	key := k.keys[0]
	return json.Marshal(envelope{Version: 1, Kind: kind, Table: binding, KeyID: key.id, Body: body,
		MAC: base64.StdEncoding.EncodeToString(key.mac(kind, binding, body))})
}

// open checks data is a record of kind for binding signed by one of k's
// keys and decodes its body into v. Every failure is a *Refusal.
func (k *Keyring) open(loc string, data []byte, kind, binding string, v any) error {
	refuse := func(reason, format string, args ...any) error {
		return &Refusal{Location: loc, Reason: reason, Detail: fmt.Sprintf(format, args...)}
	}
	if int64(len(data)) > k.maxBytes() {
		return refuse(RefusedTooLarge, "%d bytes, the limit is %d", len(data), k.maxBytes())
	}
	if !utf8.Valid(data) {
		return refuse(RefusedMalformed, "not UTF-8")
	}
	var env envelope
	if err := json.Unmarshal(data, &env); err != nil {
		return refuse(RefusedMalformed, "not JSON: %v", err)
	}
	if env.Version == 0 && env.MAC == "" {
		return refuse(RefusedUnsigned, "no signature: written by an earlier version of reactor or by someone else")
	}
	if env.Version != 1 {
		return refuse(RefusedMalformed, "record version %d, want 1", env.Version)
	}
	key, ok := k.byID(env.KeyID)
	if !ok {
		return refuse(RefusedUnknownKey, "signed with key %q, which this process does not hold", bounded(env.KeyID))
	}
	mac, err := base64.StdEncoding.DecodeString(env.MAC)
	if err != nil || !hmac.Equal(mac, key.mac(env.Kind, env.Table, env.Body)) {
		return refuse(RefusedBadSignature, "the signature does not match the record")
	}
	// Authentic from here on: a mismatch is a record reactor wrote for
	// something else, moved or copied here.
	if env.Kind != kind {
		return refuse(RefusedWrongKind, "a %q record where a %q one belongs", bounded(env.Kind), kind)
	}
	if env.Table != binding {
		return refuse(RefusedOtherTable, "signed for table %s, read for %s", bounded(env.Table), binding)
	}
	dec := json.NewDecoder(bytes.NewReader(env.Body))
	if err := dec.Decode(v); err != nil {
		return refuse(RefusedMalformed, "body: %v", err)
	}
	return nil
}

func bounded(s string) string {
	const limit = 200
	if len(s) <= limit {
		return s
	}
	return s[:limit] + "..."
}

// readBounded reads the file at loc through fs, refusing one larger than
// limit before reading it (and reading at most limit+1 bytes should the
// size it reported be wrong).
func readBounded(fs iceio.IO, loc string, limit int64) ([]byte, error) {
	f, err := fs.Open(loc)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if st, err := f.Stat(); err == nil && st.Size() > limit {
		return nil, &Refusal{Location: loc, Reason: RefusedTooLarge, Detail: fmt.Sprintf("%d bytes, the limit is %d", st.Size(), limit)}
	}
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > limit {
		return nil, &Refusal{Location: loc, Reason: RefusedTooLarge, Detail: fmt.Sprintf("more than %d bytes", limit)}
	}
	return data, nil
}

// ReadBounded reads a whole file through the table's IO, refusing (with a
// *Refusal wrapping ErrRefused, reason too_large) one larger than limit.
// A missing file wraps fs.ErrNotExist.
func ReadBounded(fs iceio.IO, loc string, limit int64) ([]byte, error) {
	data, err := readBounded(fs, loc, limit)
	if err != nil && !errors.Is(err, ErrRefused) && !errors.Is(err, iofs.ErrNotExist) {
		return nil, fmt.Errorf("read %s: %w", loc, err)
	}
	return data, err
}

// decodeUnverified decodes a record's body without checking who wrote it,
// for what may only ever keep a file (Records.Shielded): a sealed record's
// body, or an earlier version's plain JSON.
func decodeUnverified(data []byte, v any) bool {
	var env envelope
	if json.Unmarshal(data, &env) == nil && env.Version != 0 && len(env.Body) > 0 {
		return json.Unmarshal(env.Body, v) == nil
	}
	return json.Unmarshal(data, v) == nil
}
