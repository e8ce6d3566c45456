package events

import (
	"errors"
	"strings"
	"testing"
	"time"
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

func TestNewDeadLetterTruncatesHugePayloads(t *testing.T) {
	small := NewDeadLetter("s", ReasonMalformed, ErrMalformed, []byte(`{"x":1}`), time.Unix(0, 0))
	if small.Payload != `{"x":1}` || small.PayloadTruncated || small.PayloadBytes != 7 {
		t.Errorf("small = %+v", small)
	}
	huge := make([]byte, MaxDeadLetterPayload*3)
	for i := range huge {
		huge[i] = '"' // worst case: every byte doubles when JSON-escaped
	}
	dl := NewDeadLetter("s", ReasonMalformed, ErrMalformed, huge, time.Unix(0, 0))
	if !dl.PayloadTruncated || dl.PayloadBytes != len(huge) || len(dl.Payload) != MaxDeadLetterPayload {
		t.Errorf("huge: truncated=%v bytes=%d kept=%d", dl.PayloadTruncated, dl.PayloadBytes, len(dl.Payload))
	}
	data, err := dl.Encode()
	if err != nil || len(data) > 1<<20 {
		t.Errorf("encoded dead letter is %d bytes (err %v); it must fit NATS' default 1 MiB payload", len(data), err)
	}
}
