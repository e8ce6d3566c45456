package objectio

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"strconv"
	"time"

	"cloud.google.com/go/storage"
	iceio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/io/gocloud/blobfs"
	"github.com/apache/iceberg-go/io/gocloud/gcs"
	"gocloud.dev/blob/gcsblob"
	"gocloud.dev/gcp"
	"golang.org/x/oauth2"
	"golang.org/x/oauth2/google"
)

// gcsSchemes are the schemes iceberg-go's GCS IO registers.
var gcsSchemes = []string{"gs"}

// gcsScope is the scope iceberg-go asks a key file's credentials for.
const gcsScope = "https://www.googleapis.com/auth/devstorage.read_write"

// openGCS is the FileIO factory for gs:// locations: iceberg-go's
// configuration (gcs.* properties, the same credentials in the same
// order), this package's transport and shaping.
func (p *provider) openGCS(ctx context.Context, parsed *url.URL, props map[string]string) (iceio.IO, error) {
	sh, err := shapeOf(props)
	if err != nil {
		return nil, err
	}
	transport, err := p.sharedTransport(props)
	if err != nil {
		return nil, err
	}
	creds, err := gcsCredentials(ctx, props)
	if err != nil {
		return nil, err
	}
	var client *gcp.HTTPClient
	if creds == nil {
		client = gcp.NewAnonymousHTTPClient(transport)
	} else if client, err = gcp.NewHTTPClient(transport, gcp.CredentialsTokenSource(creds)); err != nil {
		return nil, err
	}
	bucket, err := gcsblob.OpenBucket(ctx, client, parsed.Host, gcs.ParseGCSConfig(props))
	if err != nil {
		return nil, err
	}
	// The GCS client retries an idempotent request until its context
	// ends, and a job's context does not: bounded as on S3.
	var sc *storage.Client
	if bucket.As(&sc) {
		sc.SetRetry(storage.WithMaxAttempts(sh.attempts))
	}
	extract := blobfs.DefaultObjectLocationExtractor(parsed.Host, gcsSchemes...)
	return &BucketIO{FileIO: blobfs.New(ctx, bucket, extract), ctx: ctx, extract: extract,
		whole: sh.whole, rng: sh.rng, readers: sh.readers, attempts: sh.attempts, limits: sh.limits,
		expires: credentialsExpiry(props)}, nil
}

// gcsCredentials resolves credentials as iceberg-go's GCS IO does (its
// resolver is not exported): gcs.no-auth, then a vended gcs.oauth2.token
// (with gcs.oauth2.token-expires-at), then gcs.jsonkey, gcs.keypath (of
// gcs.credtype, a service account by default), then Application Default
// Credentials. Nil means anonymous.
func gcsCredentials(ctx context.Context, props map[string]string) (*google.Credentials, error) {
	if noAuth, err := strconv.ParseBool(props[iceio.GCSNoAuth]); err == nil && noAuth {
		return nil, nil
	}
	if tok := props[iceio.GCSOAuthToken]; tok != "" {
		t := &oauth2.Token{AccessToken: tok}
		if ms, err := strconv.ParseInt(props[iceio.GCSOAuthExpiresAt], 10, 64); err == nil {
			t.Expiry = time.UnixMilli(ms)
		}
		return &google.Credentials{TokenSource: oauth2.StaticTokenSource(t)}, nil
	}
	credType := google.ServiceAccount
	switch v := props[iceio.GCSCredType]; v {
	case "service_account", "authorized_user", "impersonated_service_account", "external_account":
		credType = google.CredentialsType(v)
	}
	parse := func(data []byte, source string) (*google.Credentials, error) {
		creds, err := google.CredentialsFromJSONWithType(ctx, data, credType, gcsScope)
		if err != nil {
			return nil, fmt.Errorf("gcs: parsing %s: set %s if the key is not a service account: %w", source, iceio.GCSCredType, err)
		}
		return creds, nil
	}
	if key := props[iceio.GCSJSONKey]; key != "" {
		return parse([]byte(key), iceio.GCSJSONKey)
	}
	if path := props[iceio.GCSKeyPath]; path != "" {
		data, err := os.ReadFile(path)
		if err != nil {
			return nil, fmt.Errorf("gcs: reading %s %q: %w", iceio.GCSKeyPath, path, err)
		}
		return parse(data, fmt.Sprintf("%s %q", iceio.GCSKeyPath, path))
	}
	creds, err := gcp.DefaultCredentials(ctx)
	if err != nil {
		return nil, fmt.Errorf("gcs: no credentials found; set %s=true for anonymous/public bucket access: %w", iceio.GCSNoAuth, err)
	}
	return creds, nil
}
