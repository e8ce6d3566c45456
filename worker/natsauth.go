package worker

// How reactor proves itself to NATS and checks the server: a creds file
// (JWT and seed) or an nkey seed, and TLS with a CA of its own and a
// client certificate. Every connection reactor makes (the worker's, which
// its consumers, fast lanes, reports and leases share, and reactor
// write's) is built from one NATSSecurity.

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"

	"github.com/nats-io/nats.go"
)

// NATSSecurity holds the credentials and TLS settings of a NATS
// connection. The zero value connects as the URL says (a tls:// URL uses
// the system's roots).
type NATSSecurity struct {
	// CredsFile is a credentials file (user JWT and nkey seed).
	CredsFile string
	// NKeyFile holds an nkey seed (SU...): the server knows the user by
	// its public key. Not with CredsFile.
	NKeyFile string
	// CAFile holds the PEM certificates the server's certificate must
	// chain to (instead of the system's roots); setting it, or a client
	// certificate, requires TLS.
	CAFile string
	// CertFile and KeyFile are a PEM client certificate and its key, for
	// a server that verifies its clients (mutual TLS). Both or neither.
	CertFile, KeyFile string
}

// TLS reports whether the settings ask for TLS.
func (s NATSSecurity) TLS() bool { return s.CAFile != "" || s.CertFile != "" }

// Check refuses settings that cannot work: files that cannot be read or
// parsed, a certificate without its key, both a creds file and an nkey.
// Errors name the setting, never a file's content.
func (s NATSSecurity) Check() error {
	if s.CredsFile != "" && s.NKeyFile != "" {
		return errors.New("a creds file and an nkey seed are two ways to authenticate: give one")
	}
	if (s.CertFile == "") != (s.KeyFile == "") {
		return errors.New("a client certificate needs its key, and a key its certificate: give both")
	}
	for _, f := range []struct{ what, path string }{{"creds file", s.CredsFile}, {"nkey seed file", s.NKeyFile},
		{"CA file", s.CAFile}, {"client certificate", s.CertFile}, {"client key", s.KeyFile}} {
		if f.path == "" {
			continue
		}
		if _, err := os.Stat(f.path); err != nil {
			return fmt.Errorf("%s: %w", f.what, err)
		}
	}
	if s.CAFile != "" {
		data, err := os.ReadFile(s.CAFile)
		if err != nil {
			return fmt.Errorf("CA file: %w", err)
		}
		if !x509.NewCertPool().AppendCertsFromPEM(data) {
			return fmt.Errorf("CA file %s holds no PEM certificate", s.CAFile)
		}
	}
	if s.CertFile != "" {
		if _, err := tls.LoadX509KeyPair(s.CertFile, s.KeyFile); err != nil {
			return fmt.Errorf("client certificate %s and key %s: %w", s.CertFile, s.KeyFile, err)
		}
	}
	if s.NKeyFile != "" {
		if _, err := nats.NkeyOptionFromSeed(s.NKeyFile); err != nil {
			return fmt.Errorf("nkey seed file %s: %w", s.NKeyFile, errors.New("not an nkey seed (a line starting SU)"))
		}
	}
	return nil
}

// Options are the nats.Options of these settings.
func (s NATSSecurity) Options() ([]nats.Option, error) {
	var opts []nats.Option
	if s.CredsFile != "" {
		opts = append(opts, nats.UserCredentials(s.CredsFile))
	}
	if s.NKeyFile != "" {
		o, err := nats.NkeyOptionFromSeed(s.NKeyFile)
		if err != nil {
			return nil, fmt.Errorf("nkey seed file %s: not an nkey seed", s.NKeyFile)
		}
		opts = append(opts, o)
	}
	if s.CAFile != "" {
		opts = append(opts, nats.RootCAs(s.CAFile))
	}
	if s.CertFile != "" {
		opts = append(opts, nats.ClientCert(s.CertFile, s.KeyFile))
	}
	// Both ask for TLS 1.2 at least, and read their files again at each
	// reconnect: a rotated certificate is used without a restart.
	return opts, nil
}

// errNATSTLS marks a TLS failure that waiting will not fix.
var errNATSTLS = errors.New("TLS with the NATS server failed")

// ExplainNATSError turns a failed connection's error into one that says
// what to fix: a server certificate that does not chain to the CA given
// (or to the system's roots), a name it does not carry, a client
// certificate the server wants and did not get, or refused. The result
// wraps err; TLS failures also wrap an error natsRetryable treats as
// permanent.
func ExplainNATSError(err error, s NATSSecurity) error {
	var (
		unknown  x509.UnknownAuthorityError
		hostname x509.HostnameError
		invalid  x509.CertificateInvalidError
		verify   *tls.CertificateVerificationError
		alert    tls.AlertError
		// The server's TLS alert reaches a TCP client as this.
		op *net.OpError
	)
	roots := "the system's roots (set --nats-tls-ca for a private CA)"
	if s.CAFile != "" {
		roots = "--nats-tls-ca " + s.CAFile
	}
	switch {
	case errors.As(err, &unknown):
		return fmt.Errorf("%w: the server's certificate is not signed by %s: %w", errNATSTLS, roots, err)
	case errors.As(err, &hostname):
		return fmt.Errorf("%w: the server's certificate is not valid for the host in --nats-url: %w", errNATSTLS, err)
	case errors.As(err, &invalid), errors.As(err, &verify):
		return fmt.Errorf("%w: the server's certificate does not verify against %s: %w", errNATSTLS, roots, err)
	case errors.As(err, &alert) || errors.As(err, &op) && op.Op == "remote error" || errors.Is(err, nats.ErrSecureConnRequired) ||
		// nats.go's words when the server hangs up right after the
		// handshake, as one that wants a client certificate does.
		errors.Is(err, nats.ErrTLS) && strings.Contains(err.Error(), "closed by remote after TLS handshake"):
		what := "the server refused the TLS handshake"
		if s.CertFile == "" {
			what += " (does it require a client certificate? set --nats-tls-cert and --nats-tls-key)"
		}
		return fmt.Errorf("%w: %s: %w", errNATSTLS, what, err)
	case errors.Is(err, nats.ErrSecureConnWanted):
		return fmt.Errorf("%w: TLS settings are given but the server does not offer TLS: %w", errNATSTLS, err)
	}
	return err
}
