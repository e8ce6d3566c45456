package objectio

import (
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestCredentialsExpiry reads vended expiries as a catalog, or a forger,
// may send them: the earliest valid one counts, anything else none.
func TestCredentialsExpiry(t *testing.T) {
	at := time.Date(2026, 12, 6, 10, 0, 0, 0, time.UTC)
	ms := strconv.FormatInt(at.UnixMilli(), 10)
	for _, tc := range []struct {
		name  string
		props map[string]string
		want  time.Time
	}{
		{"none", map[string]string{"s3.access-key-id": "AK"}, time.Time{}},
		{"s3", map[string]string{s3ExpiresProperty: ms}, at},
		{"gcs", map[string]string{gcsExpiresProperty: ms}, at},
		{"generic", map[string]string{genericExpiresProperty: ms}, at},
		{"adls per account", map[string]string{adlsExpiresProperty + ".acct.dfs.core.windows.net": ms}, at},
		{"spaces around", map[string]string{s3ExpiresProperty: " " + ms + " "}, at},
		{"earliest wins", map[string]string{s3ExpiresProperty: ms, gcsExpiresProperty: strconv.FormatInt(at.Add(time.Hour).UnixMilli(), 10)}, at},
		{"empty", map[string]string{s3ExpiresProperty: ""}, time.Time{}},
		{"not a number", map[string]string{s3ExpiresProperty: "tomorrow"}, time.Time{}},
		{"RFC 3339 is not milliseconds", map[string]string{s3ExpiresProperty: at.Format(time.RFC3339)}, time.Time{}},
		{"zero", map[string]string{s3ExpiresProperty: "0"}, time.Time{}},
		{"negative", map[string]string{s3ExpiresProperty: "-1700000000000"}, time.Time{}},
		{"overflows int64", map[string]string{s3ExpiresProperty: "99999999999999999999999"}, time.Time{}},
		{"fraction", map[string]string{s3ExpiresProperty: ms + ".5"}, time.Time{}},
		{"a bad one beside a good one", map[string]string{s3ExpiresProperty: "x", gcsExpiresProperty: ms}, at},
		{"other key with the prefix", map[string]string{"s3.session-token-expires-at-msx": ms}, time.Time{}},
		{"largest int64", map[string]string{s3ExpiresProperty: "9223372036854775807"}, time.UnixMilli(9223372036854775807)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := credentialsExpiry(tc.props); !got.Equal(tc.want) {
				t.Fatalf("credentialsExpiry = %v, want %v", got, tc.want)
			}
		})
	}
}

// TestRenewalWindow: credentials are renewed within five minutes of
// their expiry, or half their lifetime when it is shorter; never for an
// expiry too far to matter or none; and, after a renewal, not again
// before renewPause even if the fresh ones claim to be expiring.
func TestRenewalWindow(t *testing.T) {
	issued := time.Date(2026, 12, 6, 10, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name      string
		expires   time.Time
		now       time.Time
		nextEarly time.Time
		due       bool
	}{
		{"no expiry", time.Time{}, issued.Add(100 * time.Hour), time.Time{}, false},
		{"an hour left", issued.Add(time.Hour), issued, time.Time{}, false},
		{"just outside five minutes", issued.Add(time.Hour), issued.Add(54*time.Minute + 59*time.Second), time.Time{}, false},
		{"five minutes left", issued.Add(time.Hour), issued.Add(55 * time.Minute), time.Time{}, true},
		{"past expiry", issued.Add(time.Hour), issued.Add(2 * time.Hour), time.Time{}, true},
		{"short lifetime: before half", issued.Add(time.Minute), issued.Add(29 * time.Second), time.Time{}, false},
		{"short lifetime: half", issued.Add(time.Minute), issued.Add(30 * time.Second), time.Time{}, true},
		{"vended already expired", issued.Add(-time.Hour), issued, time.Time{}, true},
		{"vended already expired, just renewed", issued.Add(-time.Hour), issued.Add(time.Second), issued.Add(renewPause), false},
		{"huge expiry", time.UnixMilli(9223372036854775807), issued.Add(1000 * time.Hour), time.Time{}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := NewCredentials(nil, nil, RenewOptions{Now: func() time.Time { return tc.now }})
			c.issued, c.nextEarly = issued, tc.nextEarly
			if got := c.dueEarly(tc.expires); got != tc.due {
				t.Fatalf("dueEarly = %v, want %v", got, tc.due)
			}
		})
	}
}

// FuzzCredentialsExpiry: whatever a catalog sends as an expiry, reading
// it never panics, yields either none or exactly the positive
// milliseconds given, and the renewal decision on it never panics.
func FuzzCredentialsExpiry(f *testing.F) {
	for _, seed := range []string{"", "0", "-1", "1700000000000", " 1700000000000 ", "9223372036854775807",
		"99999999999999999999", "1e12", "0x10", "+5", "١٢٣"} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, v string) {
		got := credentialsExpiry(map[string]string{s3ExpiresProperty: v, adlsExpiresProperty + ".acct": v})
		ms, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		switch {
		case err != nil || ms <= 0:
			if !got.IsZero() {
				t.Fatalf("expiry %q read as %v", v, got)
			}
		case got.UnixMilli() != ms:
			t.Fatalf("expiry %q read as %d ms", v, got.UnixMilli())
		}
		now := time.Unix(1_700_000_000, 0)
		c := NewCredentials(nil, nil, RenewOptions{Now: func() time.Time { return now }})
		_ = c.dueEarly(got)
	})
}
