package objectio_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	iceio "github.com/apache/iceberg-go/io"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/icereactor/reactor/embedded/s3gateway"
	"github.com/icereactor/reactor/objectio"
)

// One gateway per process (see s3gateway), behind a front that counts
// requests.
var (
	testGW    *s3gateway.Gateway
	testFront *front
)

func TestMain(m *testing.M) { os.Exit(runMain(m)) }

func runMain(m *testing.M) int {
	tmp, err := os.MkdirTemp("", "objectio-test-")
	if err == nil {
		tmp, err = filepath.Abs(tmp)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "objectio TestMain:", err)
		return 1
	}
	defer os.RemoveAll(tmp)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if testGW, err = s3gateway.Start(ctx, s3gateway.Options{RootDir: filepath.Join(tmp, "s3")}); err != nil {
		fmt.Fprintln(os.Stderr, "objectio TestMain:", err)
		return 1
	}
	defer testGW.Close()
	if testFront, err = startFront(testGW.Endpoint()); err != nil {
		fmt.Fprintln(os.Stderr, "objectio TestMain:", err)
		return 1
	}
	defer testFront.close()
	return m.Run()
}

// front is a counting reverse proxy before the gateway: requests by
// method and kind of object, and the connections clients open to it.
type front struct {
	srv   *http.Server
	mu    sync.Mutex
	reqs  map[string]int
	conns int
	// fail, when set, answers the requests it is true for with 503
	// SlowDown, as S3 does when throttling.
	fail func(method, kind string) bool
	// cut, when set, sends the requests it is true for the headers and
	// the first cutAfter bytes of the body, then closes the connection
	// (a reset mid-body).
	cut func(method, kind, path string) bool
	// deny, when set, answers the requests it returns a code for with
	// 403 and that S3 error code and message.
	deny func(r *http.Request, kind string) (code, message string)
}

// cutAfter is how much of a cut response's body gets through.
const cutAfter = 4 << 10

// cutting makes the front cut what cut selects until the test ends.
func (f *front) cutting(t *testing.T, cut func(method, kind, path string) bool) {
	f.mu.Lock()
	f.cut = cut
	f.mu.Unlock()
	t.Cleanup(func() {
		f.mu.Lock()
		f.cut = nil
		f.mu.Unlock()
	})
}

// cutWriter passes limit bytes of the body, then hijacks the connection
// and closes it.
type cutWriter struct {
	http.ResponseWriter
	limit int
}

func (w *cutWriter) Write(b []byte) (int, error) {
	if len(b) < w.limit {
		w.limit -= len(b)
		return w.ResponseWriter.Write(b)
	}
	n, _ := w.ResponseWriter.Write(b[:w.limit])
	w.limit = 0
	w.ResponseWriter.(http.Flusher).Flush()
	if conn, _, err := w.ResponseWriter.(http.Hijacker).Hijack(); err == nil {
		_ = conn.Close()
	}
	return n, errors.New("front: connection cut mid-body")
}

// failing makes the front throttle what fail selects until the test
// ends.
func (f *front) failing(t *testing.T, fail func(method, kind string) bool) {
	f.mu.Lock()
	f.fail = fail
	f.mu.Unlock()
	t.Cleanup(func() {
		f.mu.Lock()
		f.fail = nil
		f.mu.Unlock()
	})
}

// denying makes the front refuse what deny returns a code for until the
// test ends.
func (f *front) denying(t *testing.T, deny func(r *http.Request, kind string) (code, message string)) {
	f.mu.Lock()
	f.deny = deny
	f.mu.Unlock()
	t.Cleanup(func() {
		f.mu.Lock()
		f.deny = nil
		f.mu.Unlock()
	})
}

func startFront(target string) (*front, error) {
	u, err := url.Parse(target)
	if err != nil {
		return nil, err
	}
	rp := httputil.NewSingleHostReverseProxy(u)
	// A cut response's copy error is the point, not news.
	rp.ErrorLog = log.New(io.Discard, "", 0)
	f := &front{reqs: map[string]int{}}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	f.srv = &http.Server{
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			kind := "other"
			switch {
			case strings.HasSuffix(r.URL.Path, ".parquet"):
				kind = "data"
			case strings.Contains(r.URL.Path, "/metadata/"):
				kind = "metadata"
			case strings.Contains(r.URL.Path, "/obj/"):
				kind = "obj"
			}
			if r.Header.Get("Range") != "" {
				kind += " ranged"
			}
			if q := r.URL.Query(); q.Has("uploadId") || q.Has("uploads") {
				kind += " multipart"
			}
			f.mu.Lock()
			f.reqs[r.Method+" "+kind]++
			throttle := f.fail != nil && f.fail(r.Method, kind)
			cut := f.cut != nil && f.cut(r.Method, kind, r.URL.Path)
			if cut {
				f.reqs["cut "+r.Method+" "+kind]++
			}
			f.mu.Unlock()
			f.mu.Lock()
			deny := f.deny
			f.mu.Unlock()
			var denyCode, denyMessage string
			if deny != nil {
				denyCode, denyMessage = deny(r, kind)
			}
			if denyCode != "" {
				f.mu.Lock()
				f.reqs["403 "+r.Method+" "+kind]++
				f.mu.Unlock()
				_, _ = io.Copy(io.Discard, r.Body)
				w.Header().Set("Content-Type", "application/xml")
				w.WriteHeader(http.StatusForbidden)
				_, _ = io.WriteString(w, `<?xml version="1.0" encoding="UTF-8"?><Error><Code>`+denyCode+`</Code><Message>`+denyMessage+`</Message></Error>`)
				return
			}
			if throttle {
				f.mu.Lock()
				f.reqs["503 "+r.Method+" "+kind]++
				f.mu.Unlock()
				_, _ = io.Copy(io.Discard, r.Body)
				w.Header().Set("Content-Type", "application/xml")
				w.WriteHeader(http.StatusServiceUnavailable)
				_, _ = io.WriteString(w, `<?xml version="1.0" encoding="UTF-8"?><Error><Code>SlowDown</Code><Message>Please reduce your request rate.</Message></Error>`)
				return
			}
			if cut {
				w = &cutWriter{ResponseWriter: w, limit: cutAfter}
			}
			rp.ServeHTTP(w, r)
		}),
		ConnState: func(_ net.Conn, s http.ConnState) {
			if s == http.StateNew {
				f.mu.Lock()
				f.conns++
				f.mu.Unlock()
			}
		},
	}
	go func() { _ = f.srv.Serve(ln) }()
	f.srv.Addr = ln.Addr().String()
	return f, nil
}

func (f *front) close() { _ = f.srv.Close() }

// reset zeroes the counts and returns what they were.
func (f *front) reset() (map[string]int, int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	r, c := f.reqs, f.conns
	f.reqs, f.conns = map[string]int{}, 0
	return r, c
}

// props are catalog/FileIO properties for s3:// on the gateway through
// the counting front.
func props(extra ...string) map[string]string {
	p := testGW.IcebergProperties()
	p["s3.endpoint"] = "http://" + testFront.srv.Addr
	for i := 0; i+1 < len(extra); i += 2 {
		p[extra[i]] = extra[i+1]
	}
	return p
}

func newBucket(t *testing.T) string {
	t.Helper()
	name := strings.ToLower(strings.NewReplacer("/", "-", "_", "-").Replace(t.Name()))
	name = fmt.Sprintf("%.40s-%06x", name, rand.Uint32()&0xffffff)
	if err := testGW.CreateBucket(context.Background(), name); err != nil {
		t.Fatal(err)
	}
	return name
}

func put(t *testing.T, bucket, key string, body []byte) {
	t.Helper()
	if _, err := testGW.Client().PutObject(context.Background(), &s3.PutObjectInput{Bucket: aws.String(bucket),
		Key: aws.String(key), Body: bytes.NewReader(body)}); err != nil {
		t.Fatal(err)
	}
}

func randomBytes(n int) []byte {
	b := make([]byte, n)
	r := rand.New(rand.NewPCG(uint64(n), 7))
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

// readLikeParquet reads f as the Parquet reader does (size by seeking to
// the end, the footer length, the footer, then column chunks) and then
// sequentially, checking every byte against want.
func readLikeParquet(t *testing.T, f iceio.File, want []byte) {
	t.Helper()
	size, err := f.Seek(0, io.SeekEnd)
	if err != nil || size != int64(len(want)) {
		t.Fatalf("size %d (%v), want %d", size, err, len(want))
	}
	if st, err := f.Stat(); err != nil || st.Size() != size {
		t.Fatalf("Stat: %v %v", st, err)
	}
	check := func(off, n int64) {
		got := make([]byte, n)
		if _, err := f.ReadAt(got, off); err != nil {
			t.Fatalf("ReadAt(%d, %d): %v", off, n, err)
		}
		if !bytes.Equal(got, want[off:off+n]) {
			t.Fatalf("ReadAt(%d, %d): wrong bytes", off, n)
		}
	}
	check(size-8, 8)
	check(size-1000, 992)
	for off := int64(0); off+7000 < size; off += 9000 {
		check(off, 7000)
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		t.Fatal(err)
	}
	all, err := io.ReadAll(f)
	if err != nil || !bytes.Equal(all, want) {
		t.Fatalf("sequential read: %d bytes, %v", len(all), err)
	}
	if n, err := f.ReadAt(make([]byte, 10), size-5); n != 5 || !errors.Is(err, io.EOF) {
		t.Fatalf("ReadAt past the end: %d, %v; want 5, EOF", n, err)
	}
}

// TestSmallObjectIsOneGET: a file below the whole-object size costs one
// request however it is read, and the FileIO is still iceberg-go's for
// writes and listings.
func TestSmallObjectIsOneGET(t *testing.T) {
	bucket := newBucket(t)
	body := randomBytes(300 << 10)
	put(t, bucket, "obj/small.bin", body)
	fsys, err := iceio.LoadFS(context.Background(), props(), "s3://"+bucket+"/obj/small.bin")
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := fsys.(*objectio.FileIO); !ok {
		t.Fatalf("s3:// FileIO is %T, want *objectio.FileIO (registration replaced?)", fsys)
	}
	testFront.reset()
	f, err := fsys.Open("s3://" + bucket + "/obj/small.bin")
	if err != nil {
		t.Fatal(err)
	}
	readLikeParquet(t, f, body)
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	reqs, _ := testFront.reset()
	if want := map[string]int{"GET obj ranged": 1}; fmt.Sprint(reqs) != fmt.Sprint(want) {
		t.Fatalf("requests %v, want %v", reqs, want)
	}
	// Writes and reads of whole files are blobfs's.
	wfs := fsys.(iceio.WriteFileIO)
	if err := wfs.WriteFile("s3://"+bucket+"/obj/written.bin", []byte("hello")); err != nil {
		t.Fatal(err)
	}
	got, err := fsys.(iceio.ReadFileIO).ReadFile("s3://" + bucket + "/obj/written.bin")
	if err != nil || string(got) != "hello" {
		t.Fatalf("ReadFile: %q, %v", got, err)
	}
}

// TestLargeObjectByRanges: above the whole-object size, the tail comes
// with the first GET and the rest in ranges of the range size, never one
// per small read.
func TestLargeObjectByRanges(t *testing.T) {
	bucket := newBucket(t)
	body := randomBytes(1 << 20)
	put(t, bucket, "obj/large.bin", body)
	const whole, rng = 64 << 10, 128 << 10
	fsys, err := iceio.LoadFS(context.Background(), props(objectio.WholeObjectProperty, fmt.Sprint(whole),
		objectio.RangeProperty, fmt.Sprint(rng)), "s3://"+bucket)
	if err != nil {
		t.Fatal(err)
	}
	testFront.reset()
	f, err := fsys.Open("s3://" + bucket + "/obj/large.bin")
	if err != nil {
		t.Fatal(err)
	}
	readLikeParquet(t, f, body)
	reqs, _ := testFront.reset()
	// The tail, then each range read twice over (the strided pass and
	// the sequential one).
	limit := 1 + 2*((len(body)-whole+rng-1)/rng)
	if reqs["GET obj ranged"] > limit || len(reqs) != 1 {
		t.Fatalf("requests %v, want at most %d ranged GETs and nothing else", reqs, limit)
	}
}

// TestMissingAndEmptyObjects: a missing object is fs.ErrNotExist (callers
// test for it), an empty one opens and reads as empty.
func TestMissingAndEmptyObjects(t *testing.T) {
	bucket := newBucket(t)
	fsys, err := iceio.LoadFS(context.Background(), props(), "s3://"+bucket)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := fsys.Open("s3://" + bucket + "/obj/missing"); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("Open(missing) = %v, want fs.ErrNotExist", err)
	}
	if _, err := fsys.Open("s3://another-bucket/obj/x"); err == nil {
		t.Fatal("Open of another bucket's object succeeded")
	}
	put(t, bucket, "obj/empty", nil)
	f, err := fsys.Open("s3://" + bucket + "/obj/empty")
	if err != nil {
		t.Fatal(err)
	}
	if b, err := io.ReadAll(f); err != nil || len(b) != 0 {
		t.Fatalf("empty object read %d bytes, %v", len(b), err)
	}
}

// TestBadSettingsAreRefused: a size property that is not a positive byte
// count fails the FileIO with the property's name.
func TestBadSettingsAreRefused(t *testing.T) {
	for _, v := range []string{"0", "-1", "8MiB"} {
		_, err := iceio.LoadFS(context.Background(), props(objectio.WholeObjectProperty, v), "s3://b")
		if err == nil || !strings.Contains(err.Error(), objectio.WholeObjectProperty) {
			t.Fatalf("%s=%s: err %v, want one naming the property", objectio.WholeObjectProperty, v, err)
		}
	}
}

// TestRemoveIsOneDELETE: a delete is one request, with no HEAD before it;
// deleting a key that is not there is not an error (S3's delete is
// idempotent), and the deleted object is gone.
func TestRemoveIsOneDELETE(t *testing.T) {
	bucket := newBucket(t)
	put(t, bucket, "obj/doomed.bin", []byte("doomed"))
	fsys, err := iceio.LoadFS(context.Background(), props(), "s3://"+bucket)
	if err != nil {
		t.Fatal(err)
	}
	testFront.reset()
	if err := fsys.Remove("s3://" + bucket + "/obj/doomed.bin"); err != nil {
		t.Fatal(err)
	}
	if err := fsys.Remove("s3://" + bucket + "/obj/never-there.bin"); err != nil {
		t.Fatalf("removing a missing key: %v, want nil", err)
	}
	reqs, _ := testFront.reset()
	if want := map[string]int{"DELETE obj": 2}; fmt.Sprint(reqs) != fmt.Sprint(want) {
		t.Fatalf("requests %v, want %v", reqs, want)
	}
	if _, err := fsys.Open("s3://" + bucket + "/obj/doomed.bin"); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("after Remove, Open = %v, want fs.ErrNotExist", err)
	}
	if err := fsys.Remove("s3://" + bucket + "/../escape"); err == nil {
		t.Fatal("a key that is not a valid path was deleted")
	}
}
