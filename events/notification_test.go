package events

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/icereactor/reactor/excerpt"
)

func readFixture(t testing.TB, name string) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func mustTime(t testing.TB, s string) time.Time {
	t.Helper()
	tm, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		t.Fatal(err)
	}
	return tm
}

// checkEvent compares every field; Time with Equal, since the same instant
// may carry a different location.
func checkEvent(t *testing.T, i int, got, want ObjectEvent) {
	t.Helper()
	if got.Action != want.Action || got.EventName != want.EventName || got.Bucket != want.Bucket ||
		got.Key != want.Key || got.Size != want.Size || got.ETag != want.ETag ||
		got.Sequencer != want.Sequencer || got.VersionID != want.VersionID || !got.Time.Equal(want.Time) {
		t.Errorf("event %d:\n got %+v\nwant %+v", i, got, want)
	}
}

func checkMalformed(t *testing.T, err error, wantErr string) {
	t.Helper()
	if err == nil {
		t.Fatalf("got no error, want one containing %q", wantErr)
	}
	if !errors.Is(err, ErrMalformed) {
		t.Errorf("error %v does not wrap ErrMalformed", err)
	}
	if !strings.Contains(err.Error(), wantErr) {
		t.Errorf("error %q does not contain %q", err, wantErr)
	}
}

// The minio_*.json fixtures are notifications captured from a real MinIO
// by the realparts suite (realparts/scenarios TestCaptureNotifications,
// `REALPARTS_CAPTURE=events/testdata realparts/run Capture`), indented and
// otherwise as published: iceberg-go data files under partition values
// with a space, a plus and a slash, the REST catalog's own metadata.json
// write (S3FileIO), a key with a literal space and plus put through the S3
// API, and its delete.
func TestDecodeNotificationFixtures(t *testing.T) {
	const (
		dataKey = "warehouse/db.db/events/data/category=a+b/00000-0-8b3c1e2a-5d4f-4c7e-9a61-2f0d9e7b1c33-00001.parquet"
		metaKey = "warehouse/db.db/events/metadata/00012-4f1d2c3b-8e9a-4b5c-a6d7-e8f901234567.metadata.json"
		// What the captured MinIO notifications name, as stored.
		capturedTable = "capture/keys/"
		strayKey      = capturedTable + "data/category=a+b/stray copy+1.parquet"
	)
	tests := []struct {
		fixture string
		enc     KeyEncoding
		want    Notification
	}{
		{
			// iceberg-go writes the partition value "a b" as "a+b"; MinIO
			// escapes the '+' as %2B (and '/' as %2F, '=' as %3D).
			fixture: "minio_put_data.json", enc: KeyEncodingURL,
			want: Notification{Events: []ObjectEvent{{
				Action: ObjectCreated, EventName: "s3:ObjectCreated:Put", Bucket: "warehouse",
				Key:  capturedTable + "data/category=a+b/00000-0-23562fc1-d60e-44e4-bd12-35cab41182fc-00001.parquet",
				Size: 1385, ETag: "30e6a591b663aceed843338e1966d393", Sequencer: "18ED116E299CF641",
				Time: mustTime(t, "2026-12-01T07:43:11.239Z"),
			}}},
		},
		{
			// "c+d" is "c%2Bd" in the path; MinIO escapes its '%' (%252B).
			fixture: "minio_put_data_escaped.json", enc: KeyEncodingURL,
			want: Notification{Events: []ObjectEvent{{
				Action: ObjectCreated, EventName: "s3:ObjectCreated:Put", Bucket: "warehouse",
				Key:  capturedTable + "data/category=c%2Bd/00000-0-1223e39c-6c6b-4c21-918d-142f8a7ed152-00001.parquet",
				Size: 1398, ETag: "b5214697f8d29aeb23d35c738ebb5efb", Sequencer: "18ED116E30458CCA",
				Time: mustTime(t, "2026-12-01T07:43:11.351Z"),
			}}},
		},
		{
			// "g/h" is "g%2Fh" in the path: one directory level, not two.
			fixture: "minio_put_data_slash.json", enc: KeyEncodingURL,
			want: Notification{Events: []ObjectEvent{{
				Action: ObjectCreated, EventName: "s3:ObjectCreated:Put", Bucket: "warehouse",
				Key:  capturedTable + "data/category=g%2Fh/00000-0-438b08ff-e2f6-4e1e-84de-1a06852d39be-00001.parquet",
				Size: 1423, ETag: "1f48bbf434050006c00ff759aa331c8a", Sequencer: "18ED116E3C09E74C",
				Time: mustTime(t, "2026-12-01T07:43:11.554Z"),
			}}},
		},
		{
			// Written by the REST catalog's S3FileIO, not by a writer.
			fixture: "minio_put_metadata.json", enc: KeyEncodingURL,
			want: Notification{Events: []ObjectEvent{{
				Action: ObjectCreated, EventName: "s3:ObjectCreated:Put", Bucket: "warehouse",
				Key:  capturedTable + "metadata/00000-c3c8b5dc-8624-4d73-b73c-558364dde3d8.metadata.json",
				Size: 851, ETag: "8e3e9a8ed160b46f3ebe9dd801cf3bd2", Sequencer: "18ED116D75C8DB28",
				Time: mustTime(t, "2026-12-01T07:43:08.266Z"),
			}}},
		},
		{
			// A literal space arrives as '+', a literal '+' as %2B.
			fixture: "minio_put_space.json", enc: KeyEncodingURL,
			want: Notification{Events: []ObjectEvent{{
				Action: ObjectCreated, EventName: "s3:ObjectCreated:Put", Bucket: "warehouse",
				Key: strayKey, Size: 11, ETag: "be6a3da1c99155c8308d81ca2c734b03", Sequencer: "18ED116EDD5E27F4",
				Time: mustTime(t, "2026-12-01T07:43:14.250Z"),
			}}},
		},
		{
			// Deletes carry no size and no eTag.
			fixture: "minio_delete.json", enc: KeyEncodingURL,
			want: Notification{Events: []ObjectEvent{{
				Action: ObjectRemoved, EventName: "s3:ObjectRemoved:Delete", Bucket: "warehouse",
				Key: strayKey, Sequencer: "18ED116F911A32CB", Time: mustTime(t, "2026-12-01T07:43:17.265Z"),
			}}},
		},
		{
			// The wrong setting for MinIO: decodes without error to a key
			// that names no object.
			fixture: "minio_put_space.json", enc: KeyEncodingRaw,
			want: Notification{Events: []ObjectEvent{{
				Action: ObjectCreated, EventName: "s3:ObjectCreated:Put", Bucket: "warehouse",
				Key:  "capture%2Fkeys%2Fdata%2Fcategory%3Da%2Bb%2Fstray+copy%2B1.parquet",
				Size: 11, ETag: "be6a3da1c99155c8308d81ca2c734b03", Sequencer: "18ED116EDD5E27F4",
				Time: mustTime(t, "2026-12-01T07:43:14.250Z"),
			}}},
		},
		{
			fixture: "aws_put.json", enc: "", // the zero value means url
			want: Notification{Events: []ObjectEvent{
				{
					Action: ObjectCreated, EventName: "s3:ObjectCreated:Put", Bucket: "amzn-s3-demo-bucket",
					Key:  "warehouse/db.db/events/data/category=red flower/00003-1-0a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d-00002.parquet",
					Size: 524288, ETag: "0123456789abcdef0123456789abcdef", Sequencer: "0055AED6DCD90281E5",
					VersionID: "096fKKXTRTtl3on89fVO.nfljtsv6qko", Time: mustTime(t, "2026-11-29T12:00:00.123Z"),
				},
				{
					Action: ObjectCreated, EventName: "s3:ObjectCreated:CompleteMultipartUpload", Bucket: "amzn-s3-demo-bucket",
					Key: metaKey, Size: 7311, ETag: "fedcba9876543210fedcba9876543210-2", Sequencer: "0055AED6DCD90281F1",
					Time: mustTime(t, "2026-11-29T12:00:02Z"),
				},
			}},
		},
		{fixture: "aws_test_event.json", enc: KeyEncodingURL, want: Notification{Test: true}},
		{fixture: "aws_test_event.json", enc: KeyEncodingRaw, want: Notification{Test: true}},
		{
			fixture: "versitygw_put.json", enc: KeyEncodingRaw,
			want: Notification{Events: []ObjectEvent{{
				Action: ObjectCreated, EventName: "s3:ObjectCreated:CompleteMultipartUpload", Bucket: "lake",
				Key: dataKey, Size: 0, ETag: "9b2cf535f27731c974343645a3985328-3",
				Sequencer: "1880A2B3C4D5E6F7", Time: mustTime(t, "2026-11-29T12:00:03Z"),
			}}},
		},
		{
			// The wrong setting for versitygw: decodes without error to the
			// wrong key. This is why the encoding is configured, not guessed.
			fixture: "versitygw_put.json", enc: KeyEncodingURL,
			want: Notification{Events: []ObjectEvent{{
				Action: ObjectCreated, EventName: "s3:ObjectCreated:CompleteMultipartUpload", Bucket: "lake",
				Key:  strings.Replace(dataKey, "a+b", "a b", 1),
				ETag: "9b2cf535f27731c974343645a3985328-3", Sequencer: "1880A2B3C4D5E6F7",
				Time: mustTime(t, "2026-11-29T12:00:03Z"),
			}}},
		},
		{fixture: "versitygw_test_event.json", enc: KeyEncodingRaw, want: Notification{Test: true}},
		{fixture: "versitygw_test_event.json", enc: KeyEncodingURL, want: Notification{Test: true}},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%s/%q", tt.fixture, tt.enc), func(t *testing.T) {
			got, err := DecodeNotification(readFixture(t, tt.fixture), tt.enc)
			if err != nil {
				t.Fatalf("DecodeNotification: %v", err)
			}
			if got.Test != tt.want.Test {
				t.Errorf("Test = %v, want %v", got.Test, tt.want.Test)
			}
			if len(got.Events) != len(tt.want.Events) {
				t.Fatalf("got %d events, want %d: %+v", len(got.Events), len(tt.want.Events), got.Events)
			}
			for i := range got.Events {
				checkEvent(t, i, got.Events[i], tt.want.Events[i])
			}
		})
	}
}

func TestObjectEventLocation(t *testing.T) {
	n, err := DecodeNotification(readFixture(t, "minio_put_data.json"), KeyEncodingURL)
	if err != nil {
		t.Fatal(err)
	}
	// The form the table's metadata names the file by (iceberg-go wrote it).
	const want = "s3://warehouse/capture/keys/data/category=a+b/00000-0-23562fc1-d60e-44e4-bd12-35cab41182fc-00001.parquet"
	if got := n.Events[0].Location(); got != want {
		t.Errorf("Location = %q, want %q", got, want)
	}
}

// record renders one plain-shape record with the given fields; an empty
// string leaves the field out.
func record(eventName, bucket, key, eventTime string) string {
	var b strings.Builder
	b.WriteString(`{`)
	if eventTime != "" {
		fmt.Fprintf(&b, `"eventTime":%s,`, jsonString(eventTime))
	}
	if eventName != "" {
		fmt.Fprintf(&b, `"eventName":%s,`, jsonString(eventName))
	}
	b.WriteString(`"s3":{`)
	if bucket != "" {
		fmt.Fprintf(&b, `"bucket":{"name":%s},`, jsonString(bucket))
	}
	b.WriteString(`"object":{`)
	if key != "" {
		fmt.Fprintf(&b, `"key":%s,`, jsonString(key))
	}
	b.WriteString(`"sequencer":"01"}}}`)
	return b.String()
}

func jsonString(s string) string {
	out, err := json.Marshal(s)
	if err != nil {
		panic(err)
	}
	return string(out)
}

func records(recs ...string) []byte {
	return []byte(`{"Records":[` + strings.Join(recs, ",") + `]}`)
}

func TestDecodeNotificationKeys(t *testing.T) {
	tests := []struct {
		name    string
		enc     KeyEncoding
		key     string // as sent in the record
		want    string
		wantErr string
	}{
		{name: "hive path, escaped, url", enc: KeyEncodingURL,
			key: "data%2Fcategory%3Da+b%2Fcaf%C3%A9.parquet", want: "data/category=a b/café.parquet"},
		{name: "hive path, escaped, raw keeps it", enc: KeyEncodingRaw,
			key: "data%2Fcategory%3Da+b%2Fcaf%C3%A9.parquet", want: "data%2Fcategory%3Da+b%2Fcaf%C3%A9.parquet"},
		{name: "plus is space, %2B is plus, url", enc: KeyEncodingURL,
			key: "data/category=a+b/x%2B.parquet", want: "data/category=a b/x+.parquet"},
		{name: "plus and %2B stay, raw", enc: KeyEncodingRaw,
			key: "data/category=a+b/x%2B.parquet", want: "data/category=a+b/x%2B.parquet"},
		{name: "%20 is space, url", enc: KeyEncodingURL,
			key: "data/category=a%20b/x.parquet", want: "data/category=a b/x.parquet"},
		{name: "literal space, url", enc: KeyEncodingURL,
			key: "data/category=a b/x.parquet", want: "data/category=a b/x.parquet"},
		{name: "literal space, raw", enc: KeyEncodingRaw,
			key: "data/category=a b/x.parquet", want: "data/category=a b/x.parquet"},
		{name: "escaped equals, url", enc: KeyEncodingURL,
			key: "data/ts_day%3D2026-11-29/x.parquet", want: "data/ts_day=2026-11-29/x.parquet"},
		{name: "literal equals, raw", enc: KeyEncodingRaw,
			key: "data/ts_day=2026-11-29/x.parquet", want: "data/ts_day=2026-11-29/x.parquet"},
		{name: "percent, url", enc: KeyEncodingURL,
			key: "data/rate=100%25/x.parquet", want: "data/rate=100%/x.parquet"},
		{name: "percent, raw", enc: KeyEncodingRaw,
			key: "data/rate=100%/x.parquet", want: "data/rate=100%/x.parquet"},
		{name: "non-ASCII escaped, url", enc: KeyEncodingURL,
			key: "data/city=%E6%97%A5%E6%9C%AC/%C3%BC.parquet", want: "data/city=日本/ü.parquet"},
		{name: "non-ASCII literal, url", enc: KeyEncodingURL,
			key: "data/city=日本/ü.parquet", want: "data/city=日本/ü.parquet"},
		{name: "non-ASCII literal, raw", enc: KeyEncodingRaw,
			key: "data/city=日本/ü.parquet", want: "data/city=日本/ü.parquet"},
		{name: "non-ASCII escaped, raw keeps escapes", enc: KeyEncodingRaw,
			key: "data/city=%E6%97%A5/x.parquet", want: "data/city=%E6%97%A5/x.parquet"},
		{name: "invalid escape, url", enc: KeyEncodingURL,
			key: "data/%zz.parquet", wantErr: `record 0: s3.object.key "data/%zz.parquet" is not valid URL encoding`},
		{name: "invalid escape, raw", enc: KeyEncodingRaw,
			key: "data/%zz.parquet", want: "data/%zz.parquet"},
		{name: "trailing percent, url", enc: KeyEncodingURL,
			key: "data/x.parquet%", wantErr: `record 0: s3.object.key "data/x.parquet%" is not valid URL encoding`},
		{name: "trailing percent, raw", enc: KeyEncodingRaw,
			key: "data/x.parquet%", want: "data/x.parquet%"},
		{name: "short escape, url", enc: KeyEncodingURL,
			key: "data/x%4.parquet", wantErr: `"data/x%4.parquet" is not valid URL encoding`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := DecodeNotification(records(record("s3:ObjectCreated:Put", "lake", tt.key, "")), tt.enc)
			if tt.wantErr != "" {
				checkMalformed(t, err, tt.wantErr)
				return
			}
			if err != nil {
				t.Fatalf("DecodeNotification: %v", err)
			}
			if len(got.Events) != 1 {
				t.Fatalf("got %d events, want 1", len(got.Events))
			}
			ev := got.Events[0]
			if ev.Key != tt.want {
				t.Errorf("Key = %q, want %q", ev.Key, tt.want)
			}
			if want := "s3://lake/" + tt.want; ev.Location() != want {
				t.Errorf("Location = %q, want %q", ev.Location(), want)
			}
			if !ev.Time.IsZero() {
				t.Errorf("Time = %v, want zero for a record without eventTime", ev.Time)
			}
		})
	}
}

// manyRecords renders a plain message with n small records.
func manyRecords(n int) []byte {
	recs := make([]string, n)
	for i := range recs {
		recs[i] = record("s3:ObjectCreated:Put", "lake", fmt.Sprintf("data/%05d.parquet", i), "")
	}
	return records(recs...)
}

func TestDecodeNotificationErrors(t *testing.T) {
	good := record("s3:ObjectCreated:Put", "lake", "data/x.parquet", "2026-11-29T12:00:00Z")
	minio := readFixture(t, "minio_put_data.json")
	tests := []struct {
		name    string
		in      []byte
		wantErr string
	}{
		{name: "truncated", in: minio[:len(minio)/2], wantErr: "invalid JSON: unexpected end of JSON input"},
		{name: "truncated inside a key", in: []byte(`{"Records":[{"s3":{"object":{"key":"data/x.par`), wantErr: "invalid JSON"},
		{name: "empty input", in: nil, wantErr: "invalid JSON"},
		{name: "not JSON", in: []byte("s3:ObjectCreated:Put lake/data/x.parquet"), wantErr: "invalid JSON"},
		{name: "top-level array", in: []byte("[" + good + "]"), wantErr: "invalid JSON"},
		{name: "Records not an array", in: []byte(`{"Records":` + good + `}`), wantErr: "invalid JSON"},
		{name: "size is a string", in: []byte(`{"Records":[{"eventName":"s3:ObjectCreated:Put","s3":{"bucket":{"name":"lake"},"object":{"key":"k","size":"12"}}}]}`),
			wantErr: "invalid JSON"},
		{name: "empty object", in: []byte(`{}`), wantErr: "no Records and not a test event"},
		{name: "null Records", in: []byte(`{"Records":null}`), wantErr: "no Records and not a test event"},
		{name: "envelope without Records", in: []byte(`{"EventName":"s3:ObjectCreated:Put","Key":"lake/data/x.parquet"}`),
			wantErr: "no Records and not a test event"},
		{name: "empty Records", in: []byte(`{"Records":[]}`), wantErr: "Records is empty"},
		{name: "other Event", in: []byte(`{"Service":"S3","Event":"s3:SomethingElse"}`), wantErr: `Event "s3:SomethingElse" is not s3:TestEvent`},
		{name: "missing bucket", in: records(good, record("s3:ObjectCreated:Put", "", "data/y.parquet", "")),
			wantErr: "record 1: s3.bucket.name is missing"},
		{name: "empty bucket name", in: []byte(`{"Records":[{"eventName":"s3:ObjectCreated:Put","s3":{"bucket":{"name":""},"object":{"key":"k"}}}]}`),
			wantErr: "record 0: s3.bucket.name is missing"},
		{name: "empty key", in: []byte(`{"Records":[{"eventName":"s3:ObjectCreated:Put","s3":{"bucket":{"name":"lake"},"object":{"key":""}}}]}`),
			wantErr: "record 0: s3.object.key is missing or empty"},
		{name: "missing key", in: records(good, good, record("s3:ObjectRemoved:Delete", "lake", "", "")),
			wantErr: "record 2: s3.object.key is missing or empty"},
		{name: "missing eventName", in: records(record("", "lake", "data/x.parquet", "")), wantErr: "record 0: eventName is missing"},
		{name: "eventTime not RFC 3339", in: records(record("s3:ObjectCreated:Put", "lake", "k", "2026-11-29 12:00:00")),
			wantErr: `record 0: eventTime "2026-11-29 12:00:00" is not RFC 3339`},
		{name: "eventTime with en dashes", in: records(record("s3:ObjectCreated:Put", "lake", "k", "2016–09–08T22:34:38.226Z")),
			wantErr: "record 0: eventTime"},
		{name: "negative size", in: []byte(`{"Records":[{"eventName":"s3:ObjectCreated:Put","s3":{"bucket":{"name":"lake"},"object":{"key":"k","size":-1}}}]}`),
			wantErr: "record 0: s3.object.size is negative (-1)"},
		{name: "too many records", in: manyRecords(MaxRecords + 1), wantErr: "Records has 1001 entries, more than the 1000"},
		{name: "long invalid key is truncated", in: records(record("s3:ObjectCreated:Put", "lake", strings.Repeat("a", 1000)+"%", "")),
			wantErr: strings.Repeat("a", excerpt.Max) + `"…(1001 bytes) is not valid URL encoding`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := DecodeNotification(tt.in, KeyEncodingURL)
			checkMalformed(t, err, tt.wantErr)
			if got.Test || got.Events != nil {
				t.Errorf("on error got %+v, want the zero Notification", got)
			}
		})
	}
}

func TestDecodeNotificationRecordCounts(t *testing.T) {
	for _, n := range []int{1, 500, MaxRecords} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			got, err := DecodeNotification(manyRecords(n), KeyEncodingRaw)
			if err != nil {
				t.Fatalf("DecodeNotification: %v", err)
			}
			if len(got.Events) != n {
				t.Fatalf("got %d events, want %d", len(got.Events), n)
			}
			if last := got.Events[n-1].Key; last != fmt.Sprintf("data/%05d.parquet", n-1) {
				t.Errorf("last key = %q", last)
			}
		})
	}
}

func TestDecodeNotificationEventNames(t *testing.T) {
	tests := []struct {
		in       string
		wantName string
		want     ObjectAction
	}{
		{"s3:ObjectCreated:Put", "s3:ObjectCreated:Put", ObjectCreated},
		{"s3:ObjectCreated:Post", "s3:ObjectCreated:Post", ObjectCreated},
		{"s3:ObjectCreated:Copy", "s3:ObjectCreated:Copy", ObjectCreated},
		{"s3:ObjectCreated:CompleteMultipartUpload", "s3:ObjectCreated:CompleteMultipartUpload", ObjectCreated},
		{"ObjectCreated:Put", "s3:ObjectCreated:Put", ObjectCreated}, // AWS form
		{"ObjectCreated:CompleteMultipartUpload", "s3:ObjectCreated:CompleteMultipartUpload", ObjectCreated},
		{"s3:ObjectRemoved:Delete", "s3:ObjectRemoved:Delete", ObjectRemoved},
		{"ObjectRemoved:DeleteMarkerCreated", "s3:ObjectRemoved:DeleteMarkerCreated", ObjectRemoved},
		{"s3:ObjectRemoved:DeleteObjects", "s3:ObjectRemoved:DeleteObjects", ObjectRemoved}, // versitygw
		{"LifecycleExpiration:Delete", "s3:LifecycleExpiration:Delete", ObjectRemoved},
		{"s3:ObjectAccessed:Get", "s3:ObjectAccessed:Get", ObjectOther},
		{"s3:Replication:OperationCompletedReplication", "s3:Replication:OperationCompletedReplication", ObjectOther},
		{"s3:ObjectRestore:Completed", "s3:ObjectRestore:Completed", ObjectOther},
		{"s3:ObjectTagging:Put", "s3:ObjectTagging:Put", ObjectOther},               // versitygw, AWS
		{"s3:ObjectCreated:PutTagging", "s3:ObjectCreated:PutTagging", ObjectOther}, // MinIO: no new data
		{"s3:ObjectCreated:PutRetention", "s3:ObjectCreated:PutRetention", ObjectOther},
		{"s3:LifecycleDelMarkerExpiration:Delete", "s3:LifecycleDelMarkerExpiration:Delete", ObjectOther},
		{"s3:SomethingNew:Invented", "s3:SomethingNew:Invented", ObjectOther},
		{"Whatever", "s3:Whatever", ObjectOther},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := DecodeNotification(records(record(tt.in, "lake", "k", "")), KeyEncodingURL)
			if err != nil {
				t.Fatalf("DecodeNotification: %v", err)
			}
			ev := got.Events[0]
			if ev.EventName != tt.wantName || ev.Action != tt.want {
				t.Errorf("got (%q, %v), want (%q, %v)", ev.EventName, ev.Action, tt.wantName, tt.want)
			}
		})
	}
	for a, want := range map[ObjectAction]string{ObjectCreated: "created", ObjectRemoved: "removed", ObjectOther: "other", 42: "other"} {
		if got := a.String(); got != want {
			t.Errorf("ObjectAction(%d).String() = %q, want %q", int(a), got, want)
		}
	}
}

func TestDecodeNotificationShapes(t *testing.T) {
	rec := record("s3:ObjectCreated:Put", "lake", "data%2Fx.parquet", "2026-11-29T12:00:00Z")
	tests := []struct {
		name    string
		in      string
		wantKey string
	}{
		{name: "plain", in: `{"Records":[` + rec + `]}`, wantKey: "data/x.parquet"},
		{name: "envelope", in: `{"EventName":"s3:ObjectCreated:Put","Key":"lake/data/x.parquet","Records":[` + rec + `]}`, wantKey: "data/x.parquet"},
		{
			// Records are authoritative: a disagreeing envelope is ignored.
			name:    "envelope disagrees",
			in:      `{"EventName":"s3:ObjectRemoved:Delete","Key":"other/elsewhere","Records":[` + rec + `]}`,
			wantKey: "data/x.parquet",
		},
		{
			// A test marker next to real records does not hide them.
			name:    "records beside a test marker",
			in:      `{"Event":"s3:TestEvent","Records":[` + rec + `]}`,
			wantKey: "data/x.parquet",
		},
		{
			name:    "unknown fields everywhere",
			in:      `{"level":"info","time":{"a":[1,2]},"Records":[{"extra":[{}],"eventName":"s3:ObjectCreated:Put","s3":{"x":1,"bucket":{"name":"lake","arn":"a"},"object":{"key":"data%2Fx.parquet","userMetadata":{"k":"v"}}}}]}`,
			wantKey: "data/x.parquet",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := DecodeNotification([]byte(tt.in), KeyEncodingURL)
			if err != nil {
				t.Fatalf("DecodeNotification: %v", err)
			}
			if got.Test || len(got.Events) != 1 {
				t.Fatalf("got %+v, want one event", got)
			}
			if ev := got.Events[0]; ev.Key != tt.wantKey || ev.Bucket != "lake" || ev.Action != ObjectCreated {
				t.Errorf("got %+v", ev)
			}
		})
	}
}

func TestDecodeNotificationUnknownEncoding(t *testing.T) {
	_, err := DecodeNotification(readFixture(t, "minio_put_data.json"), KeyEncoding("base64"))
	if err == nil {
		t.Fatal("want an error for an unknown key encoding")
	}
	// A caller bug, not a bad message: it must not dead-letter the message.
	if errors.Is(err, ErrMalformed) {
		t.Errorf("error %v wraps ErrMalformed", err)
	}
	if !strings.Contains(err.Error(), `unknown key encoding "base64"`) {
		t.Errorf("error %q does not name the encoding", err)
	}
}

func TestParseKeyEncoding(t *testing.T) {
	tests := []struct {
		in      string
		want    KeyEncoding
		wantErr bool
	}{
		{in: "", want: KeyEncodingURL},
		{in: "url", want: KeyEncodingURL},
		{in: "raw", want: KeyEncodingRaw},
		{in: " RAW ", want: KeyEncodingRaw},
		{in: "URL", want: KeyEncodingURL},
		{in: "plain", wantErr: true},
		{in: "urlencoded", wantErr: true},
		{in: "auto", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := ParseKeyEncoding(tt.in)
			if tt.wantErr {
				if err == nil {
					t.Fatalf("ParseKeyEncoding(%q) = %q, want an error", tt.in, got)
				}
				for _, s := range []string{fmt.Sprintf("%q", tt.in), `"url"`, `"raw"`} {
					if !strings.Contains(err.Error(), s) {
						t.Errorf("error %q does not contain %s", err, s)
					}
				}
				return
			}
			if err != nil || got != tt.want {
				t.Errorf("ParseKeyEncoding(%q) = %q, %v; want %q", tt.in, got, err, tt.want)
			}
		})
	}
}

// benchMessages renders n single-record notifications with the mix a busy
// lake produces: 90 % data files, 10 % metadata.json commits. url selects
// MinIO's envelope and escaping, otherwise versitygw's plain, raw form.
func benchMessages(n int, urlEncoded bool) [][]byte {
	msgs := make([][]byte, n)
	for i := range msgs {
		uuid := fmt.Sprintf("%08x-%04x-4%03x-8%03x-%012x", i*2654435761, i%0xffff, i%0xfff, (i*7)%0xfff, i*40503)
		key := fmt.Sprintf("warehouse/db.db/events/data/category=%c/%05d-0-%s-00001.parquet", 'a'+i%8, i%100, uuid)
		name, size := "s3:ObjectCreated:Put", 134217728-i
		if i%10 == 9 {
			key = fmt.Sprintf("warehouse/db.db/events/metadata/%05d-%s.metadata.json", i, uuid)
			size = 8192 + i
		}
		wireKey := key
		if urlEncoded {
			wireKey = url.QueryEscape(key)
		}
		rec := fmt.Sprintf(`{"eventVersion":"2.0","eventSource":"minio:s3","awsRegion":"","eventTime":"2026-11-29T12:%02d:%02d.%03dZ",`+
			`"eventName":%q,"userIdentity":{"principalId":"minioadmin"},`+
			`"requestParameters":{"principalId":"minioadmin","region":"","sourceIPAddress":"10.0.0.7"},`+
			`"responseElements":{"x-amz-id-2":"dd9025bab4ad464b049177c95eb6ebf374d3b3fd1af9251148b658df7ac2e3e8","x-amz-request-id":"187C5E2A3F9B1D04",`+
			`"x-minio-deployment-id":"5c2f4b7e-0d1a-4e3b-9f6c-7a8b9c0d1e2f","x-minio-origin-endpoint":"http://10.0.0.5:9000"},`+
			`"s3":{"s3SchemaVersion":"1.0","configurationId":"Config","bucket":{"name":"lake","ownerIdentity":{"principalId":"minioadmin"},"arn":"arn:aws:s3:::lake"},`+
			`"object":{"key":%s,"size":%d,"eTag":"d41d8cd98f00b204e9800998ecf8427e","contentType":"application/octet-stream",`+
			`"userMetadata":{"content-type":"application/octet-stream"},"sequencer":"187C5E2A3F9B%04X"}},`+
			`"source":{"host":"10.0.0.7","port":"","userAgent":"aws-sdk-go-v2/1.45.1"}}`,
			i/60%60, i%60, i%1000, name, jsonString(wireKey), size, i%0xffff)
		if urlEncoded {
			msgs[i] = fmt.Appendf(nil, `{"EventName":%q,"Key":%s,"Records":[%s]}`, name, jsonString("lake/"+key), rec)
		} else {
			msgs[i] = fmt.Appendf(nil, `{"Records":[%s]}`, rec)
		}
	}
	return msgs
}

func BenchmarkDecodeNotification(b *testing.B) {
	for _, bc := range []struct {
		name string
		url  bool
		enc  KeyEncoding
	}{
		{"minio-url", true, KeyEncodingURL},
		{"versitygw-raw", false, KeyEncodingRaw},
	} {
		b.Run(bc.name, func(b *testing.B) {
			msgs := benchMessages(1000, bc.url)
			var total int
			for _, m := range msgs {
				total += len(m)
			}
			b.SetBytes(int64(total / len(msgs)))
			b.ReportAllocs()
			events, i := 0, 0
			for b.Loop() {
				n, err := DecodeNotification(msgs[i%len(msgs)], bc.enc)
				if err != nil {
					b.Fatal(err)
				}
				events += len(n.Events)
				i++
			}
			b.ReportMetric(float64(events)/b.Elapsed().Seconds(), "events/s")
		})
	}
}
