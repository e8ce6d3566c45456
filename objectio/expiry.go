package objectio

import (
	"strconv"
	"strings"
	"time"
)

// The properties a REST catalog vends credentials' expiry in, as Unix
// milliseconds (iceberg-go's catalog/rest reads the same).
const (
	s3ExpiresProperty      = "s3.session-token-expires-at-ms"
	gcsExpiresProperty     = "gcs.oauth2.token-expires-at"
	adlsExpiresProperty    = "adls.sas-token-expires-at-ms"
	genericExpiresProperty = "expiration-time"
)

// credentialsExpiry is when the credentials in props expire: the earliest
// expiry they name, zero when they name none (static credentials, or ones
// the store's own chain renews).
func credentialsExpiry(props map[string]string) time.Time {
	var earliest time.Time
	for k, v := range props {
		if k != s3ExpiresProperty && k != gcsExpiresProperty && k != genericExpiresProperty &&
			k != adlsExpiresProperty && !strings.HasPrefix(k, adlsExpiresProperty+".") {
			continue
		}
		ms, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		if err != nil || ms <= 0 {
			continue
		}
		if at := time.UnixMilli(ms); earliest.IsZero() || at.Before(earliest) {
			earliest = at
		}
	}
	return earliest
}

// CredentialsExpireAt is when the credentials this FileIO was built with
// expire (zero: no expiry was given with them).
func (f *FileIO) CredentialsExpireAt() time.Time { return f.expires }

// CredentialsExpireAt is when the credentials this FileIO was built with
// expire (zero: no expiry was given with them).
func (b *BucketIO) CredentialsExpireAt() time.Time { return b.expires }
