package s3gateway

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// connCounter is a TCP forwarder to the gateway that counts the
// connections clients open through it.
type connCounter struct {
	ln    net.Listener
	conns atomic.Int64
	wg    sync.WaitGroup
}

func newConnCounter(t *testing.T, target string) *connCounter {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	c := &connCounter{ln: ln}
	var (
		mu   sync.Mutex
		open []net.Conn
	)
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		for {
			in, err := ln.Accept()
			if err != nil {
				return
			}
			c.conns.Add(1)
			out, err := net.Dial("tcp", target)
			if err != nil {
				_ = in.Close()
				continue
			}
			mu.Lock()
			open = append(open, in, out)
			mu.Unlock()
			c.wg.Add(2)
			go func() { defer c.wg.Done(); _, _ = io.Copy(out, in); _ = out.Close() }()
			go func() { defer c.wg.Done(); _, _ = io.Copy(in, out); _ = in.Close() }()
		}
	}()
	t.Cleanup(func() {
		_ = ln.Close()
		mu.Lock()
		for _, c := range open {
			_ = c.Close()
		}
		mu.Unlock()
		c.wg.Wait()
	})
	return c
}

// TestConnectionsAreKeptAlive: a client making N sequential requests
// (puts, whole and ranged gets, heads) opens one connection, not N, as
// with S3 itself, so tests can count the connections reactor opens.
func TestConnectionsAreKeptAlive(t *testing.T) {
	ctx := context.Background()
	const bucket, n = "keepalive", 40
	if err := testGW.CreateBucket(ctx, bucket); err != nil {
		t.Fatal(err)
	}
	cc := newConnCounter(t, strings.TrimPrefix(testGW.Endpoint(), "http://"))
	access, secret, region := testGW.Credentials()
	client := s3.New(s3.Options{
		BaseEndpoint: aws.String("http://" + cc.ln.Addr().String()),
		Region:       region,
		Credentials:  credentials.NewStaticCredentialsProvider(access, secret, ""),
		UsePathStyle: true,
		HTTPClient:   &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 4}},
	})
	body := bytes.Repeat([]byte("0123456789"), 1000)
	for i := range n {
		key := aws.String("k")
		var err error
		switch i % 4 {
		case 0:
			_, err = client.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(bucket), Key: key, Body: bytes.NewReader(body)})
		case 1:
			var out *s3.GetObjectOutput
			if out, err = client.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(bucket), Key: key}); err == nil {
				_, err = io.Copy(io.Discard, out.Body)
				_ = out.Body.Close()
			}
		case 2:
			var out *s3.GetObjectOutput
			if out, err = client.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(bucket), Key: key, Range: aws.String("bytes=-100")}); err == nil {
				var got []byte
				got, err = io.ReadAll(out.Body)
				_ = out.Body.Close()
				if err == nil && len(got) != 100 {
					t.Fatalf("suffix range: got %d bytes, want 100", len(got))
				}
			}
		case 3:
			_, err = client.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(bucket), Key: key})
		}
		if err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
	}
	if got := cc.conns.Load(); got != 1 {
		t.Fatalf("%d sequential requests opened %d connections, want 1 (is the gateway closing connections?)", n, got)
	}
}
