package events

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/icereactor/reactor/excerpt"
)

// Storage notifications: what an object store publishes when an object is
// written or removed. reactor decodes two shapes (unknown fields ignored):
//
// MinIO's NATS target wraps every record in an envelope:
//
//	{"EventName": "s3:ObjectCreated:Put", "Key": "bucket/key", "Records": [<record>]}
//
// AWS S3, versitygw and other S3-style producers publish the records alone:
//
//	{"Records": [<record>, ...]}
//
// A record (only the fields reactor reads):
//
//	{
//	  "eventTime": "2026-11-29T12:00:01.250Z",   // RFC 3339, fractional seconds optional
//	  "eventName": "s3:ObjectCreated:Put",       // AWS omits the "s3:" prefix
//	  "s3": {
//	    "bucket": {"name": "lake"},
//	    "object": {"key": "warehouse%2Fdb.db%2F...", "size": 1048576,
//	               "eTag": "d41d8cd9...", "versionId": "...", "sequencer": "187C5E2A3F9B1D05"}
//	  }
//	}
//
// The envelope's EventName and Key are never read: MinIO always sends Records
// alongside them, and the record is the authoritative copy. (MinIO builds Key
// from the already unescaped object name, so it is not even in the same
// encoding as the record's key.)
//
// Test messages, which a producer sends when notifications are configured or
// at start-up, carry no records:
//
//	{"Service": "Amazon S3", "Event": "s3:TestEvent", "Time": "...", "Bucket": "..."}  // AWS
//	{"Bucket": "Test-Bucket", "Event": "s3:TestEvent", "Service": "S3", "Time": "..."} // versitygw

// KeyEncoding says how object keys arrive in notifications. It is a setting
// per notification source and never guessed from the key: "a+b" is a valid
// encoding of "a b" and a valid raw key "a+b", and iceberg-go itself writes a
// space in a partition value as a literal '+', so guessing would silently
// send events for one file to another.
type KeyEncoding string

const (
	// KeyEncodingURL: keys are form-encoded (url.QueryUnescape: '+' is a
	// space, %XX a byte). MinIO and AWS S3 send keys this way. The zero
	// value ("") means the same.
	KeyEncodingURL KeyEncoding = "url"
	// KeyEncodingRaw: keys are sent as stored; '+' and '%' are themselves.
	// versitygw sends keys this way.
	KeyEncodingRaw KeyEncoding = "raw"
)

// ParseKeyEncoding reads a configured key encoding. Empty means "url", the
// encoding of MinIO and AWS.
func ParseKeyEncoding(s string) (KeyEncoding, error) {
	switch KeyEncoding(strings.ToLower(strings.TrimSpace(s))) {
	case "", KeyEncodingURL:
		return KeyEncodingURL, nil
	case KeyEncodingRaw:
		return KeyEncodingRaw, nil
	}
	return "", fmt.Errorf("unknown key encoding %q: want %q (MinIO, AWS S3) or %q (versitygw)", s, KeyEncodingURL, KeyEncodingRaw)
}

// ObjectAction is what happened to an object, as far as reactor cares.
type ObjectAction int

const (
	// ObjectOther: anything that neither writes nor removes object data
	// (reads, tagging, retention, replication, restore, ...). Kept so callers
	// can count it, never an error.
	ObjectOther ObjectAction = iota
	// ObjectCreated: new object data under the key (Put, Post, Copy,
	// CompleteMultipartUpload).
	ObjectCreated
	// ObjectRemoved: the key no longer names live data (Delete,
	// DeleteMarkerCreated, versitygw's DeleteObjects, lifecycle expiry).
	ObjectRemoved
)

// String returns "created", "removed" or "other", for logs and metric labels.
func (a ObjectAction) String() string {
	switch a {
	case ObjectCreated:
		return "created"
	case ObjectRemoved:
		return "removed"
	}
	return "other"
}

// ObjectEvent is one decoded notification record.
type ObjectEvent struct {
	Action ObjectAction
	// EventName always carries the "s3:" prefix ("s3:ObjectCreated:Put"),
	// the form MinIO, versitygw and S3 notification configurations use; AWS
	// records ("ObjectCreated:Put") are prefixed on decode.
	EventName string
	Bucket    string
	// Key is the object key as stored, decoded per the source's KeyEncoding.
	Key string
	// Size in bytes. 0 may mean unknown: versitygw reports 0 on
	// CompleteMultipartUpload and Copy, and removals carry no size.
	Size int64
	// ETag without surrounding quotes (versitygw quotes it, AWS and MinIO do
	// not).
	ETag string
	// Sequencer orders events for the same key only; sequencers may differ
	// in length, so compare them left-padded with zeros.
	Sequencer string
	VersionID string
	// Time is the record's eventTime; zero if absent.
	Time time.Time
}

// Location is "s3://bucket/key", the form Iceberg table locations use.
func (e ObjectEvent) Location() string { return "s3://" + e.Bucket + "/" + e.Key }

// Notification is one decoded storage-notification message.
type Notification struct {
	Events []ObjectEvent
	// Test is set for an s3:TestEvent message: nothing to do, not an error.
	// Events is then empty.
	Test bool
}

// MaxRecords bounds how many records one message may carry; a message with
// more is malformed. MinIO and versitygw send one record per message and AWS
// a handful, so only a broken or hostile producer comes near it. The bound
// is checked before any per-record work, so such a message costs one decode
// of its own bytes (at most MaxPayloadBytes) and pushes nothing downstream.
const MaxRecords = 1000

// testEventName is the Event of AWS and versitygw test messages.
const testEventName = "s3:TestEvent"

// Bounds on a record's fields: S3's own limits (a key is at most 1024
// bytes; a bucket name at most 63, 255 in old us-east-1 buckets), and the
// same 1024 bytes for the identifiers reactor keeps or logs. A record over
// one is malformed: its key could name no object.
const (
	MaxKeyBytes    = 1024
	MaxBucketBytes = 255
	maxFieldBytes  = 1024
)

// wireNotification is the subset of both message shapes that reactor reads.
// Typed structs rather than map[string]any: this runs for every object write
// in the lake, and encoding/json skips unknown fields without allocating.
type wireNotification struct {
	Records []wireRecord `json:"Records"`
	Event   string       `json:"Event"`
}

type wireRecord struct {
	EventTime string `json:"eventTime"`
	EventName string `json:"eventName"`
	S3        struct {
		Bucket struct {
			Name string `json:"name"`
		} `json:"bucket"`
		Object struct {
			Key       string `json:"key"`
			Size      int64  `json:"size"`
			ETag      string `json:"eTag"`
			VersionID string `json:"versionId"`
			Sequencer string `json:"sequencer"`
		} `json:"object"`
	} `json:"s3"`
}

// DecodeNotification parses one storage-notification message, MinIO envelope
// or plain {"Records": [...]}, decoding object keys per enc. Every error about
// the message wraps ErrMalformed and names the offending record by its index
// in Records; redelivery can never fix such a message.
//
// An enc other than "", "url" or "raw" is a caller bug, not a bad message:
// that error does not wrap ErrMalformed, so good messages are not
// dead-lettered for it. Validate configuration with ParseKeyEncoding.
func DecodeNotification(data []byte, enc KeyEncoding) (Notification, error) {
	switch enc {
	case "", KeyEncodingURL, KeyEncodingRaw:
	default:
		return Notification{}, fmt.Errorf("events: DecodeNotification called with unknown key encoding %q", enc)
	}

	if err := checkPayload(data); err != nil {
		return Notification{}, err
	}
	var msg wireNotification
	if err := json.Unmarshal(data, &msg); err != nil {
		return Notification{}, fmt.Errorf("%w: invalid JSON: %w", ErrMalformed, excerpt.Error(err))
	}

	switch {
	case msg.Records == nil && msg.Event == testEventName:
		return Notification{Test: true}, nil
	case msg.Records == nil && msg.Event != "":
		return Notification{}, fmt.Errorf("%w: no Records and Event %s is not %s", ErrMalformed, excerpt.Quote(msg.Event), testEventName)
	case msg.Records == nil:
		return Notification{}, fmt.Errorf("%w: no Records and not a test event", ErrMalformed)
	case len(msg.Records) == 0:
		return Notification{}, fmt.Errorf("%w: Records is empty", ErrMalformed)
	case len(msg.Records) > MaxRecords:
		return Notification{}, fmt.Errorf("%w: Records has %d entries, more than the %d one message may carry", ErrMalformed, len(msg.Records), MaxRecords)
	}

	events := make([]ObjectEvent, len(msg.Records))
	for i := range msg.Records {
		if err := msg.Records[i].toEvent(enc, &events[i]); err != nil {
			return Notification{}, fmt.Errorf("%w: record %d: %w", ErrMalformed, i, err)
		}
	}
	return Notification{Events: events}, nil
}

// toEvent validates r and fills ev. Its errors are wrapped with ErrMalformed
// and the record index by the caller.
func (r *wireRecord) toEvent(enc KeyEncoding, ev *ObjectEvent) error {
	obj := &r.S3.Object
	switch {
	case r.S3.Bucket.Name == "":
		return errors.New("s3.bucket.name is missing")
	case obj.Key == "":
		return errors.New("s3.object.key is missing or empty")
	case r.EventName == "":
		// Without it nothing says whether the object came or went.
		return errors.New("eventName is missing")
	case obj.Size < 0:
		return fmt.Errorf("s3.object.size is negative (%d)", obj.Size)
	}
	for _, f := range []struct {
		name, value string
		max         int
	}{
		{"s3.bucket.name", r.S3.Bucket.Name, MaxBucketBytes},
		{"s3.object.key", obj.Key, 3 * MaxKeyBytes}, // URL-encoded: up to three bytes per byte
		{"eventName", r.EventName, maxFieldBytes},
		{"eventTime", r.EventTime, maxFieldBytes},
		{"s3.object.eTag", obj.ETag, maxFieldBytes},
		{"s3.object.versionId", obj.VersionID, maxFieldBytes},
		{"s3.object.sequencer", obj.Sequencer, maxFieldBytes},
	} {
		if len(f.value) > f.max {
			return fmt.Errorf("%s is %d bytes long, more than %d: %s", f.name, len(f.value), f.max, excerpt.Quote(f.value))
		}
	}

	key := obj.Key
	if enc != KeyEncodingRaw {
		var err error
		// QueryUnescape, not PathUnescape: S3 form-encodes keys, so '+' is
		// a space and a real '+' arrives as %2B.
		if key, err = url.QueryUnescape(obj.Key); err != nil {
			return fmt.Errorf("s3.object.key %s is not valid URL encoding (is this source's key encoding really %q?): %w",
				excerpt.Quote(obj.Key), KeyEncodingURL, excerpt.Error(err))
		}
	}
	if len(key) > MaxKeyBytes {
		return fmt.Errorf("s3.object.key is %d bytes long, more than the %d S3 allows: %s", len(key), MaxKeyBytes, excerpt.Quote(key))
	}

	var t time.Time
	if r.EventTime != "" {
		var err error
		// time.RFC3339 also accepts fractional seconds when parsing.
		// time.Parse's error quotes the value twice, in full: not wrapped.
		if t, err = time.Parse(time.RFC3339, r.EventTime); err != nil {
			return fmt.Errorf("eventTime %s is not RFC 3339", excerpt.Quote(r.EventTime))
		}
	}

	name := r.EventName
	if !strings.HasPrefix(name, "s3:") {
		name = "s3:" + name
	}

	*ev = ObjectEvent{
		Action:    classify(name),
		EventName: name,
		Bucket:    r.S3.Bucket.Name,
		Key:       key,
		Size:      obj.Size,
		ETag:      strings.Trim(obj.ETag, `"`),
		Sequencer: obj.Sequencer,
		VersionID: obj.VersionID,
		Time:      t,
	}
	return nil
}

// classify maps a normalised ("s3:"-prefixed) event name to an action.
func classify(name string) ObjectAction {
	if op, ok := strings.CutPrefix(name, "s3:ObjectCreated:"); ok {
		switch op {
		case "PutRetention", "PutLegalHold", "PutTagging", "DeleteTagging":
			// MinIO files these metadata-only changes under ObjectCreated,
			// but they write no object data: treating them as a new file
			// would make an old data file look freshly written.
			return ObjectOther
		}
		return ObjectCreated
	}
	if strings.HasPrefix(name, "s3:ObjectRemoved:") ||
		// AWS lifecycle expiry (Delete, DeleteMarkerCreated) removes the
		// object just as a client DELETE would.
		strings.HasPrefix(name, "s3:LifecycleExpiration:") {
		return ObjectRemoved
	}
	return ObjectOther
}
