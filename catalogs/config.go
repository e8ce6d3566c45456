package catalogs

import (
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net/url"
	"strings"
	"time"

	"github.com/apache/iceberg-go"

	"github.com/icereactor/reactor/redact"
)

// The catalog types reactor opens (the "type" property).
const (
	TypeREST   = "rest"
	TypeSQL    = "sql"
	TypeHive   = "hive"
	TypeGlue   = "glue"
	TypeHadoop = "hadoop"
)

// Types lists the catalog types, in the order the docs and errors name
// them.
func Types() []string { return []string{TypeHive, TypeGlue, TypeHadoop, TypeSQL, TypeREST} }

// DefaultTimeout bounds one catalog call when Config.Timeout is zero. A
// call is a round trip or a few (a Hive commit locks, reads, alters and
// unlocks) plus the metadata file it reads or writes: seconds at most on a
// healthy catalog. A hung catalog holds a job's slot this long.
const DefaultTimeout = 30 * time.Second

// EmbeddedName is the embedded catalog's name (package embedded).
const EmbeddedName = "reactor"

// Config selects and opens a catalog.
type Config struct {
	// Name is the catalog's name. For a JDBC catalog it must equal the
	// Java catalog's name: it is the catalog_name column that partitions
	// the rows of the shared tables.
	Name string
	// Props are iceberg-go catalog properties: type, uri, warehouse and
	// each type's own. Nil opens the embedded SQLite catalog under
	// EmbeddedDir.
	Props iceberg.Properties
	// EmbeddedDir is the embedded catalog's directory (used when Props is
	// nil).
	EmbeddedDir string
	// Timeout bounds every catalog call (DefaultTimeout when zero).
	Timeout time.Duration
	// ReadOnly opens the catalog refusing every change: plan, health and
	// dry runs. It also lets them read a Hadoop catalog on an object store.
	ReadOnly bool
	// AcceptHadoopObjectStoreRisk allows a Hadoop catalog on an object
	// store for writing (with iceberg-go's allow-unsafe-commits): its
	// commits are not atomic there (docs/operations.md#hadoop-on-an-object-store).
	AcceptHadoopObjectStoreRisk bool
	Logger                      *slog.Logger
	// MetadataCacheBytes bounds the parsed metadata kept by location
	// (metadata_cache.go); 0 or negative: no cache, the default.
	MetadataCacheBytes int64

	// now is the clock OAuth2 tokens' expiry is judged by (nil: time.Now);
	// tests move it.
	now func() time.Time
}

// ErrConfig marks a configuration the user must change: Resolve's errors
// wrap it, and so do Open's for what only opening can tell (a Hive
// Metastore 4).
var ErrConfig = errors.New("catalog configuration")

func configErrorf(format string, args ...any) error {
	return fmt.Errorf("%w: %w", ErrConfig, fmt.Errorf(format, args...))
}

// Resolve checks the configuration and returns it with what the type
// implies filled in: the type from the URI when unset, and for a SQL
// catalog the driver, dialect and the Go driver's DSN for a JDBC URI. A
// Hadoop warehouse on an object store is refused here unless the catalog
// is read-only or the risk accepted. The embedded catalog (nil Props)
// resolves to itself.
func (c Config) Resolve() (Config, error) {
	if c.Timeout < 0 {
		return c, configErrorf("--catalog-timeout must not be negative, got %s", c.Timeout)
	}
	if c.Props == nil {
		return c, nil
	}
	if strings.TrimSpace(c.Name) == "" {
		return c, configErrorf("--catalog-name must not be empty")
	}
	props := maps.Clone(c.Props)
	c.Props = props
	if props["type"] == "" {
		props["type"] = typeFromURI(props["uri"])
	}
	typ := props["type"]
	switch typ {
	case "":
		return c, configErrorf("--catalog-type is required (%s): none follows from the URI %q", typeList(), redact.String(props["uri"]))
	case TypeREST:
		if props["uri"] == "" {
			return c, configErrorf("--catalog-uri is required for a rest catalog: its http(s)://host:port")
		}
	case TypeSQL:
		if err := resolveSQL(props); err != nil {
			return c, err
		}
	case TypeHive:
		if err := checkHiveURI(props["uri"]); err != nil {
			return c, err
		}
	case TypeGlue:
		// Region, endpoint and credentials come from glue.* properties or
		// the AWS SDK's usual environment; nothing is required here.
	case TypeHadoop:
		if props["warehouse"] == "" {
			return c, configErrorf("--warehouse is required for a hadoop catalog: the directory its tables live under (file:///data/warehouse)")
		}
		if props["uri"] != "" {
			return c, configErrorf("a hadoop catalog takes no --catalog-uri (its --warehouse is the catalog), got %q", redact.String(props["uri"]))
		}
	default:
		return c, configErrorf("--catalog-type must be %s, got %q", typeList(), typ)
	}
	return c, checkHadoop(c)
}

// typeList is the types for messages: "hive, glue, hadoop, sql or rest".
func typeList() string {
	t := Types()
	return strings.Join(t[:len(t)-1], ", ") + " or " + t[len(t)-1]
}

// typeFromURI is the type a URI's scheme implies, or "".
func typeFromURI(uri string) string {
	u := strings.ToLower(strings.TrimSpace(uri))
	switch {
	case u == "":
		return ""
	case strings.HasPrefix(u, "http://"), strings.HasPrefix(u, "https://"):
		return TypeREST
	case strings.HasPrefix(u, "thrift://"):
		return TypeHive
	case strings.HasPrefix(u, "jdbc:"), strings.HasPrefix(u, "postgres://"), strings.HasPrefix(u, "postgresql://"),
		strings.HasPrefix(u, "mysql://"), strings.HasPrefix(u, "mariadb://"):
		return TypeSQL
	}
	return ""
}

// checkHiveURI: iceberg-go's hive catalog speaks NOSASL thrift to one
// thrift://host:port.
func checkHiveURI(uri string) error {
	if uri == "" {
		return configErrorf("--catalog-uri is required for a hive catalog: the Metastore's thrift://host:9083")
	}
	if strings.Contains(uri, ",") {
		return configErrorf("a hive catalog takes one Metastore URI, got a list %q: put the Metastores behind one address", redact.String(uri))
	}
	u, err := url.Parse(uri)
	if err != nil || !strings.EqualFold(u.Scheme, "thrift") || u.Hostname() == "" {
		return configErrorf("a hive catalog's --catalog-uri must be thrift://host:port, got %q", redact.String(uri))
	}
	return nil
}

// warehouseScheme is the lower-case scheme of a warehouse location ("" for
// a plain path).
func warehouseScheme(warehouse string) string {
	u, err := url.Parse(warehouse)
	if err != nil {
		return ""
	}
	return strings.ToLower(u.Scheme)
}

// localScheme reports whether a warehouse scheme names a local or mounted
// file system, where the Hadoop catalog commits through a hard link.
func localScheme(scheme string) bool { return scheme == "" || scheme == "file" }

// isType reports whether props select the catalog type typ.
func isType(props iceberg.Properties, typ string) bool { return props != nil && props["type"] == typ }

// describe is a short, credential-free description of the catalog for
// logs and errors.
func (c Config) describe() string {
	if c.Props == nil {
		return "the embedded catalog in " + c.EmbeddedDir
	}
	parts := []string{c.Props["type"] + " catalog " + c.Name}
	if uri := c.Props["uri"]; uri != "" {
		parts = append(parts, "at "+redact.String(uri))
	}
	if wh := c.Props["warehouse"]; wh != "" && c.Props["type"] == TypeHadoop {
		parts = append(parts, "on "+redact.String(wh))
	}
	return strings.Join(parts, " ")
}
