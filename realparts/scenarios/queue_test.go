package scenarios

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/nats-io/nats.go/jetstream"
)

// With no stream on the subject, MinIO (JetStream on) cannot store its
// events; with the queue directory set it keeps them on disk and re-sends
// them until a stream exists, and each then lands exactly once. This is
// why the queue directory is a required setting: reactor creates its
// notification stream when it starts, and whatever MinIO published before
// that (a first deployment, a NATS server that lost its store) would be
// gone.
func TestQueueDirKeepsEventsUntilTheStreamExists(t *testing.T) {
	s := need(t)
	ctx := context.Background()
	s.resetStreams(t)
	subject := s.settings.MinIO.Env["MINIO_NOTIFY_NATS_SUBJECT_PRIMARY"]
	bucket := s.settings.MinIO.Bucket
	const n = 5
	keys := make([]string, n)
	for i := range keys {
		keys[i] = fmt.Sprintf("queue-test/object-%d.txt", i)
		if _, err := s.s3.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String(keys[i]),
			Body: strings.NewReader("x")}); err != nil {
			t.Fatal(err)
		}
	}
	// Long enough for MinIO to have tried (and failed) to publish each.
	time.Sleep(10 * time.Second)
	stream, err := s.js.CreateStream(ctx, jetstream.StreamConfig{Name: tapStream, Subjects: []string{subject}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.js.DeleteStream(ctx, tapStream) })
	count := func() map[string]int {
		seen := map[string]int{}
		info, err := stream.Info(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for seq := info.State.FirstSeq; info.State.Msgs > 0 && seq <= info.State.LastSeq; seq++ {
			msg, err := stream.GetMsg(ctx, seq)
			if err != nil {
				continue
			}
			for _, k := range keys {
				if strings.Contains(string(msg.Data), `"Key":"`+bucket+"/"+k+`"`) {
					seen[k]++
				}
			}
		}
		return seen
	}
	eventually(t, "every queued event delivered once the stream exists", time.Minute, func() bool {
		return len(count()) == n
	}, func() string { return fmt.Sprintf("delivered: %v\n%s", count(), s.minio.tail(20)) })
	// MinIO re-sends every few seconds: wait past two rounds for duplicates.
	time.Sleep(12 * time.Second)
	for k, c := range count() {
		if c != 1 {
			t.Errorf("%s delivered %d times, want once", k, c)
		}
	}
}
