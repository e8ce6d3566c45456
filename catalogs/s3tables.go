package catalogs

import (
	"net/url"
	"strings"
)

// s3TablesCatalog says how the catalog properties props reach Amazon S3
// Tables ("" when they do not): the S3 Tables REST endpoint
// (https://s3tables.<region>.amazonaws.com/iceberg, warehouse the table
// bucket's ARN, SigV4 signing name s3tables) or the Glue REST endpoint's
// federated s3tablescatalog (warehouse <account>:s3tablescatalog/<bucket>).
// It only explains: each table is told by its location's bucket
// (scope.S3Tables), whichever catalog lists it.
func s3TablesCatalog(props map[string]string) string {
	warehouse := strings.TrimSpace(props["warehouse"])
	if strings.HasPrefix(warehouse, "arn:") && strings.Contains(warehouse, ":s3tables:") {
		return "its warehouse is a table bucket's ARN"
	}
	if strings.Contains(warehouse, ":s3tablescatalog/") {
		return "its warehouse is Glue's s3tablescatalog"
	}
	if strings.EqualFold(props["rest.signing-name"], "s3tables") {
		return "it signs its requests for s3tables"
	}
	if u, err := url.Parse(props["uri"]); err == nil && strings.HasPrefix(strings.ToLower(u.Hostname()), "s3tables.") {
		return "its URI is the S3 Tables REST endpoint"
	}
	return ""
}
