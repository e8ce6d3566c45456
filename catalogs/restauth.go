package catalogs

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/apache/iceberg-go/catalog/rest"
	"golang.org/x/oauth2"
	"golang.org/x/oauth2/clientcredentials"

	"github.com/icereactor/reactor/redact"
)

// Catalog properties of a REST catalog's authentication. The first is
// reactor's own; the others are iceberg-go's (and Iceberg Java's) names.
const (
	// TokenFileProperty names a file holding the bearer token, re-read
	// when it changes (--catalog-token-file).
	TokenFileProperty = "reactor.rest.token-file"

	propToken       = "token"
	propCredential  = "credential"
	propScope       = "scope"
	propAudience    = "audience"
	propResource    = "resource"
	propOAuthServer = "oauth2-server-uri"
	propAuthURL     = "rest.authorization-url" // iceberg-go's older alias
	propSigV4       = "rest.sigv4-enabled"
)

// oauthTimeout bounds one request to the token endpoint (iceberg-go's
// default for its own refresh).
const oauthTimeout = 60 * time.Second

// restAuth gives a REST catalog's requests their Authorization header and
// renews it: a token file is re-read when it changes, an OAuth2
// client-credentials token is fetched again before it expires, and any of
// them once more after the server answered 401 (renew). It implements
// iceberg-go's rest.ContextAuthManager. It never puts a token or a secret
// in an error or a log line.
type restAuth struct {
	log *slog.Logger
	// what says where the token comes from, for logs and errors.
	what string

	mu sync.Mutex
	// header is the current Authorization value ("" until the first).
	header string

	// One of the sources:
	static string       // the token property
	file   *tokenFile   // TokenFileProperty
	oauth  *oauthSource // credential
}

// newRESTAuth builds the authentication props ask for, or nil when they
// ask for none (or for SigV4, which iceberg-go signs itself). base is the
// transport the token endpoint is reached through.
func newRESTAuth(props map[string]string, base http.RoundTripper, log *slog.Logger, now func() time.Time) (*restAuth, error) {
	a := &restAuth{log: log}
	path, token, cred := props[TokenFileProperty], props[propToken], props[propCredential]
	set := 0
	for _, v := range []string{path, token, cred} {
		if v != "" {
			set++
		}
	}
	if set > 1 {
		return nil, configErrorf("a rest catalog takes one of %s (--catalog-token-file), %s and %s, got %d of them",
			TokenFileProperty, propToken, propCredential, set)
	}
	switch {
	case path != "":
		a.file = &tokenFile{path: path}
		a.what = "the token in " + path
		if _, err := a.file.read(true); err != nil {
			return nil, configErrorf("%s: %w", TokenFileProperty, err)
		}
	case token != "":
		a.static = token
		a.what = "the token property (a static token, never renewed)"
	case cred != "":
		o, err := newOAuthSource(props, base)
		if err != nil {
			return nil, err
		}
		if now != nil {
			o.now = now
		}
		a.oauth = o
		a.what = "OAuth2 client credentials from " + redact.String(o.cfg.TokenURL)
	default:
		return nil, nil
	}
	return a, nil
}

// AuthHeader is rest.AuthManager's.
func (a *restAuth) AuthHeader() (string, string, error) {
	return a.AuthHeaderWithContext(context.Background())
}

// AuthHeaderWithContext is rest.ContextAuthManager's: the current token,
// renewed first if it changed on disk or is about to expire.
func (a *restAuth) AuthHeaderWithContext(ctx context.Context) (string, string, error) {
	v, err := a.current(ctx, false)
	return "Authorization", v, err
}

// current is the Authorization value; fresh forces a new one from the
// source (a new login, the file read again).
func (a *restAuth) current(ctx context.Context, fresh bool) (string, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	var tok string
	var err error
	switch {
	case a.file != nil:
		tok, err = a.file.read(fresh)
	case a.oauth != nil:
		tok, err = a.oauth.token(ctx, fresh)
	default:
		tok = a.static
	}
	if err != nil {
		return "", fmt.Errorf("REST catalog authentication (%s): %w", a.what, redact.Error(err))
	}
	h := "Bearer " + tok
	if a.header != "" && h != a.header {
		a.log.Info("REST catalog token renewed", "source", a.what)
	}
	a.header = h
	return h, nil
}

// renew is called after the server refused used (401): it returns the
// header to try once more, or "" when there is none newer to try. A
// header another request already renewed is returned without a new login.
func (a *restAuth) renew(ctx context.Context, used string) string {
	a.mu.Lock()
	cur := a.header
	a.mu.Unlock()
	if cur != "" && cur != used {
		return cur
	}
	if a.oauth == nil && a.file == nil {
		return ""
	}
	h, err := a.current(ctx, true)
	if err != nil {
		a.log.Warn("REST catalog refused the token (401) and a new one could not be had", "source", a.what, "error", err)
		return ""
	}
	if h == used {
		return ""
	}
	return h
}

// tokenFile is a bearer token in a file, re-read when the file changes:
// Kubernetes rotates a projected token by pointing a symlink at a new
// directory, which os.Stat (following links) sees as another file.
type tokenFile struct {
	path  string
	token string
	info  os.FileInfo
}

// read returns the token, reading the file again when it changed (or
// always, with force). A file that became unreadable keeps the last token
// until it can be read again; an empty one is an error.
func (f *tokenFile) read(force bool) (string, error) {
	info, err := os.Stat(f.path)
	if err != nil {
		if f.token != "" && !force {
			return f.token, nil
		}
		return "", fmt.Errorf("read the token file: %w", err)
	}
	if !force && f.info != nil && os.SameFile(info, f.info) && info.ModTime().Equal(f.info.ModTime()) && info.Size() == f.info.Size() {
		return f.token, nil
	}
	b, err := os.ReadFile(f.path)
	if err != nil {
		return "", fmt.Errorf("read the token file: %w", err)
	}
	tok := string(bytes.TrimSpace(b))
	if tok == "" {
		return "", fmt.Errorf("the token file %s is empty", f.path)
	}
	if strings.ContainsAny(tok, "\r\n") {
		return "", fmt.Errorf("the token file %s holds more than one line", f.path)
	}
	f.token, f.info = tok, info
	return tok, nil
}

// oauthSource is OAuth2's client-credentials flow as iceberg-go sets it
// up (scope "catalog" unless given, audience and resource as endpoint
// parameters, the credential "id:secret" or a bare secret), with a token
// kept until shortly before it expires.
type oauthSource struct {
	cfg    clientcredentials.Config
	client *http.Client
	now    func() time.Time
	tok    *oauth2.Token
	got    time.Time
}

func newOAuthSource(props map[string]string, base http.RoundTripper) (*oauthSource, error) {
	tokenURL := props[propOAuthServer]
	if tokenURL == "" {
		tokenURL = props[propAuthURL]
	}
	if tokenURL == "" {
		u, err := url.Parse(props["uri"])
		if err != nil {
			return nil, configErrorf("a rest catalog's uri: %w", err)
		}
		tokenURL = u.JoinPath("v1", "oauth", "tokens").String()
	} else if u, err := url.Parse(tokenURL); err != nil || u.Host == "" {
		return nil, configErrorf("%s must be an absolute URL, got %q", propOAuthServer, redact.String(tokenURL))
	}
	id, secret, found := strings.Cut(props[propCredential], ":")
	if !found {
		id, secret = "", props[propCredential]
	}
	scope := props[propScope]
	if scope == "" {
		scope = "catalog"
	}
	cfg := clientcredentials.Config{ClientID: id, ClientSecret: secret, TokenURL: tokenURL,
		Scopes: []string{scope}, AuthStyle: oauth2.AuthStyleInParams}
	if aud, res := props[propAudience], props[propResource]; aud != "" || res != "" {
		cfg.EndpointParams = url.Values{}
		if aud != "" {
			cfg.EndpointParams.Set(propAudience, aud)
		}
		if res != "" {
			cfg.EndpointParams.Set(propResource, res)
		}
	}
	return &oauthSource{cfg: cfg, client: &http.Client{Transport: base, Timeout: oauthTimeout}, now: time.Now}, nil
}

// token is the current access token, fetched again when fresh, when none
// is held, or when the held one is within its renewal margin of expiry: a
// quarter of its lifetime, at most a minute, so a request never leaves
// with a token that expires on its way.
func (o *oauthSource) token(ctx context.Context, fresh bool) (string, error) {
	if !fresh && o.tok != nil && o.tok.AccessToken != "" {
		if o.tok.Expiry.IsZero() {
			return o.tok.AccessToken, nil
		}
		margin := min(time.Minute, o.tok.Expiry.Sub(o.got)/4)
		if o.now().Before(o.tok.Expiry.Add(-margin)) {
			return o.tok.AccessToken, nil
		}
	}
	ctx = context.WithValue(ctx, oauth2.HTTPClient, o.client)
	tok, err := o.cfg.Token(ctx)
	if err != nil {
		var re *oauth2.RetrieveError
		if errors.As(err, &re) {
			// Its Error() quotes the whole answer; keep the parts the
			// spec defines.
			status := 0
			if re.Response != nil {
				status = re.Response.StatusCode
			}
			return "", fmt.Errorf("the token endpoint refused the login (HTTP %d): %s %s",
				status, re.ErrorCode, re.ErrorDescription)
		}
		return "", fmt.Errorf("log in at the token endpoint: %w", err)
	}
	// oauth2 dates the expiry by its own clock; keep the lifetime the
	// server gave, on this source's clock.
	got := o.now()
	if !tok.Expiry.IsZero() {
		tok.Expiry = got.Add(time.Until(tok.Expiry))
	}
	o.tok, o.got = tok, got
	return tok.AccessToken, nil
}

// reauthTransport sends a request refused with 401 Unauthorized (or 419,
// the REST spec's authorization expired) once more with a renewed token.
// It sits below iceberg-go's session transport, which set the header.
type reauthTransport struct {
	base http.RoundTripper
	auth *restAuth
}

func (t reauthTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	rsp, err := t.base.RoundTrip(r)
	if err != nil || (rsp.StatusCode != http.StatusUnauthorized && rsp.StatusCode != 419) {
		return rsp, err
	}
	used := r.Header.Get("Authorization")
	if used == "" || !strings.HasPrefix(used, "Bearer ") || (r.Body != nil && r.Body != http.NoBody && r.GetBody == nil) {
		return rsp, nil
	}
	next := t.auth.renew(r.Context(), used)
	if next == "" {
		t.auth.log.Warn("REST catalog refused the token and there is none newer to try", "status", rsp.StatusCode,
			"source", t.auth.what, "method", r.Method, "path", r.URL.Path)
		return rsp, nil
	}
	again := r.Clone(r.Context())
	if r.GetBody != nil {
		body, err := r.GetBody()
		if err != nil {
			return rsp, nil
		}
		again.Body = body
	}
	_ = rsp.Body.Close()
	again.Header.Set("Authorization", next)
	rsp, err = t.base.RoundTrip(again)
	if err == nil && (rsp.StatusCode == http.StatusUnauthorized || rsp.StatusCode == 419) {
		t.auth.log.Warn("REST catalog refused the renewed token too", "status", rsp.StatusCode, "source", t.auth.what,
			"method", r.Method, "path", r.URL.Path)
	}
	return rsp, err
}

// authSource says where a REST catalog's token comes from, "" when
// reactor does not handle its authentication (none, or SigV4).
func authSource(props map[string]string) string {
	if props == nil || props["type"] != TypeREST || strings.EqualFold(props[propSigV4], "true") {
		return ""
	}
	switch {
	case props[TokenFileProperty] != "":
		return "the token in " + props[TokenFileProperty]
	case props[propToken] != "":
		return "the static token property"
	case props[propCredential] != "":
		return "OAuth2 client credentials (credential)"
	}
	return ""
}

// authRefused explains a call the REST catalog refused as unauthorized
// after reactor's one renewal (reauthTransport): the credentials
// themselves are wrong or revoked, which only the operator can fix.
func authRefused(describe, source string, err error) error {
	if source == "" || !(errors.Is(err, rest.ErrUnauthorized) || errors.Is(err, rest.ErrAuthorizationExpired)) {
		return err
	}
	if source == "the static token property" {
		return fmt.Errorf("%s refused %s (401 Unauthorized); a static token cannot be renewed: set a valid one, or use %s (--catalog-token-file) or OAuth2 credential: %w",
			describe, source, TokenFileProperty, err)
	}
	return fmt.Errorf("%s refused %s (401 Unauthorized), also after renewing it once: check the credentials and what the catalog grants them: %w",
		describe, source, err)
}
