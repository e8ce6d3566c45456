package scenarios

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/icereactor/reactor/events"
	"github.com/icereactor/reactor/streamwriter"
)

// captured is one notification as MinIO published it, and its decoding.
type captured struct {
	raw   []byte
	event events.ObjectEvent
	agent string // the record's source.userAgent: who wrote the object
}

// notificationTap records every notification MinIO publishes, through a
// JetStream stream of its own on the notification subject (MinIO publishes
// through JetStream: without a stream it would queue them instead).
type notificationTap struct {
	mu   sync.Mutex
	msgs []captured
	sub  *nats.Subscription
}

const tapStream = "REALPARTS_TAP"

func (s *suite) tap(t *testing.T) *notificationTap {
	t.Helper()
	ctx := context.Background()
	s.resetStreams(t)
	subject := s.settings.MinIO.Env["MINIO_NOTIFY_NATS_SUBJECT_PRIMARY"]
	if _, err := s.js.CreateStream(ctx, jetstream.StreamConfig{Name: tapStream, Subjects: []string{subject}}); err != nil {
		t.Fatal(err)
	}
	tp := &notificationTap{}
	sub, err := s.conn.Subscribe(subject, func(m *nats.Msg) {
		n, err := events.DecodeNotification(m.Data, events.KeyEncodingURL)
		if err != nil {
			t.Errorf("MinIO published a notification reactor cannot decode: %v\n%s", err, m.Data)
			return
		}
		if len(n.Events) != 1 {
			t.Errorf("MinIO published %d records in one message, want 1: %s", len(n.Events), m.Data)
			return
		}
		var rec struct {
			Records []struct {
				Source struct {
					UserAgent string `json:"userAgent"`
				} `json:"source"`
			} `json:"Records"`
		}
		_ = json.Unmarshal(m.Data, &rec)
		tp.mu.Lock()
		tp.msgs = append(tp.msgs, captured{raw: bytes.Clone(m.Data), event: n.Events[0], agent: rec.Records[0].Source.UserAgent})
		tp.mu.Unlock()
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.conn.Flush(); err != nil {
		t.Fatal(err)
	}
	tp.sub = sub
	t.Cleanup(func() {
		_ = sub.Unsubscribe()
		_ = s.js.DeleteStream(ctx, tapStream)
	})
	return tp
}

// find waits for the notification of action on key and returns it.
func (tp *notificationTap) find(t *testing.T, action events.ObjectAction, key string) captured {
	t.Helper()
	var got captured
	eventually(t, "the notification of "+action.String()+" "+key, time.Minute, func() bool {
		tp.mu.Lock()
		defer tp.mu.Unlock()
		for _, c := range tp.msgs {
			if c.event.Action == action && c.event.Key == key {
				got = c
				return true
			}
		}
		return false
	}, func() string { return tp.keys() })
	return got
}

func (tp *notificationTap) keys() string {
	tp.mu.Lock()
	defer tp.mu.Unlock()
	var b strings.Builder
	b.WriteString("notifications seen:\n")
	for _, c := range tp.msgs {
		b.WriteString("  " + c.event.EventName + " " + c.event.Key + "\n")
	}
	return b.String()
}

// TestCaptureNotifications writes the objects whose notifications reactor
// depends on — iceberg-go data files under partition values with a space,
// a plus, an equals sign and a slash, the REST catalog's own metadata.json
// writes (S3FileIO), a key with a literal space and plus, deletes — and
// checks that reactor's decoder turns every notification MinIO publishes
// back into exactly the key written. With REALPARTS_CAPTURE set it also
// writes them as the fixtures of events/notification_test.go.
func TestCaptureNotifications(t *testing.T) {
	s := need(t)
	ctx := context.Background()
	tp := s.tap(t)
	l := s.openLake(t, "capture", "keys")
	created := l.createTable(nil)
	bucket, prefix := l.location()

	// The creation's metadata.json was written by the REST catalog itself.
	_, metaKey, err := splitS3(created.MetadataLocation())
	if err != nil {
		t.Fatal(err)
	}
	meta := tp.find(t, events.ObjectCreated, metaKey)
	if !strings.Contains(strings.ToLower(meta.agent), "java") {
		t.Errorf("metadata.json notification from %q: want the REST catalog's S3FileIO (aws-sdk-java)", meta.agent)
	}

	w := streamwriter.New(l.cat, l.ident, nil)
	for _, category := range []string{"a b", "c+d", "e=f", "g/h"} {
		if _, err := w.Commit(ctx, category, 3); err != nil {
			t.Fatal(err)
		}
	}
	// Every object under the table (data files, manifests, manifest
	// lists, metadata files) came back under exactly its key.
	keys, err := s.listKeys(ctx, bucket, prefix)
	if err != nil {
		t.Fatal(err)
	}
	byPartition := map[string]captured{}
	for _, key := range keys {
		c := tp.find(t, events.ObjectCreated, key)
		if c.event.Bucket != bucket || c.event.Size <= 0 {
			t.Errorf("%s: notification says bucket %q, size %d", key, c.event.Bucket, c.event.Size)
		}
		if part, _, ok := strings.Cut(strings.TrimPrefix(key, prefix+"data/"), "/"); ok && strings.HasPrefix(key, prefix+"data/") {
			byPartition[part] = c
		}
	}
	for _, part := range []string{"category=a+b", "category=c%2Bd", "category=e%3Df", "category=g%2Fh"} {
		if _, ok := byPartition[part]; !ok {
			t.Errorf("no data file under %s (iceberg-go's escaping of the partition value changed?): %v", part, slices.Collect(maps.Keys(byPartition)))
		}
	}

	// A key with a literal space and plus, put and deleted through the S3
	// API (an aborted upload's leftover, say).
	strayKey := prefix + "data/category=a+b/stray copy+1.parquet"
	if _, err := s.s3.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String(strayKey),
		Body: strings.NewReader("not parquet")}); err != nil {
		t.Fatal(err)
	}
	stray := tp.find(t, events.ObjectCreated, strayKey)
	if stray.event.Size != int64(len("not parquet")) {
		t.Errorf("stray put: size %d", stray.event.Size)
	}
	if _, err := s.s3.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(bucket), Key: aws.String(strayKey)}); err != nil {
		t.Fatal(err)
	}
	deleted := tp.find(t, events.ObjectRemoved, strayKey)
	if deleted.event.Size != 0 || deleted.event.EventName != "s3:ObjectRemoved:Delete" {
		t.Errorf("delete notification: %s, size %d; want s3:ObjectRemoved:Delete without a size", deleted.event.EventName, deleted.event.Size)
	}
	// A multi-object delete: one notification per key.
	multi := []string{prefix + "data/category=e%3Df/x 1.parquet", prefix + "data/category=e%3Df/x=2.parquet"}
	var ids []s3types.ObjectIdentifier
	for _, k := range multi {
		if _, err := s.s3.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String(k), Body: strings.NewReader("x")}); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, s3types.ObjectIdentifier{Key: aws.String(k)})
	}
	if _, err := s.s3.DeleteObjects(ctx, &s3.DeleteObjectsInput{Bucket: aws.String(bucket), Delete: &s3types.Delete{Objects: ids}}); err != nil {
		t.Fatal(err)
	}
	for _, k := range multi {
		tp.find(t, events.ObjectRemoved, k)
	}

	if dir := s.captureDir; dir != "" {
		fixtures := map[string]captured{
			"minio_put_metadata.json":     meta,
			"minio_put_data.json":         byPartition["category=a+b"],
			"minio_put_data_escaped.json": byPartition["category=c%2Bd"],
			"minio_put_data_slash.json":   byPartition["category=g%2Fh"],
			"minio_put_space.json":        stray,
			"minio_delete.json":           deleted,
		}
		for name, c := range fixtures {
			var out bytes.Buffer
			if err := json.Indent(&out, c.raw, "", "  "); err != nil {
				t.Fatal(err)
			}
			out.WriteByte('\n')
			if err := os.WriteFile(filepath.Join(dir, name), out.Bytes(), 0o644); err != nil {
				t.Fatal(err)
			}
			t.Logf("wrote %s: %s %s", name, c.event.EventName, c.event.Key)
		}
	}
}

// MinIO names its notification target with the case of the variables'
// suffix and refuses any other spelling of the ARN.
func TestMinIOARNIsCaseSensitive(t *testing.T) {
	s := need(t)
	ctx := context.Background()
	const bucket = "arn-case"
	if _, err := s.s3.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(bucket)}); err != nil {
		t.Fatal(err)
	}
	lower := strings.Replace(s.settings.MinIO.Notification.ARN, "PRIMARY", "primary", 1)
	err := s.putNotification(ctx, bucket, lower)
	var apiErr smithy.APIError
	if !errors.As(err, &apiErr) || apiErr.ErrorCode() != "InvalidArgument" {
		t.Errorf("rule with %s: got %v, want MinIO's InvalidArgument", lower, err)
	}
	if err := s.putNotification(ctx, bucket, s.settings.MinIO.Notification.ARN); err != nil {
		t.Errorf("rule with %s: %v", s.settings.MinIO.Notification.ARN, err)
	}
}
