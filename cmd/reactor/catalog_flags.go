package main

import (
	"flag"

	"github.com/apache/iceberg-go"
)

// catalogFlags are the flags every command that opens a catalog shares, so
// run and the one-shot commands name and read them the same way.
type catalogFlags struct {
	dataDir, name, uri, typ, warehouse *string
	props                              propsFlag
}

func addCatalogFlags(fs *flag.FlagSet, dataDirUsage string) *catalogFlags {
	c := &catalogFlags{}
	c.dataDir = fs.String("data-dir", "./reactor-data", dataDirUsage)
	c.name = fs.String("catalog-name", "reactor", "catalog `name` (iceberg-go catalog registry)")
	c.uri = fs.String("catalog-uri", "", "catalog `URI` (REST endpoint or SQL DSN); empty with no other catalog setting uses the embedded catalog")
	c.typ = fs.String("catalog-type", "", "catalog `type`: rest or sql (default rest for an http(s) URI)")
	c.warehouse = fs.String("warehouse", "", "warehouse `location` passed to the catalog")
	fs.Var(&c.props, "catalog-prop", "extra catalog property `key=value`, repeatable (sql.driver, sql.dialect, s3.endpoint, credentials, ...)")
	return c
}

// properties assembles the catalog properties (nil: the embedded catalog).
func (c *catalogFlags) properties() (iceberg.Properties, error) {
	return catalogProperties(*c.typ, *c.uri, *c.warehouse, &c.props)
}
