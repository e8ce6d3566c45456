package scope

import (
	"fmt"
	"net/url"
	"strings"

	"github.com/apache/iceberg-go/table"
)

// S3TablesRule: the table lies in an Amazon S3 table bucket, whose store
// deletes and lists nothing for reactor: AWS maintains it.
const S3TablesRule Rule = "s3_tables"

// s3TablesBucketSuffix ends the name of the bucket AWS generates as every
// S3 Tables table's warehouse location
// (s3://63a8e430-...--table-s3): no general purpose bucket may end so.
const s3TablesBucketSuffix = "--table-s3"

// S3Tables says why the table of meta is an S3 Tables table ("" when it
// is not): its location, or a data or metadata path, lies in a table
// bucket. Table buckets support neither ListObjects nor DeleteObject;
// AWS removes unreferenced files itself (unreferenced file removal), so
// expiry's deletions, orphan cleanup and the clean-up of a job's own
// outputs are off there. The location decides, not the catalog: the S3
// Tables and Glue REST endpoints hand out only such tables, and a table
// of another catalog that lives in a table bucket is one too.
func S3Tables(meta table.Metadata) string {
	locs := []string{meta.Location()}
	props := meta.Properties()
	for _, key := range append(append([]string{}, dataPathKeys...), metadataPathKey) {
		locs = append(locs, props[key])
	}
	for _, loc := range locs {
		if bucket := S3TableBucket(loc); bucket != "" {
			return fmt.Sprintf("%s lies in the S3 table bucket %s: Amazon S3 Tables maintains the table (unreferenced file removal) and its store supports neither listing nor deleting objects",
				loc, bucket)
		}
	}
	return ""
}

// S3TableBucket is the bucket of loc when loc is an S3 location in an S3
// Tables table bucket, else "".
func S3TableBucket(loc string) string {
	if loc == "" {
		return ""
	}
	u, err := url.Parse(strings.TrimSpace(loc))
	if err != nil {
		return ""
	}
	switch strings.ToLower(u.Scheme) {
	case "s3", "s3a", "s3n":
	default:
		return ""
	}
	if strings.HasSuffix(strings.ToLower(u.Host), s3TablesBucketSuffix) {
		return u.Host
	}
	return ""
}
