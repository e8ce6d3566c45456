package s3gateway

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	iceio "github.com/apache/iceberg-go/io"
	// Registers s3:// with iceberg-go's FileIO. Only the S3 backend: the
	// whole io/gocloud package would also build GCS and Azure.
	_ "github.com/apache/iceberg-go/io/gocloud/s3"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/nats-io/nats.go"

	"github.com/icereactor/reactor/embedded"
	"github.com/icereactor/reactor/events"
)

const (
	subject = "reactor.test.s3"
	// eventWait bounds how long a test waits for a notification; versitygw
	// publishes from a goroutine after answering the request, so events
	// arrive shortly after the S3 call returns, never with it.
	eventWait = 10 * time.Second
)

// Shared by all tests: one gateway per process (see the package doc), and
// the subscription that has been recording its notifications since before
// the gateway started.
var (
	testGW  *Gateway
	testRec *recorder
)

func TestMain(m *testing.M) {
	os.Exit(runMain(m))
}

// runMain is TestMain's body, so deferred cleanup runs before os.Exit.
func runMain(m *testing.M) int {
	fail := func(format string, args ...any) int {
		fmt.Fprintf(os.Stderr, "s3gateway TestMain: "+format+"\n", args...)
		return 1
	}

	// Absolute from the start: posix.New moves the working directory.
	tmp, err := os.MkdirTemp("", "s3gateway-test-")
	if err != nil {
		return fail("temp dir: %v", err)
	}
	if tmp, err = filepath.Abs(tmp); err != nil {
		return fail("temp dir: %v", err)
	}
	defer os.RemoveAll(tmp)

	ns, err := embedded.StartNATS(embedded.NATSOptions{StoreDir: filepath.Join(tmp, "nats")})
	if err != nil {
		return fail("start nats: %v", err)
	}
	defer ns.Shutdown()

	nc, err := nats.Connect(ns.URL())
	if err != nil {
		return fail("connect nats: %v", err)
	}
	defer nc.Close()

	// Subscribe before the gateway starts so its start-up test event is
	// recorded too.
	testRec = newRecorder()
	if _, err := nc.Subscribe(subject, func(msg *nats.Msg) { testRec.add(msg.Data) }); err != nil {
		return fail("subscribe: %v", err)
	}
	if err := nc.Flush(); err != nil {
		return fail("flush subscription: %v", err)
	}

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	testGW, err = Start(ctx, Options{
		RootDir: filepath.Join(tmp, "s3"),
		NATSURL: ns.URL(),
		Subject: subject,
	})
	if err != nil {
		return fail("start gateway: %v", err)
	}
	code := m.Run()
	if err := testGW.Close(); err != nil {
		return fail("close gateway: %v", err)
	}
	return code
}

// recorder keeps every message published on the subject, in arrival order.
type recorder struct {
	mu   sync.Mutex
	msgs [][]byte
	// changed is closed (and replaced) whenever a message arrives.
	changed chan struct{}
}

func newRecorder() *recorder { return &recorder{changed: make(chan struct{})} }

func (r *recorder) add(data []byte) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.msgs = append(r.msgs, bytes.Clone(data))
	close(r.changed)
	r.changed = make(chan struct{})
}

// snapshot returns the messages from index from on, and a channel closed
// when more arrive.
func (r *recorder) snapshot(from int) ([][]byte, <-chan struct{}) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.msgs[from:], r.changed
}

// match is one recorded message and the decoded notification it carried.
type match struct {
	raw []byte
	n   events.Notification
}

// waitFor waits until a recorded message satisfies pred and returns it. Every
// message is decoded the way reactor decodes versitygw (raw keys); one that
// does not decode fails the test, with its payload, since that is exactly
// what this package exists to catch.
func (r *recorder) waitFor(t *testing.T, what string, pred func(events.Notification) bool) match {
	t.Helper()
	deadline := time.NewTimer(eventWait)
	defer deadline.Stop()
	seen := 0
	for {
		msgs, changed := r.snapshot(seen)
		for _, raw := range msgs {
			seen++
			n, err := events.DecodeNotification(raw, events.KeyEncodingRaw)
			if err != nil {
				t.Errorf("message %d does not decode: %v\npayload: %s", seen, err, raw)
				continue
			}
			if pred(n) {
				return match{raw: raw, n: n}
			}
		}
		select {
		case <-changed:
		case <-deadline.C:
			t.Fatalf("no notification %s within %s; %d messages seen:\n%s", what, eventWait, seen, r.dump())
		}
	}
}

func (r *recorder) dump() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var b strings.Builder
	for i, m := range r.msgs {
		fmt.Fprintf(&b, "  [%d] %s\n", i, m)
	}
	return b.String()
}

// objectEvent matches a notification with exactly one record for bucket/key
// with the given action.
func objectEvent(action events.ObjectAction, bucket, key string) func(events.Notification) bool {
	return func(n events.Notification) bool {
		return len(n.Events) == 1 && n.Events[0].Action == action &&
			n.Events[0].Bucket == bucket && n.Events[0].Key == key
	}
}

func testContext(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func TestStartupTestEventIsTolerated(t *testing.T) {
	m := testRec.waitFor(t, "s3:TestEvent", func(n events.Notification) bool { return n.Test })
	t.Logf("start-up message: %s", m.raw)
}

// TestObjectRoundTripAndEvents puts, reads and deletes one object whose key
// holds every character the key encodings disagree on, and checks the
// notifications carry that key byte for byte.
func TestObjectRoundTripAndEvents(t *testing.T) {
	ctx := testContext(t)
	const (
		bucket = "events"
		// A space, '+', '=' and non-ASCII: what Iceberg partition paths
		// contain, and what URL-encoding would change.
		key = "warehouse/db/t/data/category=a b+c/ü.parquet"
	)
	body := []byte("PAR1 not really parquet PAR1")

	if err := testGW.CreateBucket(ctx, bucket); err != nil {
		t.Fatal(err)
	}
	c := testGW.Client()

	put, err := c.PutObject(ctx, &s3.PutObjectInput{
		Bucket: aws.String(bucket), Key: aws.String(key), Body: bytes.NewReader(body),
	})
	if err != nil {
		t.Fatalf("PutObject: %v", err)
	}

	t.Run("GetObject round-trips", func(t *testing.T) {
		got, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)})
		if err != nil {
			t.Fatalf("GetObject: %v", err)
		}
		defer got.Body.Close()
		data, err := io.ReadAll(got.Body)
		if err != nil {
			t.Fatalf("read body: %v", err)
		}
		if !bytes.Equal(data, body) {
			t.Fatalf("GetObject body = %q, want %q", data, body)
		}
		// The key is stored as given, not in some encoded form.
		list, err := c.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String(bucket)})
		if err != nil {
			t.Fatalf("ListObjectsV2: %v", err)
		}
		if len(list.Contents) != 1 || aws.ToString(list.Contents[0].Key) != key {
			t.Fatalf("ListObjectsV2 keys = %v, want [%q]", keys(list.Contents), key)
		}
	})

	t.Run("put notification", func(t *testing.T) {
		m := testRec.waitFor(t, "ObjectCreated for "+key, objectEvent(events.ObjectCreated, bucket, key))
		t.Logf("put notification payload: %s", m.raw)
		ev := m.n.Events[0]
		if ev.EventName != "s3:ObjectCreated:Put" {
			t.Errorf("EventName = %q, want s3:ObjectCreated:Put", ev.EventName)
		}
		if ev.Size != int64(len(body)) {
			t.Errorf("Size = %d, want %d", ev.Size, len(body))
		}
		if want := strings.Trim(aws.ToString(put.ETag), `"`); ev.ETag != want {
			t.Errorf("ETag = %q, want %q (PutObject's)", ev.ETag, want)
		}
		if ev.Time.IsZero() {
			t.Error("eventTime missing")
		}
		if got, want := ev.Location(), "s3://"+bucket+"/"+key; got != want {
			t.Errorf("Location() = %q, want %q", got, want)
		}
	})

	t.Run("delete notification", func(t *testing.T) {
		if _, err := c.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)}); err != nil {
			t.Fatalf("DeleteObject: %v", err)
		}
		m := testRec.waitFor(t, "ObjectRemoved for "+key, objectEvent(events.ObjectRemoved, bucket, key))
		t.Logf("delete notification payload: %s", m.raw)
		if ev := m.n.Events[0]; ev.EventName != "s3:ObjectRemoved:Delete" {
			t.Errorf("EventName = %q, want s3:ObjectRemoved:Delete", ev.EventName)
		}
	})
}

func keys(objs []s3types.Object) []string {
	out := make([]string, len(objs))
	for i, o := range objs {
		out[i] = aws.ToString(o.Key)
	}
	return out
}

// TestIcebergFileIO writes and reads through iceberg-go's own s3:// FileIO
// configured only by IcebergProperties, as a catalog would.
func TestIcebergFileIO(t *testing.T) {
	ctx := testContext(t)
	const bucket = "iceberg"
	if err := testGW.CreateBucket(ctx, bucket); err != nil {
		t.Fatal(err)
	}
	const loc = "s3://" + bucket + "/x/y.txt"
	want := []byte("hello from iceberg-go\n")

	fsys, err := iceio.LoadFS(ctx, testGW.IcebergProperties(), loc)
	if err != nil {
		t.Fatalf("LoadFS: %v", err)
	}
	wfs, ok := fsys.(iceio.WriteFileIO)
	if !ok {
		t.Fatalf("%T does not implement io.WriteFileIO", fsys)
	}
	if err := wfs.WriteFile(loc, want); err != nil {
		t.Fatalf("WriteFile(%s): %v", loc, err)
	}

	f, err := fsys.Open(loc)
	if err != nil {
		t.Fatalf("Open(%s): %v", loc, err)
	}
	got, err := io.ReadAll(f)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		t.Fatalf("read %s: %v", loc, err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("read back %q, want %q", got, want)
	}

	// It really went to the gateway, and the gateway said so on NATS.
	head, err := testGW.Client().HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(bucket), Key: aws.String("x/y.txt")})
	if err != nil {
		t.Fatalf("HeadObject x/y.txt: %v", err)
	}
	if aws.ToInt64(head.ContentLength) != int64(len(want)) {
		t.Errorf("HeadObject size = %d, want %d", aws.ToInt64(head.ContentLength), len(want))
	}
	testRec.waitFor(t, "ObjectCreated for x/y.txt", objectEvent(events.ObjectCreated, bucket, "x/y.txt"))
}

func TestStartValidatesOptions(t *testing.T) {
	ctx := testContext(t)
	for name, opts := range map[string]Options{
		"relative root":        {RootDir: "relative/dir"},
		"empty root":           {},
		"nats without subject": {RootDir: t.TempDir(), NATSURL: "nats://127.0.0.1:1"},
	} {
		t.Run(name, func(t *testing.T) {
			g, err := Start(ctx, opts)
			if err == nil {
				_ = g.Close()
				t.Fatal("Start succeeded, want an error")
			}
			if errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("Start timed out instead of rejecting the options: %v", err)
			}
		})
	}
}

// TestSecondGatewayIsRefused pins the one-gateway-per-process rule: a second
// Start fails fast with embedgw's reason instead of hanging or racing.
func TestSecondGatewayIsRefused(t *testing.T) {
	ctx := testContext(t)
	g, err := Start(ctx, Options{RootDir: t.TempDir()})
	if err == nil {
		_ = g.Close()
		t.Fatal("second Start succeeded, want an error")
	}
	if !strings.Contains(err.Error(), "only one instance per process") {
		t.Fatalf("second Start: %v, want embedgw's one-instance error", err)
	}
	// The shared gateway is still serving.
	if _, err := testGW.Client().ListBuckets(ctx, &s3.ListBucketsInput{}); err != nil {
		t.Fatalf("shared gateway after refused Start: %v", err)
	}
}
