package catalogs

import (
	"database/sql"
	"net"
	"net/url"
	"slices"
	"strings"

	"github.com/apache/iceberg-go"
	sqlcat "github.com/apache/iceberg-go/catalog/sql"
	"github.com/go-sql-driver/mysql"
	// Registers "pgx": iceberg-go's SQL catalog opens the driver its
	// sql.driver property names through database/sql.
	_ "github.com/jackc/pgx/v5/stdlib"
	"github.com/uptrace/bun/driver/sqliteshim"

	"github.com/icereactor/reactor/redact"
)

// The database/sql drivers reactor links, by the name sql.driver takes.
const (
	driverPostgres = "pgx"
	driverMySQL    = "mysql"
	driverSQLite   = sqliteshim.ShimName
)

// Iceberg Java's JdbcCatalog properties for the database account, which
// reactor folds into the Go driver's DSN.
const (
	jdbcUser     = "jdbc.user"
	jdbcPassword = "jdbc.password"
)

// resolveSQL fills in a SQL catalog's driver, dialect and DSN from its URI
// (a JDBC URL as Iceberg Java takes it, or a Go driver's DSN) and checks
// that the driver is linked.
func resolveSQL(props iceberg.Properties) error {
	uri := strings.TrimSpace(props["uri"])
	if uri == "" {
		return configErrorf("--catalog-uri is required for a sql catalog: jdbc:postgresql://host:5432/db, jdbc:mysql://host:3306/db, jdbc:sqlite:/path or a Go driver's DSN")
	}
	dsn, driver, err := goDSN(uri, props[jdbcUser], props[jdbcPassword])
	if err != nil {
		return err
	}
	props["uri"] = dsn
	if props[sqlcat.DriverKey] == "" {
		props[sqlcat.DriverKey] = driver
	}
	driver = props[sqlcat.DriverKey]
	if driver == "" {
		return configErrorf("the sql catalog's driver does not follow from its URI %q: set --catalog-prop sql.driver=pgx|mysql|sqliteshim and sql.dialect", redact.String(uri))
	}
	if !slices.Contains(sql.Drivers(), driver) {
		return configErrorf("the sql driver %q is not linked into reactor: it links %s (PostgreSQL), %s (MySQL, MariaDB) and %s (SQLite)",
			driver, driverPostgres, driverMySQL, driverSQLite)
	}
	if props[sqlcat.DialectKey] == "" {
		props[sqlcat.DialectKey] = dialectOf(driver)
	}
	switch sqlcat.SupportedDialect(strings.ToLower(props[sqlcat.DialectKey])) {
	case sqlcat.Postgres, sqlcat.MySQL, sqlcat.SQLite:
	case "":
		return configErrorf("the sql catalog's dialect does not follow from its driver %q: set --catalog-prop sql.dialect=postgres|mysql|sqlite", driver)
	default:
		return configErrorf("the sql dialect must be postgres, mysql or sqlite, got %q", props[sqlcat.DialectKey])
	}
	return nil
}

// dialectOf is the dialect of a linked driver ("" for another).
func dialectOf(driver string) string {
	switch driver {
	case driverPostgres, "pgx/v5":
		return string(sqlcat.Postgres)
	case driverMySQL:
		return string(sqlcat.MySQL)
	case driverSQLite, "sqlite", "sqlite3":
		return string(sqlcat.SQLite)
	}
	return ""
}

// goDSN turns a SQL catalog URI into the DSN of the Go driver it implies,
// and names that driver ("" when the URI implies none: a Go driver's own
// DSN is passed through as written). user and password are Iceberg Java's
// jdbc.user and jdbc.password, added to a JDBC URL that has none.
func goDSN(uri, user, password string) (dsn, driver string, err error) {
	lower := strings.ToLower(uri)
	switch {
	case strings.HasPrefix(lower, "jdbc:postgresql:"):
		return postgresDSN(uri[len("jdbc:"):], user, password, true)
	case strings.HasPrefix(lower, "postgres://"), strings.HasPrefix(lower, "postgresql://"):
		return postgresDSN(uri, user, password, false)
	case strings.HasPrefix(lower, "jdbc:mysql:"), strings.HasPrefix(lower, "jdbc:mariadb:"):
		return mysqlDSN(uri[len("jdbc:"):], user, password)
	case strings.HasPrefix(lower, "mysql://"), strings.HasPrefix(lower, "mariadb://"):
		return mysqlDSN(uri, user, password)
	case strings.HasPrefix(lower, "jdbc:sqlite:"):
		return "file:" + strings.TrimPrefix(uri[len("jdbc:sqlite:"):], "file:"), driverSQLite, nil
	case strings.HasPrefix(lower, "file:"):
		return uri, driverSQLite, nil
	}
	return uri, "", nil
}

// postgresParam maps a JDBC driver URL parameter that has a libpq
// equivalent pgx reads; any other parameter is refused rather than sent to
// the server as a setting it does not know.
func postgresParam(k string) (string, bool) {
	switch strings.ToLower(k) {
	case "user", "password", "sslmode", "sslrootcert", "sslcert", "sslkey":
		return strings.ToLower(k), true
	case "connecttimeout", "connect_timeout":
		return "connect_timeout", true
	case "applicationname", "application_name":
		return "application_name", true
	case "currentschema", "search_path":
		return "search_path", true
	}
	return "", false
}

// postgresDSN rewrites a postgresql:// URL (from a JDBC URL when jdbc) into
// the postgres:// URL pgx reads, with the account given apart.
func postgresDSN(raw, user, password string, jdbc bool) (string, string, error) {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return "", "", configErrorf("the sql catalog's URI %q is not a postgresql://host:port/database URL", redact.String(raw))
	}
	u.Scheme = "postgres"
	if jdbc {
		q := url.Values{}
		for k, vs := range u.Query() {
			name, ok := postgresParam(k)
			if k == "ssl" && len(vs) > 0 {
				if strings.EqualFold(vs[0], "true") {
					q.Set("sslmode", "require")
				}
				continue
			}
			if !ok {
				return "", "", configErrorf("the JDBC parameter %q of the sql catalog's URI has no PostgreSQL Go driver equivalent: give a postgres:// URL with libpq parameters instead", k)
			}
			q[name] = vs
		}
		u.RawQuery = q.Encode()
	}
	if u.User == nil && user != "" {
		if password != "" {
			u.User = url.UserPassword(user, password)
		} else {
			u.User = url.User(user)
		}
	}
	return u.String(), driverPostgres, nil
}

// mysqlDSN rewrites a mysql:// or mariadb:// URL into go-sql-driver's
// user:password@tcp(host:port)/database DSN.
func mysqlDSN(raw, user, password string) (string, string, error) {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return "", "", configErrorf("the sql catalog's URI %q is not a mysql://host:port/database URL", redact.String(raw))
	}
	cfg := mysql.NewConfig()
	cfg.Net = "tcp"
	cfg.Addr = u.Host
	if u.Port() == "" {
		cfg.Addr = net.JoinHostPort(u.Hostname(), "3306")
	}
	cfg.DBName = strings.TrimPrefix(u.Path, "/")
	if cfg.DBName == "" {
		return "", "", configErrorf("the sql catalog's URI %q names no database", redact.String(raw))
	}
	cfg.User, cfg.Passwd = user, password
	if u.User != nil {
		cfg.User = u.User.Username()
		cfg.Passwd, _ = u.User.Password()
	}
	for k, vs := range u.Query() {
		v := ""
		if len(vs) > 0 {
			v = vs[0]
		}
		switch strings.ToLower(k) {
		case "user":
			cfg.User = v
		case "password":
			cfg.Passwd = v
		case "usessl":
			if strings.EqualFold(v, "true") {
				cfg.TLSConfig = "true"
			}
		case "sslmode":
			switch strings.ToUpper(v) {
			case "DISABLED":
			case "PREFERRED":
				cfg.TLSConfig = "preferred"
			case "REQUIRED":
				cfg.TLSConfig = "skip-verify"
			case "VERIFY_CA", "VERIFY_IDENTITY":
				cfg.TLSConfig = "true"
			default:
				return "", "", configErrorf("the sql catalog's sslMode %q is not DISABLED, PREFERRED, REQUIRED, VERIFY_CA or VERIFY_IDENTITY", v)
			}
		default:
			return "", "", configErrorf("the JDBC parameter %q of the sql catalog's URI has no MySQL Go driver equivalent: give a go-sql-driver DSN (user:password@tcp(host:3306)/db?tls=true) with sql.driver=mysql instead", k)
		}
	}
	return cfg.FormatDSN(), driverMySQL, nil
}
