package objectio_test

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	iceio "github.com/apache/iceberg-go/io"

	"github.com/icereactor/reactor/objectio"
)

// TestThrottlingIsRetried: a store answering 503 SlowDown to the first
// attempts of a read is retried with backoff and the read succeeds; one
// that keeps throttling fails the read with an error saying so, after
// the configured attempts and no more.
func TestThrottlingIsRetried(t *testing.T) {
	bucket := newBucket(t)
	body := randomBytes(10 << 10)
	put(t, bucket, "obj/throttled.bin", body)
	var throttled atomic.Int64
	testFront.failing(t, func(method, kind string) bool {
		return method == "GET" && strings.HasPrefix(kind, "obj") && throttled.Add(1) <= 2
	})
	fsys, err := iceio.LoadFS(context.Background(), props(), "s3://"+bucket)
	if err != nil {
		t.Fatal(err)
	}
	testFront.reset()
	f, err := fsys.Open("s3://" + bucket + "/obj/throttled.bin")
	if err != nil {
		t.Fatalf("two throttled attempts of %d: %v", objectio.DefaultMaxAttempts, err)
	}
	if got, err := io.ReadAll(f); err != nil || string(got) != string(body) {
		t.Fatalf("read after retries: %d bytes, %v", len(got), err)
	}
	if reqs, _ := testFront.reset(); reqs["503 GET obj ranged"] != 2 || reqs["GET obj ranged"] != 3 {
		t.Fatalf("requests %v, want 2 throttled and 1 served", reqs)
	}

	throttled.Store(-1 << 40) // throttle everything from now on
	fsys, err = iceio.LoadFS(context.Background(), props(objectio.MaxAttemptsProperty, "2"), "s3://"+bucket)
	if err != nil {
		t.Fatal(err)
	}
	_, err = fsys.Open("s3://" + bucket + "/obj/throttled.bin")
	if err == nil || !strings.Contains(err.Error(), "SlowDown") || errors.Is(err, context.Canceled) {
		t.Fatalf("Open against a store that keeps throttling: %v, want a SlowDown error", err)
	}
	if reqs, _ := testFront.reset(); reqs["503 GET obj ranged"] != 2 {
		t.Fatalf("requests %v, want exactly the 2 attempts configured", reqs)
	}
}

// TestFailedMultipartUploadIsAborted: a large write goes up in parts; a
// store that keeps throttling the parts fails the write, the upload is
// aborted, and no object (partial or whole) is left at the key.
func TestFailedMultipartUploadIsAborted(t *testing.T) {
	bucket := newBucket(t)
	fsys, err := iceio.LoadFS(context.Background(), props(objectio.MaxAttemptsProperty, "1"), "s3://"+bucket)
	if err != nil {
		t.Fatal(err)
	}
	testFront.failing(t, func(method, kind string) bool { return method == "PUT" && kind == "data multipart" })
	testFront.reset()
	w, err := fsys.(iceio.WriteFileIO).Create("s3://" + bucket + "/obj/large.parquet")
	if err != nil {
		t.Fatal(err)
	}
	_, werr := w.Write(randomBytes(24 << 20))
	cerr := w.Close()
	reqs, _ := testFront.reset()
	if werr == nil && cerr == nil {
		t.Fatalf("a write whose parts are all refused succeeded (requests %v)", reqs)
	}
	if reqs["POST data multipart"] == 0 || reqs["503 PUT data multipart"] == 0 || reqs["DELETE data multipart"] != 1 {
		t.Fatalf("requests %v, want a multipart upload started, its parts refused and the upload aborted once", reqs)
	}
	testFront.failing(t, nil)
	if _, err := fsys.Open("s3://" + bucket + "/obj/large.parquet"); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("after the failed upload Open = %v, want fs.ErrNotExist", err)
	}
}

// TestResetMidBodyIsRetried: a GET whose connection is cut after part of
// the body is made again and the read returns the whole object; a store
// that cuts every attempt fails the read with an unexpected EOF, after
// the configured attempts and no more, and never returns the part.
func TestResetMidBodyIsRetried(t *testing.T) {
	bucket := newBucket(t)
	body := randomBytes(200 << 10)
	put(t, bucket, "obj/cut.bin", body)
	var cuts atomic.Int64
	testFront.cutting(t, func(method, kind, _ string) bool {
		return method == "GET" && strings.HasPrefix(kind, "obj") && cuts.Add(1) <= 2
	})
	fsys, err := iceio.LoadFS(context.Background(), props(), "s3://"+bucket)
	if err != nil {
		t.Fatal(err)
	}
	testFront.reset()
	f, err := fsys.Open("s3://" + bucket + "/obj/cut.bin")
	if err != nil {
		t.Fatalf("two cut attempts of %d: %v", objectio.DefaultMaxAttempts, err)
	}
	readLikeParquet(t, f, body)
	if reqs, _ := testFront.reset(); reqs["cut GET obj ranged"] != 2 || reqs["GET obj ranged"] != 3 {
		t.Fatalf("requests %v, want 2 cut and 1 whole", reqs)
	}

	cuts.Store(-1 << 40) // cut everything from now on
	fsys, err = iceio.LoadFS(context.Background(), props(objectio.MaxAttemptsProperty, "2"), "s3://"+bucket)
	if err != nil {
		t.Fatal(err)
	}
	f, err = fsys.Open("s3://" + bucket + "/obj/cut.bin")
	if err == nil || !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("Open against a store that cuts every body: file %v, %v; want an unexpected EOF", f, err)
	}
	if reqs, _ := testFront.reset(); reqs["cut GET obj ranged"] != 2 {
		t.Fatalf("requests %v, want exactly the 2 attempts configured", reqs)
	}
}

// TestSilentStoreTimesOut: a store that accepts connections and never
// answers (a TCP listener that reads nothing and writes nothing) fails
// every request after the read timeout and the configured attempts: an
// Open, a write, and the default timeout is set when no property is.
func TestSilentStoreTimesOut(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var accepted atomic.Int64
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			accepted.Add(1)
			defer c.Close() // held open, silent, until the test ends
		}
	}()
	p := props("s3.endpoint", "http://"+ln.Addr().String(), objectio.ReadTimeoutProperty, "300ms", objectio.MaxAttemptsProperty, "2")
	fsys, err := iceio.LoadFS(context.Background(), p, "s3://silent")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 2)
	go func() {
		_, err := fsys.Open("s3://silent/metadata/v1.metadata.json")
		done <- err
	}()
	go func() {
		w, err := fsys.(iceio.WriteFileIO).Create("s3://silent/data/f.parquet")
		if err == nil {
			if _, err = w.Write(randomBytes(64 << 10)); err == nil {
				err = w.Close()
			}
		}
		done <- err
	}()
	for range 2 {
		select {
		case err := <-done:
			if err == nil || !strings.Contains(err.Error(), "timeout") {
				t.Errorf("against a silent store: %v, want a timeout", err)
			}
		case <-time.After(time.Minute):
			t.Fatal("a request to a silent store did not time out")
		}
	}
	if n := accepted.Load(); n < 2 {
		t.Errorf("%d connections accepted: the requests never reached the store", n)
	}
	if _, err := iceio.LoadFS(context.Background(), props(objectio.ReadTimeoutProperty, "soon"), "s3://x"); err == nil ||
		!strings.Contains(err.Error(), objectio.ReadTimeoutProperty) {
		t.Errorf("a bad read timeout: %v", err)
	}
}
