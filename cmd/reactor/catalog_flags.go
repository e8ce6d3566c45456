package main

import (
	"flag"
	"strconv"

	"github.com/apache/iceberg-go"

	"github.com/icereactor/reactor/objectio"
)

// catalogFlags are the flags every command that opens a catalog shares, so
// run and the one-shot commands name and read them the same way.
type catalogFlags struct {
	dataDir, name, uri, typ, warehouse *string
	props                              propsFlag
	readConcurrency                    *int
}

func addCatalogFlags(fs *flag.FlagSet, dataDirUsage string) *catalogFlags {
	c := &catalogFlags{}
	c.dataDir = fs.String("data-dir", "./reactor-data", dataDirUsage)
	c.name = fs.String("catalog-name", "reactor", "catalog `name` (iceberg-go catalog registry)")
	c.uri = fs.String("catalog-uri", "", "catalog `URI` (REST endpoint or SQL DSN); empty with no other catalog setting uses the embedded catalog")
	c.typ = fs.String("catalog-type", "", "catalog `type`: rest or sql (default rest for an http(s) URI)")
	c.warehouse = fs.String("warehouse", "", "warehouse `location` passed to the catalog")
	fs.Var(&c.props, "catalog-prop", "extra catalog property `key=value`, repeatable (sql.driver, sql.dialect, s3.endpoint, credentials, ...)")
	c.readConcurrency = fs.Int("read-concurrency", objectio.DefaultReadConcurrency,
		"data files and manifests a job reads at once from an s3:// warehouse (`n`, 1 to "+strconv.Itoa(objectio.MaxReadConcurrency)+"); a local warehouse reads GOMAXPROCS files at once")
	return c
}

// properties assembles the catalog properties (nil: the embedded catalog).
func (c *catalogFlags) properties() (iceberg.Properties, error) {
	props, err := catalogProperties(*c.typ, *c.uri, *c.warehouse, &c.props)
	if err != nil || props == nil {
		return props, err
	}
	// The S3 FileIO reads it from the catalog properties, as it reads
	// s3.*; a --catalog-prop of the same key is kept.
	if n := *c.readConcurrency; n < 1 || n > objectio.MaxReadConcurrency {
		return nil, usageErrorf("--read-concurrency must be 1 to %d, got %d", objectio.MaxReadConcurrency, n)
	}
	if _, set := props[objectio.ReadConcurrencyProperty]; !set {
		props[objectio.ReadConcurrencyProperty] = strconv.Itoa(*c.readConcurrency)
	}
	return props, nil
}
