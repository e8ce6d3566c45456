package objectio

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strings"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/azidentity"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"
	iceio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/io/gocloud/blobfs"
	"gocloud.dev/blob/azureblob"
)

// azureSchemes are the schemes iceberg-go's Azure IO registers: ADLS Gen2
// (abfs, abfss) and Blob storage (wasb, wasbs) reach the same blobs
// through the Blob API.
var azureSchemes = []string{"abfs", "abfss", "wasb", "wasbs"}

// adlsURI is container@account.host/path, as iceberg-go's Azure IO reads it.
var adlsURI = regexp.MustCompile(`^(abfss?|wasbs?)://([^/?#]+)(.*)?$`)

// openAzure is the FileIO factory for abfs(s):// and wasb(s)://
// locations: iceberg-go's configuration (adls.* properties, the same
// credentials in the same order), this package's transport and shaping.
func (p *provider) openAzure(ctx context.Context, parsed *url.URL, props map[string]string) (iceio.IO, error) {
	sh, err := shapeOf(props)
	if err != nil {
		return nil, err
	}
	transport, err := p.sharedTransport(props)
	if err != nil {
		return nil, err
	}
	// Attempts bounded as on S3 (azcore reads 0 retries as its default
	// of 3, and a negative number as none).
	retries := int32(sh.attempts - 1)
	if retries == 0 {
		retries = -1
	}
	client, err := azureContainer(parsed, props, &container.ClientOptions{
		ClientOptions: azcore.ClientOptions{Transport: &http.Client{Transport: transport},
			Retry: policy.RetryOptions{MaxRetries: retries}},
	})
	if err != nil {
		return nil, err
	}
	bucket, err := azureblob.OpenBucket(ctx, client, nil)
	if err != nil {
		return nil, err
	}
	extract := adlsExtractor(parsed)
	return &BucketIO{FileIO: blobfs.New(ctx, bucket, extract), ctx: ctx, extract: extract,
		whole: sh.whole, rng: sh.rng, readers: sh.readers, attempts: sh.attempts, limits: sh.limits,
		expires: credentialsExpiry(props)}, nil
}

// azureContainer builds the container client as iceberg-go's Azure IO
// does (its builder is not exported), with opts: a shared key
// (adls.auth.shared-key.account.name and .key), else a SAS token for the
// host (adls.sas-token.<host>), else a connection string for the account
// (adls.connection-string.<account>), else a managed identity
// (adls.auth.managed-identity.enabled, adls.client-id), else the Azure
// default credential chain. adls.endpoint and adls.protocol override the
// storage domain and scheme.
func azureContainer(parsed *url.URL, props map[string]string, opts *container.ClientOptions) (*container.Client, error) {
	accountName, containerName, hostname, err := adlsParts(parsed)
	if err != nil {
		return nil, err
	}
	endpoint, protocol := props[iceio.ADLSEndpoint], props[iceio.ADLSProtocol]
	containerURL := func(sas string) (string, error) {
		svc, err := azureblob.NewServiceURL(&azureblob.ServiceURLOptions{
			AccountName: accountName, SASToken: sas, Protocol: protocol, StorageDomain: endpoint,
		})
		if err != nil {
			return "", err
		}
		return url.JoinPath(string(svc), containerName)
	}
	if name := props[iceio.ADLSSharedKeyAccountName]; name != "" {
		key := props[iceio.ADLSSharedKeyAccountKey]
		if key == "" {
			return nil, fmt.Errorf("azure authentication: shared-key requires both %s and %s",
				iceio.ADLSSharedKeyAccountName, iceio.ADLSSharedKeyAccountKey)
		}
		u, err := containerURL("")
		if err != nil {
			return nil, err
		}
		cred, err := azblob.NewSharedKeyCredential(name, key)
		if err != nil {
			return nil, fmt.Errorf("azure shared key: %w", err)
		}
		return container.NewClientWithSharedKeyCredential(u, cred, opts)
	}
	if sas, ok := props[iceio.ADLSSasTokenPrefix+hostname]; ok {
		u, err := containerURL(sas)
		if err != nil {
			return nil, err
		}
		return container.NewClientWithNoCredential(u, opts)
	}
	if conn, ok := props[iceio.ADLSConnectionStringPrefix+accountName]; ok {
		return container.NewClientFromConnectionString(conn, containerName, opts)
	}
	u, err := containerURL("")
	if err != nil {
		return nil, err
	}
	var cred azcore.TokenCredential
	if props[iceio.ADLSManagedIdentityEnabled] == "true" {
		var mi *azidentity.ManagedIdentityCredentialOptions
		if id := props[iceio.ADLSClientID]; id != "" {
			mi = &azidentity.ManagedIdentityCredentialOptions{ID: azidentity.ClientID(id)}
		}
		cred, err = azidentity.NewManagedIdentityCredential(mi)
	} else {
		cred, err = azidentity.NewDefaultAzureCredential(nil)
	}
	if err != nil {
		return nil, fmt.Errorf("azure credential: %w", err)
	}
	return container.NewClient(u, cred, opts)
}

// adlsParts splits container@account.host: the account is the host's
// first label.
func adlsParts(u *url.URL) (account, containerName, hostname string, err error) {
	containerName = u.User.Username()
	if containerName == "" {
		return "", "", "", errors.New("container name is required for azure bucket")
	}
	hostname = u.Hostname()
	account, _, _ = strings.Cut(hostname, ".")
	if account == "" {
		return "", "", "", errors.New("account name is required for azure bucket")
	}
	return account, containerName, hostname, nil
}

// adlsExtractor accepts locations of the one container@host the FileIO
// was built for, under any of the Azure schemes, as iceberg-go's does.
func adlsExtractor(parsed *url.URL) blobfs.ObjectLocationExtractor {
	want := parsed.Hostname()
	if parsed.User != nil {
		want = parsed.User.Username() + "@" + want
	}
	return func(loc string) (blobfs.ObjectLocation, error) {
		m := adlsURI.FindStringSubmatch(loc)
		if len(m) < 4 {
			return blobfs.ObjectLocation{}, fmt.Errorf("invalid ADLS location: %s", loc)
		}
		if m[2] != want {
			return blobfs.ObjectLocation{}, fmt.Errorf("%w: URI authority %q does not match configured authority %q",
				blobfs.ErrUnsupportedObjectAuthority, m[2], want)
		}
		if m[3] != "" && !strings.HasPrefix(m[3], "/") {
			return blobfs.ObjectLocation{}, fmt.Errorf("URI authority %q must be followed by an object path: %s", m[2], loc)
		}
		key := strings.TrimPrefix(m[3], "/")
		parsedLoc := blobfs.NewObjectLocation(m[1], m[2], key)
		if key == "" {
			return parsedLoc, fmt.Errorf("%w: %s", blobfs.ErrEmptyObjectKey, loc)
		}
		return parsedLoc, nil
	}
}
