package main

import (
	"errors"
	"flag"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/apache/iceberg-go"

	"github.com/icereactor/reactor/catalogs"
	"github.com/icereactor/reactor/objectio"
)

// catalogFlags are the flags every command that opens a catalog shares, so
// run and the one-shot commands name and read them the same way.
type catalogFlags struct {
	dataDir, name, uri, typ, warehouse *string
	tokenFile                          *string
	props                              propsFlag
	readConcurrency                    *int
	timeout                            *time.Duration
	acceptHadoopRisk                   *bool
	limits                             *sizeLimitFlags
}

func addCatalogFlags(fs *flag.FlagSet, dataDirUsage string) *catalogFlags {
	c := &catalogFlags{}
	c.dataDir = fs.String("data-dir", "./reactor-data", dataDirUsage)
	c.name = fs.String("catalog-name", "reactor", "catalog `name`: for a sql (JDBC) catalog the Java catalog's name (spark.sql.catalog.NAME), "+
		"which partitions the shared tables' rows; commit events naming another catalog are skipped")
	c.uri = fs.String("catalog-uri", "", "catalog `URI`: http(s):// (rest), thrift:// (hive), jdbc:postgresql://, jdbc:mysql://, jdbc:sqlite: or a Go DSN (sql); "+
		"empty with no other catalog setting uses the embedded catalog")
	c.typ = fs.String("catalog-type", "", "catalog `type`: "+strings.Join(catalogs.Types(), ", ")+" (default: what the URI implies)")
	c.warehouse = fs.String("warehouse", "", "warehouse `location` passed to the catalog (the hadoop catalog's root)")
	c.tokenFile = fs.String("catalog-token-file", "", "`file` holding a rest catalog's bearer token, read again when it changes "+
		"(a Kubernetes projected token; catalog property "+catalogs.TokenFileProperty+")")
	fs.Var(&c.props, "catalog-prop", "extra catalog property `key=value`, repeatable (jdbc.user, glue.region, s3.endpoint, credentials, ...; docs/cli.md#catalogs)")
	c.readConcurrency = fs.Int("read-concurrency", objectio.DefaultReadConcurrency,
		"data files and manifests a job reads at once from an s3://, gs:// or Azure warehouse (`n`, 1 to "+strconv.Itoa(objectio.MaxReadConcurrency)+"); a local warehouse reads GOMAXPROCS files at once")
	c.timeout = fs.Duration("catalog-timeout", catalogs.DefaultTimeout, "how long one catalog call (a load, a listing step, a commit) may take before it fails")
	c.acceptHadoopRisk = fs.Bool("accept-hadoop-object-store-risk", false,
		"let a hadoop catalog on an object store (s3, gs, abfs) be written, with allow-unsafe-commits: its commits are not atomic there "+
			"(docs/operations.md#hadoop-on-an-object-store)")
	c.limits = addSizeLimitFlags(fs)
	return c
}

// properties assembles the catalog properties (nil: the embedded catalog).
func (c *catalogFlags) properties() (iceberg.Properties, error) {
	props, err := catalogProperties(*c.typ, *c.uri, *c.warehouse, &c.props)
	if err != nil || props == nil {
		if err == nil && *c.tokenFile != "" {
			return nil, usageErrorf("--catalog-token-file is for a rest catalog: give --catalog-uri")
		}
		return props, err
	}
	if *c.tokenFile != "" {
		if _, dup := props[catalogs.TokenFileProperty]; dup {
			return nil, usageErrorf("catalog property %q is set by both --catalog-token-file and --catalog-prop", catalogs.TokenFileProperty)
		}
		props[catalogs.TokenFileProperty] = *c.tokenFile
	}
	// The S3 FileIO reads it from the catalog properties, as it reads
	// s3.*; a --catalog-prop of the same key is kept.
	if n := *c.readConcurrency; n < 1 || n > objectio.MaxReadConcurrency {
		return nil, usageErrorf("--read-concurrency must be 1 to %d, got %d", objectio.MaxReadConcurrency, n)
	}
	if _, set := props[objectio.ReadConcurrencyProperty]; !set {
		props[objectio.ReadConcurrencyProperty] = strconv.Itoa(*c.readConcurrency)
	}
	if err := c.limits.apply(props); err != nil {
		return nil, err
	}
	return props, nil
}

// config is the catalog the flags select, checked (catalogs.Config.Resolve):
// a bad setting is a usage error. readOnly opens it refusing every change
// (plan, health, dry runs).
func (c *catalogFlags) config(readOnly bool) (catalogs.Config, error) {
	props, err := c.properties()
	if err != nil {
		return catalogs.Config{}, err
	}
	if *c.timeout <= 0 {
		return catalogs.Config{}, usageErrorf("--catalog-timeout must be positive, got %s", *c.timeout)
	}
	cfg := catalogs.Config{Name: *c.name, Props: props, Timeout: *c.timeout, ReadOnly: readOnly,
		AcceptHadoopObjectStoreRisk: *c.acceptHadoopRisk}
	if props == nil && *c.dataDir != "" {
		cfg.EmbeddedDir = filepath.Join(*c.dataDir, "catalog")
	}
	if cfg, err = cfg.Resolve(); err != nil {
		return catalogs.Config{}, &usageError{err: err}
	}
	return cfg, nil
}

// catalogProperties assembles iceberg-go catalog properties from the
// dedicated flags and --catalog-prop. It returns nil when nothing is set,
// which selects the embedded catalog. The type and what it needs are
// checked by catalogs.Config.Resolve.
func catalogProperties(typ, uri, warehouse string, extra *propsFlag) (iceberg.Properties, error) {
	if typ == "" && uri == "" && warehouse == "" && len(extra.keys) == 0 {
		return nil, nil
	}
	props := iceberg.Properties{}
	for _, k := range extra.keys {
		props[k] = extra.values[k]
	}
	// A key given both ways is ambiguous; refuse rather than pick one.
	for _, d := range []struct{ key, flag, value string }{
		{"type", "--catalog-type", typ},
		{"uri", "--catalog-uri", uri},
		{"warehouse", "--warehouse", warehouse},
	} {
		if d.value == "" {
			continue
		}
		if _, dup := props[d.key]; dup {
			return nil, usageErrorf("catalog property %q is set by both %s and --catalog-prop", d.key, d.flag)
		}
		props[d.key] = d.value
	}
	return props, nil
}

// catalogUsage turns a catalog configuration error from opening (a Hadoop
// warehouse on an object store, a Hive Metastore 4) into a usage error.
func catalogUsage(err error) error {
	if errors.Is(err, catalogs.ErrConfig) {
		return &usageError{err: err}
	}
	return err
}
