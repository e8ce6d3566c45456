package events

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

// maxDecodeError bounds a decoder's error message: a reason and at most a
// few values, each cut to excerpt.Max bytes (escaped, up to four bytes per
// byte) or, for a wrapped encoding/json error, excerpt.MaxError bytes.
const maxDecodeError = 4 << 10

var (
	mb     = strings.Repeat("x", 1<<20)
	kb200  = mb[:200<<10] // under MaxPayloadBytes: the field's own bound applies
	kb200n = "204800"
)

// Messages that carry a megabyte in one field, are not UTF-8 or are too
// large are malformed, with an error that names the problem in a few
// hundred bytes (it goes into a log line and a dead letter's headers).
func TestHostileCommitEvents(t *testing.T) {
	tests := []struct{ name, in, want string }{
		{"huge table", `{"namespace":"db","table":"` + kb200 + `","snapshot_id":1}`, "field table is " + kb200n + " bytes long, more than 1024"},
		{"huge namespace", `{"namespace":"` + kb200 + `","table":"t","snapshot_id":1}`, "field namespace is " + kb200n + " bytes long"},
		{"huge catalog", `{"catalog":"` + kb200 + `","namespace":"db","table":"t","snapshot_id":1}`, "field catalog is " + kb200n + " bytes long"},
		{"huge operation", `{"namespace":"db","table":"t","snapshot_id":1,"operation":"` + kb200 + `"}`, "field operation is " + kb200n + " bytes long"},
		{"huge timestamp", `{"namespace":"db","table":"t","snapshot_id":1,"committed_at":"` + kb200 + `"}`, "invalid JSON: parsing time"},
		{"huge summary key", `{"namespace":"db","table":"t","snapshot_id":1,"summary":{"` + kb200 + `":1}}`, "invalid JSON"},
		{"invalid UTF-8", "{\"namespace\":\"db\",\"table\":\"caf\xe9\",\"snapshot_id\":1}", "payload is not valid UTF-8 (invalid byte 0xe9 at offset 30)"},
		{"invalid JSON", `{"namespace":"db",`, "invalid JSON: unexpected end of JSON input"},
		{"oversized", `{"namespace":"db","table":"t","snapshot_id":1,"partitions":["` + mb + `"]}`, "payload is 1048640 bytes, more than the 262144"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := DecodeCommit([]byte(tt.in))
			if !errors.Is(err, ErrMalformed) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("DecodeCommit = %.300v, want malformed: %q", err, tt.want)
			}
			if n := len(err.Error()); n > maxDecodeError {
				t.Errorf("error is %d bytes", n)
			}
		})
	}
}

func TestHostileNotifications(t *testing.T) {
	rec := func(bucket, key, eventTime string) string {
		return fmt.Sprintf(`{"Records":[{"eventName":"s3:ObjectCreated:Put","eventTime":%q,"s3":{"bucket":{"name":%q},"object":{"key":%q}}}]}`,
			eventTime, bucket, key)
	}
	tests := []struct{ name, in, want string }{
		{"huge eventTime", rec("lake", "k", kb200), "record 0: eventTime is 204800 bytes long, more than 1024"},
		{"long bad eventTime", rec("lake", "k", "2026-11-29 "+strings.Repeat("9", 1000)), "record 0: eventTime \"2026-11-29 999"},
		{"huge key", rec("lake", kb200, ""), "record 0: s3.object.key is 204800 bytes long, more than 3072"},
		{"key over S3's limit", rec("lake", strings.Repeat("a", 1025), ""), "s3.object.key is 1025 bytes long, more than the 1024 S3 allows"},
		{"huge bucket", rec(kb200, "k", ""), "record 0: s3.bucket.name is 204800 bytes long, more than 255"},
		{"huge event", `{"Event":"` + kb200 + `"}`, "no Records and Event \"xxx"},
		{"invalid UTF-8", "{\"Records\":[{\"eventName\":\"s3:ObjectCreated:Put\",\"s3\":{\"bucket\":{\"name\":\"l\"},\"object\":{\"key\":\"\xff\"}}}]}", "payload is not valid UTF-8 (invalid byte 0xff"},
		{"invalid JSON", `{"Records":[`, "invalid JSON"},
		{"oversized", rec("lake", "k", "") + strings.Repeat(" ", MaxPayloadBytes), "more than the 262144 a message may have"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := DecodeNotification([]byte(tt.in), KeyEncodingURL)
			if !errors.Is(err, ErrMalformed) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("DecodeNotification = %.300v, want malformed: %q", err, tt.want)
			}
			if n := len(err.Error()); n > maxDecodeError {
				t.Errorf("error is %d bytes", n)
			}
		})
	}
}
