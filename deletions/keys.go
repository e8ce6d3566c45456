package deletions

import (
	"bufio"
	"bytes"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// MinKeyBytes is the least key material a record key may have.
const MinKeyBytes = 32

// DefaultMaxRecordBytes bounds what reading one record may cost: a larger
// file is refused before it is read. Batches are split so that reactor's
// own never come near it (maxFilesPerRecord).
const DefaultMaxRecordBytes = 64 << 20

// Keyring holds the keys reactor signs and verifies its records with. The
// first key signs; every key verifies, so a key can be rotated without
// refusing the records the old one signed: put the new key first and keep
// the old one below it until the records it signed are gone.
type Keyring struct {
	keys []recordKey
	// MaxRecordBytes bounds one record's size (0: DefaultMaxRecordBytes).
	MaxRecordBytes int64
}

type recordKey struct {
	id     string
	secret []byte
}

// ErrNoKey: no usable key material.
var ErrNoKey = errors.New("no record key")

// NewKeyring makes a keyring of secrets, the first of which signs. Each
// must hold at least MinKeyBytes bytes.
func NewKeyring(secrets ...[]byte) (*Keyring, error) {
	if len(secrets) == 0 {
		return nil, ErrNoKey
	}
	k := &Keyring{}
	for i, s := range secrets {
		if len(s) < MinKeyBytes {
			return nil, fmt.Errorf("record key %d has %d bytes, want at least %d", i+1, len(s), MinKeyBytes)
		}
		k.keys = append(k.keys, recordKey{id: keyID(s), secret: bytes.Clone(s)})
	}
	return k, nil
}

// EphemeralKeyring is a keyring with one random key that lives as long as
// the process: what it signs no other process can verify, so another
// process refuses those records (and so deletes nothing for them). For
// tests and for processes given no key.
func EphemeralKeyring() *Keyring {
	secret := make([]byte, MinKeyBytes)
	if _, err := rand.Read(secret); err != nil {
		panic(fmt.Sprintf("deletions: no randomness for a record key: %v", err))
	}
	k, _ := NewKeyring(secret)
	return k
}

// ParseKeys reads key material: one key per line, base64 (standard or
// URL alphabet, padded or not) of at least MinKeyBytes bytes; blank lines
// and lines starting with '#' are skipped. The first key signs.
func ParseKeys(text []byte) (*Keyring, error) {
	var secrets [][]byte
	sc := bufio.NewScanner(bytes.NewReader(text))
	line := 0
	for sc.Scan() {
		line++
		s := strings.TrimSpace(sc.Text())
		if s == "" || strings.HasPrefix(s, "#") {
			continue
		}
		secret, err := decodeKey(s)
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", line, err)
		}
		secrets = append(secrets, secret)
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if len(secrets) == 0 {
		return nil, fmt.Errorf("%w: no key line (want base64 of at least %d random bytes, e.g. from `openssl rand -base64 32`)", ErrNoKey, MinKeyBytes)
	}
	return NewKeyring(secrets...)
}

func decodeKey(s string) ([]byte, error) {
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
		if b, err := enc.DecodeString(s); err == nil {
			if len(b) < MinKeyBytes {
				return nil, fmt.Errorf("key has %d bytes, want at least %d", len(b), MinKeyBytes)
			}
			return b, nil
		}
	}
	return nil, errors.New("key is not base64")
}

// ReadKeyFile reads a key file (ParseKeys' format). A key file others may
// read is refused: whoever reads it can forge records.
func ReadKeyFile(path string) (*Keyring, error) {
	info, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("record key file: %w", err)
	}
	if info.Mode().Perm()&0o077 != 0 && !mountedSecret(path) {
		return nil, fmt.Errorf("record key file %s is readable by others (mode %v); chmod 600 it", path, info.Mode().Perm())
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("record key file: %w", err)
	}
	k, err := ParseKeys(data)
	if err != nil {
		return nil, fmt.Errorf("record key file %s: %w", path, err)
	}
	return k, nil
}

// mountedSecret: Kubernetes mounts a Secret's files through a symlink
// into a "..data" directory with the volume's defaultMode; the mode there
// is the operator's choice, not an accident.
func mountedSecret(path string) bool {
	target, err := filepath.EvalSymlinks(path)
	return err == nil && strings.Contains(target, string(filepath.Separator)+"..")
}

// GenerateKeyFile writes a new random key to path (mode 0600), failing if
// the file exists, and returns its keyring.
func GenerateKeyFile(path string) (*Keyring, error) {
	secret := make([]byte, MinKeyBytes)
	if _, err := rand.Read(secret); err != nil {
		return nil, fmt.Errorf("generate record key: %w", err)
	}
	text := "# reactor's record key: it signs the records reactor keeps in tables' storage.\n" +
		"# Every replica needs the same key; whoever holds it can forge records.\n" +
		base64.StdEncoding.EncodeToString(secret) + "\n"
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("generate record key: %w", err)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return nil, fmt.Errorf("generate record key: %w", err)
	}
	if _, err := f.WriteString(text); err != nil {
		f.Close()
		return nil, fmt.Errorf("generate record key: %w", err)
	}
	if err := f.Close(); err != nil {
		return nil, fmt.Errorf("generate record key: %w", err)
	}
	return NewKeyring(secret)
}

// SigningKeyID names the key that signs (for logs: never the key).
func (k *Keyring) SigningKeyID() string { return k.keys[0].id }

func (k *Keyring) maxBytes() int64 {
	if k.MaxRecordBytes > 0 {
		return k.MaxRecordBytes
	}
	return DefaultMaxRecordBytes
}

func (k *Keyring) byID(id string) (recordKey, bool) {
	for _, key := range k.keys {
		if key.id == id {
			return key, true
		}
	}
	return recordKey{}, false
}

// keyID names a key without revealing it.
func keyID(secret []byte) string {
	h := sha256.New()
	h.Write([]byte("reactor record key id\x00"))
	h.Write(secret)
	return hex.EncodeToString(h.Sum(nil)[:8])
}

// mac is the record's signature: the kind, the table it is bound to and
// the body, each unambiguous (the kind and binding hold no NUL).
func (key recordKey) mac(kind, binding string, body []byte) []byte {
	h := hmac.New(sha256.New, key.secret)
	h.Write([]byte("reactor-record/1\x00"))
	h.Write([]byte(kind))
	h.Write([]byte{0})
	h.Write([]byte(binding))
	h.Write([]byte{0})
	h.Write(body)
	return h.Sum(nil)
}
