package objectio_test

import (
	"context"
	"net"
	"strings"
	"testing"
	"time"

	iceio "github.com/apache/iceberg-go/io"
)

// TestSilentGCSAndAzureFailTheRead: a store that accepts connections and
// never answers fails a GCS or Azure read after reactor.s3.read-timeout
// per attempt and reactor.s3.max-attempts attempts, as on S3, instead of
// holding the job's slot.
func TestSilentGCSAndAzureFailTheRead(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	done := make(chan struct{})
	defer close(done)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() { <-done; c.Close() }() // read nothing, answer nothing
		}
	}()
	addr := ln.Addr().String()
	bounds := map[string]string{"reactor.s3.read-timeout": "300ms", "reactor.s3.max-attempts": "2"}
	for _, tt := range []struct {
		loc   string
		props map[string]string
	}{
		{"gs://lake/t/data/f.parquet", map[string]string{"gcs.service.host": "http://" + addr + "/storage/v1/", "gcs.no-auth": "true"}},
		{"abfs://lake@acct.dfs.core.windows.net/t/data/f.parquet", map[string]string{"adls.auth.shared-key.account.name": "acct",
			"adls.auth.shared-key.account.key": "a2V5", "adls.endpoint": addr, "adls.protocol": "http"}},
	} {
		t.Run(strings.SplitN(tt.loc, ":", 2)[0], func(t *testing.T) {
			props := map[string]string{}
			for k, v := range bounds {
				props[k] = v
			}
			for k, v := range tt.props {
				props[k] = v
			}
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			fsys, err := iceio.LoadFS(ctx, props, tt.loc)
			if err != nil {
				t.Fatal(err)
			}
			start := time.Now()
			_, err = fsys.Open(tt.loc)
			took := time.Since(start)
			if err == nil || ctx.Err() != nil {
				t.Fatalf("Open against a silent store: %v after %s (context: %v)", err, took, ctx.Err())
			}
			t.Logf("failed after %s: %v", took.Round(time.Millisecond), err)
		})
	}
}
