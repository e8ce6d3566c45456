package objectio

import (
	"errors"
	"net/url"
	"strings"
	"testing"

	"github.com/apache/iceberg-go/io/gocloud/blobfs"
)

// TestADLSExtractor: the four Azure schemes reach the container the
// FileIO was built for, by its exact container@host; anything else is
// refused, as iceberg-go's Azure IO refuses it.
func TestADLSExtractor(t *testing.T) {
	u, _ := url.Parse("abfss://lake@acct.dfs.core.windows.net/wh")
	extract := adlsExtractor(u)
	for _, ok := range []string{
		"abfss://lake@acct.dfs.core.windows.net/wh/t/x.parquet",
		"abfs://lake@acct.dfs.core.windows.net/wh/t/x.parquet",
		"wasbs://lake@acct.dfs.core.windows.net/wh/t/x.parquet",
	} {
		loc, err := extract(ok)
		if err != nil || loc.Key() != "wh/t/x.parquet" {
			t.Errorf("%s: key %q, %v", ok, loc.Key(), err)
		}
	}
	for _, bad := range []string{
		"abfss://pond@acct.dfs.core.windows.net/wh/x",
		"abfss://lake@other.dfs.core.windows.net/wh/x",
		"abfss://lake@acct.blob.core.windows.net/wh/x",
		"gs://lake/wh/x",
	} {
		if _, err := extract(bad); err == nil {
			t.Errorf("%s accepted", bad)
		}
	}
	if _, err := extract("abfss://lake@acct.dfs.core.windows.net"); !errors.Is(err, blobfs.ErrEmptyObjectKey) {
		t.Errorf("the container itself: %v, want ErrEmptyObjectKey", err)
	}
}

// TestAzureContainerCredentials: the credential iceberg-go's Azure IO
// would pick, in its order, and the container URL it would reach.
func TestAzureContainerCredentials(t *testing.T) {
	u, _ := url.Parse("abfss://lake@acct.dfs.core.windows.net/wh")
	for _, tt := range []struct {
		name  string
		props map[string]string
		url   string
		err   string
	}{
		{"shared key, default domain", map[string]string{"adls.auth.shared-key.account.name": "acct", "adls.auth.shared-key.account.key": "a2V5"},
			"https://acct.blob.core.windows.net/lake", ""},
		{"shared key, emulator", map[string]string{"adls.auth.shared-key.account.name": "acct", "adls.auth.shared-key.account.key": "a2V5",
			"adls.endpoint": "127.0.0.1:10000", "adls.protocol": "http"}, "http://127.0.0.1:10000/acct/lake", ""},
		{"shared key without its key", map[string]string{"adls.auth.shared-key.account.name": "acct"}, "", "requires both"},
		{"SAS token for the host", map[string]string{"adls.sas-token.acct.dfs.core.windows.net": "sv=1&sig=x"},
			"https://acct.blob.core.windows.net/lake?sv=1&sig=x", ""},
		{"connection string for the account", map[string]string{"adls.connection-string.acct": "DefaultEndpointsProtocol=http;AccountName=acct;AccountKey=a2V5;BlobEndpoint=http://127.0.0.1:1/acct;"},
			"http://127.0.0.1:1/acct/lake", ""},
	} {
		c, err := azureContainer(u, tt.props, nil)
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("%s: %v, want an error with %q", tt.name, err, tt.err)
			}
			continue
		}
		if err != nil || c.URL() != tt.url {
			t.Errorf("%s: %v %v; want %s", tt.name, c.URL(), err, tt.url)
		}
	}
}
