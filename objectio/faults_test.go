package objectio_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"io"
	"io/fs"
	"net"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	iceio "github.com/apache/iceberg-go/io"

	"github.com/icereactor/reactor/objectio"
	"github.com/icereactor/reactor/sizelimit"
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

// TestOversizedFilesAreRefused: a metadata file or manifest over its
// limit is refused at Open and ReadFile from the first GET (the object's
// last whole-object bytes), reading no more of it: refusing a 40 MiB
// metadata file allocates about the whole-object size, not 40 MiB. A
// Parquet file whose footer is over its limit is refused by its last 8
// bytes.
func TestOversizedFilesAreRefused(t *testing.T) {
	bucket := newBucket(t)
	put(t, bucket, "t/metadata/00009-x.metadata.json", bytes.Repeat([]byte(" "), 40<<20))
	put(t, bucket, "t/metadata/m-m0.avro", randomBytes(64<<10))
	pq := randomBytes(32 << 10)
	binary.LittleEndian.PutUint32(pq[len(pq)-8:], 20<<10)
	copy(pq[len(pq)-4:], "PAR1")
	put(t, bucket, "t/data/f.parquet", pq)
	fsys, err := iceio.LoadFS(context.Background(), props(sizelimit.MetadataJSONProperty, "1048576", sizelimit.ManifestProperty, "32768",
		sizelimit.ParquetFooterProperty, "16384", objectio.WholeObjectProperty, "1048576"), "s3://"+bucket)
	if err != nil {
		t.Fatal(err)
	}
	meta := "s3://" + bucket + "/t/metadata/00009-x.metadata.json"
	var e *sizelimit.Error
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	_, rerr := fsys.(iceio.ReadFileIO).ReadFile(meta)
	_, oerr := fsys.Open(meta)
	runtime.ReadMemStats(&after)
	if !errors.As(rerr, &e) || !errors.As(oerr, &e) || e.Kind != sizelimit.MetadataJSON || e.Size != 40<<20 {
		t.Fatalf("a 40 MiB metadata file: ReadFile %v, Open %v", rerr, oerr)
	}
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 8<<20 {
		t.Errorf("refusing a 40 MiB metadata file allocated %d MiB", alloc>>20)
	}
	if _, err := fsys.Open("s3://" + bucket + "/t/metadata/m-m0.avro"); !errors.As(err, &e) || e.Kind != sizelimit.Manifest {
		t.Errorf("a manifest over its limit: %v", err)
	}
	if _, err := fsys.Open("s3://" + bucket + "/t/data/f.parquet"); !errors.As(err, &e) || e.Kind != sizelimit.ParquetFooter || e.Size != 20<<10 {
		t.Errorf("a Parquet footer over its limit: %v", err)
	}
	// Within the limits, ReadFile returns the whole object, also when it
	// is larger than one GET brings.
	put(t, bucket, "t/metadata/00010-x.metadata.json", bytes.Repeat([]byte("{}"), 1<<20))
	fsys, err = iceio.LoadFS(context.Background(), props(objectio.WholeObjectProperty, "65536"), "s3://"+bucket)
	if err != nil {
		t.Fatal(err)
	}
	data, err := fsys.(iceio.ReadFileIO).ReadFile("s3://" + bucket + "/t/metadata/00010-x.metadata.json")
	if err != nil || !bytes.Equal(data, bytes.Repeat([]byte("{}"), 1<<20)) {
		t.Errorf("ReadFile of a 2 MiB object in two GETs: %d bytes, %v", len(data), err)
	}
}
