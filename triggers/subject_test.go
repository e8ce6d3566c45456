package triggers

import "testing"

func TestSubjectMatches(t *testing.T) {
	tests := []struct {
		pattern, subject string
		want             bool
	}{
		{"minio.events", "minio.events", true},
		{"minio.events", "minio.events.x", false},
		{"minio.*", "minio.events", true},
		{"minio.*", "minio", false},
		{"s3.>", "s3.bucket.a", true},
		{"s3.>", "s3", false},
		{"a.*.c", "a.b.c", true},
		{"a.*.c", "a.b.d", false},
	}
	for _, tt := range tests {
		if got := subjectMatches(tt.pattern, tt.subject); got != tt.want {
			t.Errorf("subjectMatches(%q, %q) = %v, want %v", tt.pattern, tt.subject, got, tt.want)
		}
	}
}
