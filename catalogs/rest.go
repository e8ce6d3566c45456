package catalogs

import (
	"context"
	"crypto/tls"
	"log/slog"
	"maps"
	"net/http"
	"strings"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/catalog/rest"
)

// openREST opens a REST catalog. When reactor handles its bearer token (a
// token file, a static token, OAuth2 client credentials) the catalog gets
// reactor's restAuth and a transport that renews a refused token once;
// otherwise (no authentication, SigV4) it is iceberg-go's, as
// catalog.Load builds it.
func openREST(ctx context.Context, name string, props map[string]string, log *slog.Logger, now func() time.Time) (catalog.Catalog, error) {
	sigv4 := strings.EqualFold(props[propSigV4], "true")
	if sigv4 && props[TokenFileProperty] != "" {
		return nil, configErrorf("%s and %s both set: SigV4 signs every request with AWS credentials, a bearer token has no place there",
			TokenFileProperty, propSigV4)
	}
	if sigv4 || authSource(props) == "" {
		return catalog.Load(ctx, name, iceberg.Properties(props))
	}
	base := &http.Transport{Proxy: http.ProxyFromEnvironment}
	if strings.EqualFold(props["rest.tls.skip-verify"], "true") {
		base.TLSClientConfig = &tls.Config{InsecureSkipVerify: true}
	}
	auth, err := newRESTAuth(props, base, log, now)
	if err != nil {
		base.CloseIdleConnections()
		return nil, err
	}
	// The rest goes to iceberg-go as its own properties (it parses them
	// again after the server's /v1/config); the secrets stay with auth,
	// out of the properties every table and its FileIO inherit.
	extra := iceberg.Properties(maps.Clone(props))
	for _, k := range []string{"uri", "type", propToken, propCredential, TokenFileProperty} {
		delete(extra, k)
	}
	opts := []rest.Option{
		rest.WithAdditionalProps(extra),
		rest.WithAuthManager(auth),
		rest.WithTransportFactory(func(*tls.Config) (http.RoundTripper, func()) {
			return reauthTransport{base: base, auth: auth}, base.CloseIdleConnections
		}),
	}
	if wh := props["warehouse"]; wh != "" {
		opts = append(opts, rest.WithWarehouseLocation(wh))
	}
	cat, err := rest.NewCatalog(ctx, name, props["uri"], opts...)
	if err != nil {
		base.CloseIdleConnections()
		return nil, err
	}
	log.Info("REST catalog authentication: reactor renews the token", "source", auth.what)
	return cat, nil
}
