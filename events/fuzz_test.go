package events

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/url"
	"strings"
	"testing"
	"time"
)

// FuzzDecodeCommit checks DecodeCommit on arbitrary bytes: it is
// deterministic; it fails only with ErrMalformed and a bounded message; a
// decoded event has every required field, within bounds; and re-encoding it
// decodes to the same event. The seed corpus is
// testdata/fuzz/FuzzDecodeCommit; every crasher found is kept there.
func FuzzDecodeCommit(f *testing.F) {
	f.Fuzz(func(t *testing.T, data []byte) {
		ev, err := DecodeCommit(data)
		ev2, err2 := DecodeCommit(data)
		if errText(err) != errText(err2) || !sameCommit(t, ev, ev2) {
			t.Fatalf("not deterministic: %v / %v", err, err2)
		}
		if err != nil {
			checkDecodeError(t, err, len(data))
			return
		}
		switch {
		case strings.TrimSpace(ev.Namespace) == "", strings.TrimSpace(ev.Table) == "", ev.SnapshotID <= 0:
			t.Fatalf("decoded an event without its required fields: %+v", ev)
		case strings.Contains(ev.Table, "."):
			t.Fatalf("table %q contains a dot", ev.Table)
		case len(ev.Namespace) > MaxNameBytes, len(ev.Table) > MaxNameBytes, len(ev.Catalog) > MaxNameBytes, len(ev.Operation) > MaxNameBytes:
			t.Fatalf("a name over %d bytes: %d/%d/%d/%d", MaxNameBytes, len(ev.Namespace), len(ev.Table), len(ev.Catalog), len(ev.Operation))
		case len(ev.MetadataLocation) > MaxLocationBytes:
			t.Fatalf("a metadata_location of %d bytes", len(ev.MetadataLocation))
		}
		for _, level := range ev.NamespaceLevels() {
			if level == "" {
				t.Fatalf("namespace %q has an empty level", ev.Namespace)
			}
		}
		enc, err := ev.Encode()
		if err != nil {
			t.Fatalf("encode a decoded event: %v", err)
		}
		if len(enc) > MaxPayloadBytes {
			return // json.Marshal escapes <, > and & six-fold; only hostile content grows past the bound
		}
		again, err := DecodeCommit(enc)
		if err != nil || !sameCommit(t, ev, again) {
			t.Fatalf("re-encoded event %s decodes to %+v, %v; want %+v", enc, again, err, ev)
		}
	})
}

// FuzzDecodeNotification checks DecodeNotification on arbitrary bytes in
// both key encodings: deterministic; ErrMalformed with a bounded message on
// failure; on success a test event or 1..MaxRecords records, each with a
// bucket, a key within S3's limit and an "s3:" event name; and the records,
// re-encoded as a plain S3 message, decode to the same events.
func FuzzDecodeNotification(f *testing.F) {
	f.Fuzz(func(t *testing.T, data []byte, raw bool) {
		enc := KeyEncodingURL
		if raw {
			enc = KeyEncodingRaw
		}
		n, err := DecodeNotification(data, enc)
		n2, err2 := DecodeNotification(data, enc)
		if errText(err) != errText(err2) || !sameEvents(n.Events, n2.Events) || n.Test != n2.Test {
			t.Fatalf("not deterministic: %v / %v", err, err2)
		}
		if err != nil {
			checkDecodeError(t, err, len(data))
			return
		}
		if n.Test {
			if len(n.Events) != 0 {
				t.Fatalf("a test event with %d records", len(n.Events))
			}
			return
		}
		if len(n.Events) == 0 || len(n.Events) > MaxRecords {
			t.Fatalf("%d records", len(n.Events))
		}
		for i, ev := range n.Events {
			switch {
			case ev.Bucket == "", ev.Key == "", !strings.HasPrefix(ev.EventName, "s3:"), ev.Size < 0:
				t.Fatalf("record %d lacks a required field: %+v", i, ev)
			case len(ev.Key) > MaxKeyBytes, len(ev.Bucket) > MaxBucketBytes:
				t.Fatalf("record %d: key of %d bytes, bucket of %d", i, len(ev.Key), len(ev.Bucket))
			}
		}
		again, err := DecodeNotification(encodeRecords(t, n.Events, enc), enc)
		if err != nil || !sameEvents(n.Events, again.Events) {
			t.Fatalf("re-encoded records decode to %+v, %v; want %+v", again.Events, err, n.Events)
		}
	})
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

func checkDecodeError(t *testing.T, err error, size int) {
	t.Helper()
	if !errors.Is(err, ErrMalformed) {
		t.Fatalf("error does not wrap ErrMalformed: %v", err)
	}
	if n := len(err.Error()); n > maxDecodeError {
		t.Fatalf("error is %d bytes for %d bytes of input: %.300s", n, size, err)
	}
}

// sameCommit compares two events by their wire form (committed_at is a
// pointer, and equal instants may differ in location).
func sameCommit(t *testing.T, a, b CommitEvent) bool {
	t.Helper()
	ea, err := a.Encode()
	if err != nil {
		t.Fatal(err)
	}
	eb, err := b.Encode()
	if err != nil {
		t.Fatal(err)
	}
	return bytes.Equal(ea, eb)
}

func sameEvents(a, b []ObjectEvent) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		x, y := a[i], b[i]
		if !x.Time.Equal(y.Time) {
			return false
		}
		x.Time, y.Time = time.Time{}, time.Time{}
		if x != y {
			return false
		}
	}
	return true
}

// encodeRecords renders events as a plain {"Records": [...]} message in
// encoding enc, the way an S3-style producer would.
func encodeRecords(t *testing.T, evs []ObjectEvent, enc KeyEncoding) []byte {
	t.Helper()
	type object struct {
		Key       string `json:"key"`
		Size      int64  `json:"size"`
		ETag      string `json:"eTag,omitempty"`
		VersionID string `json:"versionId,omitempty"`
		Sequencer string `json:"sequencer,omitempty"`
	}
	type record struct {
		EventTime string `json:"eventTime,omitempty"`
		EventName string `json:"eventName"`
		S3        struct {
			Bucket struct {
				Name string `json:"name"`
			} `json:"bucket"`
			Object object `json:"object"`
		} `json:"s3"`
	}
	recs := make([]record, len(evs))
	for i, ev := range evs {
		r := &recs[i]
		if !ev.Time.IsZero() {
			r.EventTime = ev.Time.Format(time.RFC3339Nano)
		}
		r.EventName = ev.EventName
		r.S3.Bucket.Name = ev.Bucket
		key := ev.Key
		if enc != KeyEncodingRaw {
			key = url.QueryEscape(key)
		}
		r.S3.Object = object{Key: key, Size: ev.Size, ETag: ev.ETag, VersionID: ev.VersionID, Sequencer: ev.Sequencer}
	}
	data, err := json.Marshal(map[string]any{"Records": recs})
	if err != nil {
		t.Fatal(err)
	}
	return data
}
