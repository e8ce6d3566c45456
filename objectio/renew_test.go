package objectio_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	iceio "github.com/apache/iceberg-go/io"
	"github.com/aws/smithy-go"
	"google.golang.org/api/googleapi"

	"github.com/icereactor/reactor/objectio"
)

// vendor stands in for a catalog's LoadTable: it hands out the FileIO
// properties of its current credentials and counts the reloads.
type vendor struct {
	bucket string

	mu      sync.Mutex
	next    map[string]string
	fail    error
	reloads int
	reasons []string
	log     bytes.Buffer
}

// badKeys are revoked credentials: the front answers requests signed
// with them InvalidAccessKeyId, as MinIO does for a disabled or removed
// user (refuseRevoked).
func badKeys(extra ...string) map[string]string {
	p := props(extra...)
	p["s3.access-key-id"] = "revoked-key"
	p["s3.secret-access-key"] = "revoked-secret-do-not-log"
	return p
}

// refuseRevoked makes the front refuse badKeys until the test ends.
func refuseRevoked(t *testing.T) {
	testFront.denying(t, func(r *http.Request, kind string) (string, string) {
		if strings.Contains(r.Header.Get("Authorization"), "Credential=revoked-key/") {
			return "InvalidAccessKeyId", "Your account is disabled; please contact your administrator."
		}
		return "", ""
	})
}

func (v *vendor) fsys(p map[string]string) objectio.FSys {
	return func(ctx context.Context) (iceio.IO, error) { return iceio.LoadFS(ctx, p, "s3://"+v.bucket) }
}

func (v *vendor) reload(ctx context.Context) (objectio.FSys, error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.reloads++
	if v.fail != nil {
		return nil, v.fail
	}
	return v.fsys(v.next), nil
}

func (v *vendor) counts() (int, []string) {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.reloads, append([]string(nil), v.reasons...)
}

// credentials starts a table's credentials at first, renewed from v.
func (v *vendor) credentials(first map[string]string, now func() time.Time) *objectio.Credentials {
	return objectio.NewCredentials(v.fsys(first), v.reload, objectio.RenewOptions{Table: "db.events",
		Log: slog.New(slog.NewTextHandler(&lockedWriter{mu: &v.mu, w: &v.log}, nil)), Now: now,
		Renewed: func(reason string) {
			v.mu.Lock()
			v.reasons = append(v.reasons, reason)
			v.mu.Unlock()
		}})
}

type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

// Write is called with v.mu held or not: the log is written after the
// reload returned.
func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// TestRefusedCredentialsAreRenewedOnce: every request a job makes, made
// with credentials the store no longer knows, is made once more with
// the ones the catalog vends now and succeeds; the table is reloaded
// once per refused request at most (requests after a renewal use the
// fresh credentials).
func TestRefusedCredentialsAreRenewedOnce(t *testing.T) {
	payload := randomBytes(3 << 10)
	large := randomBytes(objectio.DefaultWholeObjectBytes + 1<<20)
	for _, tc := range []struct {
		name string
		op   func(t *testing.T, fsys iceio.IO, bucket string) error
	}{
		{"Open and read", func(t *testing.T, fsys iceio.IO, bucket string) error {
			f, err := fsys.Open("s3://" + bucket + "/data/a.parquet")
			if err != nil {
				return err
			}
			defer f.Close()
			got, err := io.ReadAll(f)
			if err == nil && !bytes.Equal(got, payload) {
				t.Errorf("read %d bytes, not what was written", len(got))
			}
			return err
		}},
		{"ReadFile", func(t *testing.T, fsys iceio.IO, bucket string) error {
			got, err := fsys.(iceio.ReadFileIO).ReadFile("s3://" + bucket + "/data/a.parquet")
			if err == nil && !bytes.Equal(got, payload) {
				t.Errorf("read %d bytes, not what was written", len(got))
			}
			return err
		}},
		{"Stat", func(t *testing.T, fsys iceio.IO, bucket string) error {
			info, err := fsys.(iceio.StatIO).Stat("s3://" + bucket + "/data/a.parquet")
			if err == nil && info.Size() != int64(len(payload)) {
				t.Errorf("size %d, want %d", info.Size(), len(payload))
			}
			return err
		}},
		{"WriteFile", func(t *testing.T, fsys iceio.IO, bucket string) error {
			return fsys.(iceio.WriteFileIO).WriteFile("s3://"+bucket+"/data/b.parquet", payload)
		}},
		{"Create, Write, Close", func(t *testing.T, fsys iceio.IO, bucket string) error {
			w, err := fsys.(iceio.WriteFileIO).Create("s3://" + bucket + "/data/c.parquet")
			if err != nil {
				return err
			}
			if _, err := w.Write(payload); err != nil {
				_ = w.Close()
				return err
			}
			return w.Close()
		}},
		{"Remove", func(t *testing.T, fsys iceio.IO, bucket string) error {
			return fsys.Remove("s3://" + bucket + "/data/a.parquet")
		}},
		{"DeleteFiles", func(t *testing.T, fsys iceio.IO, bucket string) error {
			deleted, err := fsys.(iceio.BulkRemovableIO).DeleteFiles(context.Background(), []string{"s3://" + bucket + "/data/a.parquet"})
			if err == nil && len(deleted) != 1 {
				t.Errorf("deleted %v", deleted)
			}
			return err
		}},
		{"WalkDir", func(t *testing.T, fsys iceio.IO, bucket string) error {
			var files []string
			err := fsys.(iceio.ListableIO).WalkDir("s3://"+bucket+"/", func(path string, d fs.DirEntry, err error) error {
				if err != nil {
					return err
				}
				if !d.IsDir() {
					files = append(files, path)
				}
				return nil
			})
			if want := []string{"s3://" + bucket + "/data/a.parquet", "s3://" + bucket + "/data/big.parquet"}; err == nil && fmt.Sprint(files) != fmt.Sprint(want) {
				t.Errorf("walked %v, want %v", files, want)
			}
			return err
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bucket := newBucket(t)
			put(t, bucket, "data/a.parquet", payload)
			put(t, bucket, "data/big.parquet", large)
			refuseRevoked(t)
			// Vended: with an expiry (a day away), so that a write is
			// kept to be replayed.
			day := strconv.FormatInt(time.Now().Add(24*time.Hour).UnixMilli(), 10)
			v := &vendor{bucket: bucket, next: props("s3.session-token-expires-at-ms", day)}
			fsys, err := v.credentials(badKeys("s3.session-token-expires-at-ms", day), nil).FS(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if err := tc.op(t, fsys, bucket); err != nil {
				t.Fatalf("with credentials renewed after a refusal: %v", err)
			}
			reloads, reasons := v.counts()
			if reloads != 1 || fmt.Sprint(reasons) != "[refused]" {
				t.Fatalf("reloads %d, reasons %v; want one, refused", reloads, reasons)
			}
			// The fresh credentials stay in use.
			if err := tc.op(t, fsys, bucket); err != nil && !errors.Is(err, fs.ErrNotExist) {
				t.Fatalf("again: %v", err)
			}
			if reloads, _ := v.counts(); reloads != 1 {
				t.Fatalf("reloaded %d times after the renewal", reloads)
			}
			v.mu.Lock()
			logged := v.log.String()
			v.mu.Unlock()
			for _, want := range []string{"storage credentials renewed", "table=db.events", "reason=refused", "refusal=", "403"} {
				if !strings.Contains(logged, want) {
					t.Errorf("log lacks %q:\n%s", want, logged)
				}
			}
			if strings.Contains(logged, "revoked-secret-do-not-log") {
				t.Errorf("log holds the secret:\n%s", logged)
			}
		})
	}
}

// TestLargeReadAfterRevocation: an object opened with good credentials,
// then read past its first GET after they were revoked, is read with
// fresh ones.
func TestLargeReadAfterRevocation(t *testing.T) {
	bucket := newBucket(t)
	large := randomBytes(objectio.DefaultWholeObjectBytes + 3<<20)
	put(t, bucket, "data/big.parquet", large)
	v := &vendor{bucket: bucket, next: props()}
	fsys, err := v.credentials(props(), nil).FS(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	f, err := fsys.Open("s3://" + bucket + "/data/big.parquet")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	// Revoked after the open: the front refuses the next request, as a
	// store does for credentials revoked or expired since.
	got := make([]byte, 1<<20)
	var mu sync.Mutex
	refusing := true
	testFront.denying(t, func(*http.Request, string) (string, string) {
		mu.Lock()
		defer mu.Unlock()
		if refusing {
			refusing = false
			return "ExpiredToken", "The provided token has expired."
		}
		return "", ""
	})
	testFront.reset()
	if _, err := f.ReadAt(got, 0); err != nil {
		t.Fatalf("ranged read after the refusal: %v", err)
	}
	reqs, _ := testFront.reset()
	// The refused GET, the reopening's GET of the tail, the ranged GET.
	if reqs["403 GET data ranged"] != 1 || reqs["GET data ranged"] != 3 {
		t.Fatalf("requests %v; want one ranged GET refused, the object opened again, one ranged GET", reqs)
	}
	if !bytes.Equal(got, large[:len(got)]) {
		t.Fatal("ranged read after renewal returned other bytes")
	}
	if reloads, reasons := v.counts(); reloads != 1 || fmt.Sprint(reasons) != "[refused]" {
		t.Fatalf("reloads %d, reasons %v", reloads, reasons)
	}
}

// TestRenewedBeforeExpiry: credentials within their renewal window are
// renewed before the next request, once; requests go out with the fresh
// ones.
func TestRenewedBeforeExpiry(t *testing.T) {
	bucket := newBucket(t)
	put(t, bucket, "data/a.parquet", randomBytes(100))
	start := time.Now()
	expires := start.Add(time.Minute)
	var mu sync.Mutex
	now := start
	clock := func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		return now
	}
	fresh := strconv.FormatInt(start.Add(time.Hour).UnixMilli(), 10)
	v := &vendor{bucket: bucket, next: props("s3.session-token-expires-at-ms", fresh)}
	fsys, err := v.credentials(props("s3.session-token-expires-at-ms", strconv.FormatInt(expires.UnixMilli(), 10)), clock).FS(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	read := func() {
		t.Helper()
		if _, err := fsys.(iceio.ReadFileIO).ReadFile("s3://" + bucket + "/data/a.parquet"); err != nil {
			t.Fatal(err)
		}
	}
	read()
	if reloads, _ := v.counts(); reloads != 0 {
		t.Fatalf("renewed %d times with a minute left of a minute", reloads)
	}
	mu.Lock()
	now = start.Add(31 * time.Second) // past half the lifetime
	mu.Unlock()
	read()
	read()
	if reloads, reasons := v.counts(); reloads != 1 || fmt.Sprint(reasons) != "[before_expiry]" {
		t.Fatalf("reloads %d, reasons %v; want one, before_expiry", reloads, reasons)
	}
	exp := fsys.(interface{ CredentialsExpireAt() time.Time }).CredentialsExpireAt()
	if exp.UnixMilli() != start.Add(time.Hour).UnixMilli() {
		t.Fatalf("in use: credentials expiring at %v, want the renewed ones", exp)
	}
}

// TestPermanentDenialIsNotRetried: a refusal of a permission is the
// store's answer as it is, without a reload; credentials that stay
// refused after a renewal cost one reload and one retry per request,
// never a loop.
func TestPermanentDenialIsNotRetried(t *testing.T) {
	bucket := newBucket(t)
	put(t, bucket, "data/a.parquet", randomBytes(100))
	name := "s3://" + bucket + "/data/a.parquet"

	t.Run("AccessDenied", func(t *testing.T) {
		testFront.denying(t, func(*http.Request, string) (string, string) { return "AccessDenied", "Access Denied." })
		v := &vendor{bucket: bucket, next: props()}
		fsys, err := v.credentials(props(), nil).FS(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		_, err = fsys.(iceio.ReadFileIO).ReadFile(name)
		if err == nil || !strings.Contains(err.Error(), "AccessDenied") {
			t.Fatalf("err = %v, want the store's AccessDenied", err)
		}
		if reloads, _ := v.counts(); reloads != 0 {
			t.Fatalf("reloaded %d times for a permission refused", reloads)
		}
	})
	t.Run("still refused after renewal", func(t *testing.T) {
		refuseRevoked(t)
		v := &vendor{bucket: bucket, next: badKeys()}
		fsys, err := v.credentials(badKeys(), nil).FS(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		testFront.reset()
		for i := 1; i <= 3; i++ {
			_, err = fsys.(iceio.ReadFileIO).ReadFile(name)
			if err == nil || !strings.Contains(err.Error(), "InvalidAccessKeyId") {
				t.Fatalf("err = %v, want the store's InvalidAccessKeyId", err)
			}
			if reloads, _ := v.counts(); reloads != i {
				t.Fatalf("after %d requests: %d reloads, want %d", i, reloads, i)
			}
		}
		if reqs, _ := testFront.reset(); reqs["GET metadata"]+reqs["GET other"]+reqs["GET data"] > 6 {
			t.Fatalf("requests: %v; want two per read", reqs)
		}
	})
}

// TestFailedReloadIsClear: when the catalog cannot vend fresh
// credentials, the request fails naming the table, the reason, the
// catalog's error and the store's refusal, and no secret.
func TestFailedReloadIsClear(t *testing.T) {
	bucket := newBucket(t)
	put(t, bucket, "data/a.parquet", randomBytes(100))
	refuseRevoked(t)
	v := &vendor{bucket: bucket, fail: errors.New("GET http://catalog/v1/namespaces/db/tables/events: 503 Service Unavailable")}
	fsys, err := v.credentials(badKeys(), nil).FS(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	err = fsys.Remove("s3://" + bucket + "/data/a.parquet")
	if err == nil {
		t.Fatal("removed with revoked credentials and no renewal")
	}
	for _, want := range []string{"renew the storage credentials of db.events (refused)", "503 Service Unavailable", "InvalidAccessKeyId"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
	if strings.Contains(err.Error(), "revoked-secret-do-not-log") {
		t.Errorf("error holds the secret: %v", err)
	}
	if reloads, reasons := v.counts(); reloads != 1 || len(reasons) != 0 {
		t.Fatalf("reloads %d, renewals counted %v; want one reload, none counted", reloads, reasons)
	}
}

// TestCredentialsRefused tells expired or revoked credentials from a
// refused permission, on each store.
func TestCredentialsRefused(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
		want bool
	}{
		{"nil", nil, false},
		{"not found", fs.ErrNotExist, false},
		{"S3 ExpiredToken", &smithy.GenericAPIError{Code: "ExpiredToken"}, true},
		{"S3 InvalidAccessKeyId (MinIO: disabled user)", &smithy.GenericAPIError{Code: "InvalidAccessKeyId", Message: "Your account is disabled"}, true},
		{"S3 InvalidToken", &smithy.GenericAPIError{Code: "InvalidToken"}, true},
		{"S3 AccessDenied", &smithy.GenericAPIError{Code: "AccessDenied", Message: "Access Denied."}, false},
		{"S3 AccessDenied, token expired", &smithy.GenericAPIError{Code: "AccessDenied", Message: "The security token included in the request is expired"}, true},
		{"S3 SignatureDoesNotMatch", &smithy.GenericAPIError{Code: "SignatureDoesNotMatch"}, false},
		{"S3 SlowDown", &smithy.GenericAPIError{Code: "SlowDown"}, false},
		{"wrapped", &fs.PathError{Op: "open", Path: "s3://b/k", Err: fmt.Errorf("get: %w", &smithy.GenericAPIError{Code: "ExpiredToken"})}, true},
		{"GCS 401", &googleapi.Error{Code: http.StatusUnauthorized}, true},
		{"GCS 403 forbidden", &googleapi.Error{Code: http.StatusForbidden, Errors: []googleapi.ErrorItem{{Reason: "forbidden"}}}, false},
		{"GCS 403 authError", &googleapi.Error{Code: http.StatusForbidden, Errors: []googleapi.ErrorItem{{Reason: "authError"}}}, true},
		{"Azure AuthenticationFailed (SAS expired)", &azcore.ResponseError{StatusCode: http.StatusForbidden, ErrorCode: "AuthenticationFailed"}, true},
		{"Azure AuthorizationPermissionMismatch", &azcore.ResponseError{StatusCode: http.StatusForbidden, ErrorCode: "AuthorizationPermissionMismatch"}, false},
		{"Azure AuthorizationFailure", &azcore.ResponseError{StatusCode: http.StatusForbidden, ErrorCode: "AuthorizationFailure"}, false},
		{"Azure 401", &azcore.ResponseError{StatusCode: http.StatusUnauthorized}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := objectio.CredentialsRefused(tc.err); got != tc.want {
				t.Fatalf("CredentialsRefused(%v) = %v, want %v", tc.err, got, tc.want)
			}
		})
	}
}

// TestRenewingKeepsTheFileIOsInterfaces: the executor type-asserts what
// a FileIO can do; a renewing one can do what the one it wraps can.
func TestRenewingKeepsTheFileIOsInterfaces(t *testing.T) {
	bucket := newBucket(t)
	v := &vendor{bucket: bucket, next: props()}
	fsys, err := v.credentials(props(objectio.ReadConcurrencyProperty, "7"), nil).FS(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for name, ok := range map[string]bool{
		"ReadFileIO": is[iceio.ReadFileIO](fsys), "WriteFileIO": is[iceio.WriteFileIO](fsys),
		"ListableIO": is[iceio.ListableIO](fsys), "BulkRemovableIO": is[iceio.BulkRemovableIO](fsys),
		"StatIO": is[iceio.StatIO](fsys), "RenameIO": is[iceio.RenameIO](fsys), "RemoveAllIO": is[iceio.RemoveAllIO](fsys),
	} {
		if !ok {
			t.Errorf("renewing S3 FileIO is not a %s", name)
		}
	}
	if got := objectio.ReadConcurrency(fsys); got != 7 {
		t.Errorf("ReadConcurrency = %d, want 7", got)
	}
	local, err := objectio.NewCredentials(func(ctx context.Context) (iceio.IO, error) { return iceio.LocalFS{}, nil },
		v.reload, objectio.RenewOptions{}).FS(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := local.(iceio.LocalFS); !ok {
		t.Errorf("a local FileIO was wrapped: %T", local)
	}
}

func is[T any](v any) bool { _, ok := v.(T); return ok }

// TestRenewalIsShared: the FileIOs built of one table share its
// credentials: a renewal through one is taken up by the others without
// another reload.
func TestRenewalIsShared(t *testing.T) {
	bucket := newBucket(t)
	put(t, bucket, "data/a.parquet", randomBytes(100))
	refuseRevoked(t)
	v := &vendor{bucket: bucket, next: props()}
	creds := v.credentials(badKeys(), nil)
	var ios []iceio.IO
	for range 3 {
		fsys, err := creds.FS(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		ios = append(ios, fsys)
	}
	testFront.reset()
	for i, fsys := range ios {
		if _, err := fsys.(iceio.ReadFileIO).ReadFile("s3://" + bucket + "/data/a.parquet"); err != nil {
			t.Fatalf("FileIO %d: %v", i, err)
		}
	}
	if reloads, _ := v.counts(); reloads != 1 {
		t.Fatalf("%d reloads for three FileIOs of one table, want 1", reloads)
	}
	if reqs, _ := testFront.reset(); reqs["403 GET data ranged"] != 1 {
		t.Fatalf("requests %v: want one refused, the others made with the renewed credentials", reqs)
	}
}
