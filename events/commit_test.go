package events

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/icereactor/reactor/excerpt"
)

func TestDecodeCommit(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		want    CommitEvent
		wantErr string
	}{
		{
			name: "minimal",
			in:   `{"namespace":"db","table":"events","snapshot_id":42}`,
			want: CommitEvent{Namespace: "db", Table: "events", SnapshotID: 42},
		},
		{
			name: "full with unknown fields",
			in: `{"catalog":"prod","namespace":"a.b","table":"t","snapshot_id":7,"operation":"append",
			      "summary":{"added-data-files":"1"},"partitions":["p=1"],"writer":"flink","extra":{"x":1}}`,
			want: CommitEvent{Catalog: "prod", Namespace: "a.b", Table: "t", SnapshotID: 7, Operation: "append",
				Summary: map[string]string{"added-data-files": "1"}, Partitions: []string{"p=1"}},
		},
		{
			name: "metadata location",
			in:   `{"namespace":"db","table":"t","snapshot_id":7,"metadata_location":"s3://lake/db/t/metadata/00042-a.metadata.json"}`,
			want: CommitEvent{Namespace: "db", Table: "t", SnapshotID: 7, MetadataLocation: "s3://lake/db/t/metadata/00042-a.metadata.json"},
		},
		{name: "metadata location too long", in: `{"namespace":"db","table":"t","snapshot_id":7,"metadata_location":"s3://` +
			strings.Repeat("k", MaxLocationBytes) + `"}`, wantErr: "field metadata_location is 1541 bytes long"},
		{name: "not json", in: `{"namespace":`, wantErr: "invalid JSON"},
		{name: "wrong type", in: `{"namespace":"db","table":"t","snapshot_id":"x"}`, wantErr: "invalid JSON"},
		{name: "missing table", in: `{"namespace":"db","snapshot_id":1}`, wantErr: "field table is required"},
		{name: "missing namespace", in: `{"table":"t","snapshot_id":1}`, wantErr: "field namespace is required"},
		{name: "empty namespace level", in: `{"namespace":"a..b","table":"t","snapshot_id":1}`, wantErr: "empty level"},
		{name: "dotted table", in: `{"namespace":"a","table":"b.t","snapshot_id":1}`, wantErr: "must not contain"},
		{name: "missing snapshot", in: `{"namespace":"db","table":"t"}`, wantErr: "snapshot_id must be a positive integer, got 0"},
		{name: "negative snapshot", in: `{"namespace":"db","table":"t","snapshot_id":-3}`, wantErr: "got -3"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := DecodeCommit([]byte(tt.in))
			if tt.wantErr != "" {
				if err == nil {
					t.Fatalf("DecodeCommit(%s) = %+v, want error containing %q", tt.in, got, tt.wantErr)
				}
				if !errors.Is(err, ErrMalformed) {
					t.Errorf("error %v does not wrap ErrMalformed", err)
				}
				if !strings.Contains(err.Error(), tt.wantErr) {
					t.Errorf("error %q does not contain %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("DecodeCommit: %v", err)
			}
			if got.Namespace != tt.want.Namespace || got.Table != tt.want.Table || got.SnapshotID != tt.want.SnapshotID ||
				got.Catalog != tt.want.Catalog || got.Operation != tt.want.Operation ||
				len(got.Summary) != len(tt.want.Summary) || len(got.Partitions) != len(tt.want.Partitions) {
				t.Errorf("DecodeCommit = %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestCommitEventRoundTrip(t *testing.T) {
	ev := CommitEvent{Namespace: "a.b", Table: "t", SnapshotID: 9, Partitions: []string{"x=1"}}
	data, err := ev.Encode()
	if err != nil {
		t.Fatal(err)
	}
	got, err := DecodeCommit(data)
	if err != nil {
		t.Fatal(err)
	}
	if got.QualifiedName() != "a.b.t" || got.SnapshotID != 9 || got.Partitions[0] != "x=1" {
		t.Errorf("round trip = %+v", got)
	}
	if lv := got.NamespaceLevels(); len(lv) != 2 || lv[1] != "b" {
		t.Errorf("NamespaceLevels = %v", lv)
	}
}

func BenchmarkDecodeCommit(b *testing.B) {
	payload := []byte(`{"catalog":"default","namespace":"analytics","table":"events","snapshot_id":3051729675574597004,` +
		`"operation":"append","summary":{"added-data-files":"1","added-records":"100"},"partitions":["category=books"]}`)
	b.ReportAllocs()
	b.SetBytes(int64(len(payload)))
	for b.Loop() {
		if _, err := DecodeCommit(payload); err != nil {
			b.Fatal(err)
		}
	}
}

func TestDeadLetterCarriesThePayloadAsIs(t *testing.T) {
	payload := []byte("{\"table\":\"caf\xe9\"}") // invalid UTF-8, kept byte for byte
	dl := NewDeadLetter("iceberg.commits.db.t", ReasonMalformed, errors.New("bad\nline é"), payload, time.Unix(0, 5).In(time.FixedZone("x", 3600)))
	dl.Stream, dl.Sequence = "REACTOR_COMMITS", 42
	if err := dl.FitTo(1 << 20); err != nil {
		t.Fatal(err)
	}
	h := dl.Headers()
	if got := h[HeaderError][0]; got != `bad line \u00e9` {
		t.Errorf("error header %q: want one ASCII line", got)
	}
	if got := h[HeaderMsgID][0]; got != "reactor-dead-letter.REACTOR_COMMITS.42" {
		t.Errorf("message id %q", got)
	}
	// With the original's store time, which tells apart the messages of a
	// stream deleted and created again (both number from 1).
	stored := dl
	stored.StoredAt = time.Unix(0, 1764590400123456789)
	if got := stored.Headers()[HeaderMsgID][0]; got != "reactor-dead-letter.REACTOR_COMMITS.42.1764590400123456789" {
		t.Errorf("message id %q", got)
	}
	back, err := DecodeDeadLetter(h, dl.Payload)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(back.Payload, payload) || back.PayloadBytes != len(payload) || back.PayloadTruncated ||
		back.Subject != "iceberg.commits.db.t" || back.Reason != ReasonMalformed || !back.ReceivedAt.Equal(time.Unix(0, 5)) ||
		back.Sequence != 42 || back.Stream != "REACTOR_COMMITS" {
		t.Errorf("round trip: %+v", back)
	}
	if sum := sha256.Sum256(payload); back.PayloadSHA256 != hex.EncodeToString(sum[:]) {
		t.Errorf("sha256 %s", back.PayloadSHA256)
	}
}

// A payload that with the headers would not fit the server's max payload
// is cut to fit, and says so; the size and checksum are the original's.
func TestDeadLetterFitsTheMaxPayload(t *testing.T) {
	payload := bytes.Repeat([]byte("x"), 1<<20)
	dl := NewDeadLetter("s", ReasonMalformed, errors.New(strings.Repeat("e", 1<<20)), payload, time.Unix(0, 0))
	if err := dl.FitTo(1 << 20); err != nil {
		t.Fatal(err)
	}
	if !dl.PayloadTruncated || dl.PayloadBytes != 1<<20 || dl.HeaderSize()+len(dl.Payload) != 1<<20 || !bytes.HasPrefix(payload, dl.Payload) {
		t.Errorf("truncated=%v bytes=%d kept=%d headers=%d", dl.PayloadTruncated, dl.PayloadBytes, len(dl.Payload), dl.HeaderSize())
	}
	if n := len(dl.Headers()[HeaderError][0]); n > 4*excerpt.MaxError {
		t.Errorf("error header is %d bytes", n)
	}
	if err := dl.FitTo(100); err == nil {
		t.Error("headers larger than the max payload must be an error")
	}
}
