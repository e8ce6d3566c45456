package triggers

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/icereactor/reactor/embedded/embeddedtest"
	"github.com/icereactor/reactor/metrics"
)

// A forwarded copy is stored once however often its original comes back,
// and a new event is never taken for an old one's copy: not after its
// stream was deleted and created again (a NATS server that lost its
// JetStream store, the realparts restart scenario) and the new stream's
// sequence numbers started over at 1 within the shard stream's
// duplicate window.
func TestForwardedCopiesSurviveAStreamCreatedAgain(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, _, js := embeddedtest.JetStream(t, "")
	if err := EnsureShardStream(ctx, js, 1, StreamLimits{}); err != nil {
		t.Fatal(err)
	}
	fwd := newForwarder(js, slog.New(slog.NewTextHandler(io.Discard, nil)), metrics.New())
	defer fwd.close()

	source := jetstream.StreamConfig{Name: "SOURCE", Subjects: []string{"source.>"}}
	// receive publishes data on the source stream and returns it as a
	// consumer delivers it.
	receive := func(data string) jetstream.Msg {
		t.Helper()
		if _, err := js.Publish(ctx, "source.db.events", []byte(data)); err != nil {
			t.Fatal(err)
		}
		cons, err := js.CreateOrUpdateConsumer(ctx, source.Name, jetstream.ConsumerConfig{Durable: "c", AckPolicy: jetstream.AckExplicitPolicy})
		if err != nil {
			t.Fatal(err)
		}
		msg, err := cons.Next(jetstream.FetchMaxWait(10 * time.Second))
		if err != nil {
			t.Fatal(err)
		}
		return msg
	}
	forward := func(msg jetstream.Msg) {
		t.Helper()
		done := make(chan error, 1)
		fwd.forward("notification", msg, 7, func(err error) { done <- err })
		select {
		case err := <-done:
			if err != nil {
				t.Fatal(err)
			}
		case <-time.After(time.Minute):
			t.Fatal("timed out after 1m waiting for the forward to be acknowledged")
		}
	}

	if _, err := js.CreateStream(ctx, source); err != nil {
		t.Fatal(err)
	}
	first := receive("first")
	forward(first)
	forward(first) // its original redelivered, the copy sent again
	if err := js.DeleteStream(ctx, source.Name); err != nil {
		t.Fatal(err)
	}
	if _, err := js.CreateStream(ctx, source); err != nil {
		t.Fatal(err)
	}
	second := receive("second")
	if a, b := mustMetadata(t, first), mustMetadata(t, second); a.Sequence.Stream != b.Sequence.Stream {
		t.Fatalf("the streams' sequences differ (%d, %d): the test no longer makes them collide", a.Sequence.Stream, b.Sequence.Stream)
	}
	forward(second)

	shards, err := js.Stream(ctx, DefaultShardStream)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for seq := uint64(1); ; seq++ {
		m, err := shards.GetMsg(ctx, seq)
		if err != nil {
			break
		}
		got = append(got, string(m.Data))
	}
	if len(got) != 2 || got[0] != "first" || got[1] != "second" {
		t.Errorf("shard stream holds %q, want [first second]: each event once", got)
	}
}

func mustMetadata(t *testing.T, msg jetstream.Msg) *jetstream.MsgMetadata {
	t.Helper()
	md, err := msg.Metadata()
	if err != nil {
		t.Fatal(err)
	}
	return md
}
