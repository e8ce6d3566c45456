package worker

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/icereactor/reactor/events"
	"github.com/icereactor/reactor/metrics"
	"github.com/icereactor/reactor/triggers"
)

// Every class of poison message (a megabyte table name, namespace,
// timestamp, eventTime or key; invalid UTF-8; broken JSON; a payload over
// reactor's bound or filling the server's max payload) is dead-lettered
// exactly once, with its original bytes, and acknowledged once (nothing is
// redelivered, the work-queue streams end empty); the log stays small; and
// the good events after them are still applied.
func TestPoisonMessagesAreDeadLetteredOnceWithTheirBytes(t *testing.T) {
	h := newHarness(t, testThresholds, nil)
	w := h.start()
	maxPayload := int(h.conn.MaxPayload())
	mb := strings.Repeat("x", 1_000_000)
	kb := strings.Repeat("y", 200_000)
	const commits, notes = "iceberg.commits.db.events", triggers.DefaultNotificationSubject
	rec := func(bucket, key, eventTime string) string {
		return fmt.Sprintf(`{"Records":[{"eventName":"s3:ObjectCreated:Put","eventTime":%q,"s3":{"bucket":{"name":%q},"object":{"key":%q,"size":1}}}]}`,
			eventTime, bucket, key)
	}
	fill := func(prefix string) string { // a message exactly as large as the server takes
		return prefix + strings.Repeat(" ", maxPayload-len(prefix))
	}
	poison := []struct {
		name, subject, payload, reason, errText string
	}{
		{"1 MB table name", commits, `{"namespace":"db","table":"` + mb + `","snapshot_id":1}`, events.ReasonMalformed, "payload is 1000045 bytes"},
		{"200 KB table name", commits, `{"namespace":"db","table":"` + kb + `","snapshot_id":1}`, events.ReasonMalformed, "field table is 200000 bytes long"},
		{"1 MB namespace", commits, `{"namespace":"` + mb + `","table":"t","snapshot_id":1}`, events.ReasonMalformed, "payload is"},
		{"200 KB namespace", commits, `{"namespace":"` + kb + `","table":"t","snapshot_id":1}`, events.ReasonMalformed, "field namespace is 200000 bytes long"},
		{"200 KB timestamp", commits, `{"namespace":"db","table":"events","snapshot_id":1,"committed_at":"` + kb + `"}`, events.ReasonMalformed, "parsing time"},
		{"1 KB unknown table", commits, `{"namespace":"db","table":"` + strings.Repeat("u", 1000) + `","snapshot_id":1}`, events.ReasonUnknownTable, "unknown table"},
		{"invalid UTF-8 commit", commits, "{\"namespace\":\"db\",\"table\":\"ev\xe9nts\",\"snapshot_id\":1}", events.ReasonMalformed, "not valid UTF-8"},
		{"invalid JSON commit", commits, `{"namespace":"db","table":"events","snapshot_id":`, events.ReasonMalformed, "invalid JSON"},
		{"commit filling the max payload", commits, fill(`{"namespace":"db","table":"events","snapshot_id":1}`), events.ReasonMalformed, "payload is 1048576 bytes"},
		{"1 MB eventTime", notes, rec("lake", "k", mb), events.ReasonMalformed, "payload is"},
		{"200 KB eventTime", notes, rec("lake", "k", kb), events.ReasonMalformed, "eventTime is 200000 bytes long"},
		{"200 KB key", notes, rec("lake", kb, ""), events.ReasonMalformed, "s3.object.key is 200000 bytes long"},
		{"invalid UTF-8 notification", notes, strings.Replace(rec("lake", "KEY", ""), "KEY", "caf\xe9", 1), events.ReasonMalformed, "not valid UTF-8"},
		{"invalid JSON notification", notes, `{"Records":[{"eventName":`, events.ReasonMalformed, "invalid JSON"},
		{"notification filling the max payload", notes, fill(rec("lake", "k", "")), events.ReasonMalformed, "payload is 1048576 bytes"},
	}
	for _, p := range poison {
		h.publishRaw(p.subject, p.payload)
	}
	for range 6 {
		h.commit("a", 10)
	}
	h.eventually("every poison message dead-lettered", func() bool { return len(h.deadLetters()) >= len(poison) })
	h.eventually("the good events compacted", func() bool { return w.Pool.Stats().Succeeded >= 1 })
	h.eventually("the work queues drained", func() bool {
		for _, name := range []string{triggers.DefaultCommitStream, triggers.DefaultNotificationStream} {
			stream, err := h.js.Stream(h.ctx, name)
			if err != nil {
				return false
			}
			if info, err := stream.Info(h.ctx); err != nil || info.State.Msgs != 0 {
				return false
			}
		}
		return true
	})

	dls := h.deadLetters()
	if len(dls) != len(poison) {
		t.Fatalf("%d dead letters for %d poison messages", len(dls), len(poison))
	}
	bySum := map[string]events.DeadLetter{}
	for _, dl := range dls {
		bySum[dl.PayloadSHA256] = dl
	}
	for _, p := range poison {
		sum := sha256.Sum256([]byte(p.payload))
		dl, ok := bySum[hex.EncodeToString(sum[:])]
		switch {
		case !ok:
			t.Errorf("%s: no dead letter carries its payload", p.name)
			continue
		case dl.Reason != p.reason || dl.Subject != p.subject || !strings.Contains(dl.Error, p.errText):
			t.Errorf("%s: dead letter reason %q subject %q error %.200q; want %q, %q, %q", p.name, dl.Reason, dl.Subject, dl.Error, p.reason, p.subject, p.errText)
		case dl.PayloadBytes != len(p.payload):
			t.Errorf("%s: payload bytes %d, want %d", p.name, dl.PayloadBytes, len(p.payload))
		case dl.PayloadTruncated:
			// Only a message filling the max payload has no room left
			// for the headers; the body is then its prefix.
			if len(p.payload) != maxPayload || !bytes.HasPrefix([]byte(p.payload), dl.Payload) {
				t.Errorf("%s: truncated to %d bytes", p.name, len(dl.Payload))
			}
		case !bytes.Equal(dl.Payload, []byte(p.payload)):
			t.Errorf("%s: the dead letter's body is not the original payload", p.name)
		}
		if len(dl.Error) > 4*2048 {
			t.Errorf("%s: the dead letter's error is %d bytes", p.name, len(dl.Error))
		}
	}
	for _, c := range []struct{ stream, durable string }{
		{triggers.DefaultCommitStream, triggers.DefaultDurable},
		{triggers.DefaultNotificationStream, triggers.DefaultNotificationDurable},
	} {
		cons, err := h.js.Consumer(h.ctx, c.stream, c.durable)
		if err != nil {
			t.Fatal(err)
		}
		info, err := cons.Info(h.ctx)
		if err != nil {
			t.Fatal(err)
		}
		if info.NumRedelivered != 0 || info.NumAckPending != 0 {
			t.Errorf("%s: %d redelivered, %d awaiting acknowledgement; want every message acknowledged once",
				c.durable, info.NumRedelivered, info.NumAckPending)
		}
	}
	ev := w.Metrics.Events
	if got := testutil.ToFloat64(ev.WithLabelValues("commit", metrics.OutcomeDeadLetterErr)) +
		testutil.ToFloat64(ev.WithLabelValues("notification", metrics.OutcomeDeadLetterErr)); got != 0 {
		t.Errorf("%v dead letters failed to publish", got)
	}
	if got := testutil.ToFloat64(ev.WithLabelValues("notification", metrics.OutcomeMalformed)); got != 6 {
		t.Errorf("malformed notifications counted %v, want 6", got)
	}
	// About 6 MB of poison went in; the log quotes excerpts only.
	if n := len(h.logs.String()); n > 64<<10 {
		t.Errorf("%d bytes of logs for %d poison messages", n, len(poison))
	}
	if got := h.contents().Total; got != h.writer.Written() {
		t.Errorf("table holds %v, writer wrote %v", got, h.writer.Written())
	}
}
