package catalogs

import (
	"errors"
	"maps"
	"strings"
	"testing"

	"github.com/apache/iceberg-go"
)

// TestResolve: the type follows from the URI when unset, a JDBC URL as
// Iceberg Java takes it becomes the Go driver's DSN with the driver and
// dialect it implies, and every bad setting is an ErrConfig naming the
// flag or property to change.
func TestResolve(t *testing.T) {
	tests := []struct {
		name    string
		props   iceberg.Properties
		want    iceberg.Properties // the properties that must be set so
		wantErr string
	}{
		{name: "rest from an http URI", props: iceberg.Properties{"uri": "https://cat:8181"},
			want: iceberg.Properties{"type": "rest"}},
		{name: "hive from a thrift URI", props: iceberg.Properties{"uri": "thrift://hms:9083"},
			want: iceberg.Properties{"type": "hive"}},
		{name: "postgres JDBC URL with the Java account properties",
			props: iceberg.Properties{"uri": "jdbc:postgresql://db:5432/lake?sslmode=require&currentSchema=ice", "jdbc.user": "ice", "jdbc.password": "p@ss"},
			want: iceberg.Properties{"type": "sql", "sql.driver": "pgx", "sql.dialect": "postgres",
				"uri": "postgres://ice:p%40ss@db:5432/lake?search_path=ice&sslmode=require"}},
		{name: "postgres URL kept", props: iceberg.Properties{"type": "sql", "uri": "postgres://u:p@db/lake?sslmode=disable"},
			want: iceberg.Properties{"sql.driver": "pgx", "sql.dialect": "postgres", "uri": "postgres://u:p@db/lake?sslmode=disable"}},
		{name: "mysql JDBC URL", props: iceberg.Properties{"uri": "jdbc:mysql://db:3307/lake?user=ice&password=pw&sslMode=DISABLED"},
			want: iceberg.Properties{"type": "sql", "sql.driver": "mysql", "sql.dialect": "mysql", "uri": "ice:pw@tcp(db:3307)/lake"}},
		{name: "mariadb JDBC URL, default port", props: iceberg.Properties{"uri": "jdbc:mariadb://db/lake", "jdbc.user": "ice"},
			want: iceberg.Properties{"type": "sql", "sql.driver": "mysql", "sql.dialect": "mysql", "uri": "ice@tcp(db:3306)/lake"}},
		{name: "go-sql-driver DSN with the driver named", props: iceberg.Properties{"type": "sql", "uri": "u:p@tcp(db:3306)/lake?tls=true", "sql.driver": "mysql"},
			want: iceberg.Properties{"sql.dialect": "mysql", "uri": "u:p@tcp(db:3306)/lake?tls=true"}},
		{name: "sqlite JDBC URL", props: iceberg.Properties{"uri": "jdbc:sqlite:/data/cat.db"},
			want: iceberg.Properties{"type": "sql", "sql.driver": "sqliteshim", "sql.dialect": "sqlite", "uri": "file:/data/cat.db"}},
		{name: "explicit driver and dialect win", props: iceberg.Properties{"type": "sql", "uri": "file:/c.db", "sql.driver": "sqliteshim", "sql.dialect": "SQLite"},
			want: iceberg.Properties{"sql.driver": "sqliteshim", "sql.dialect": "SQLite"}},
		{name: "glue needs nothing", props: iceberg.Properties{"type": "glue", "glue.region": "eu-west-1"}},
		{name: "hadoop on a local warehouse", props: iceberg.Properties{"type": "hadoop", "warehouse": "file:///data/wh"}},

		{name: "no type", props: iceberg.Properties{"uri": "file:///c.db"}, wantErr: "--catalog-type is required"},
		{name: "unknown type", props: iceberg.Properties{"type": "nessie", "uri": "http://n"}, wantErr: "--catalog-type must be hive, glue, hadoop, sql or rest"},
		{name: "rest without a URI", props: iceberg.Properties{"type": "rest"}, wantErr: "--catalog-uri is required for a rest catalog"},
		{name: "hive without a URI", props: iceberg.Properties{"type": "hive"}, wantErr: "--catalog-uri is required for a hive catalog"},
		{name: "hive with an http URI", props: iceberg.Properties{"type": "hive", "uri": "http://hms:9083"}, wantErr: "must be thrift://host:port"},
		{name: "hive with a list", props: iceberg.Properties{"uri": "thrift://a:9083,thrift://b:9083"}, wantErr: "one Metastore URI"},
		{name: "hadoop without a warehouse", props: iceberg.Properties{"type": "hadoop"}, wantErr: "--warehouse is required for a hadoop catalog"},
		{name: "hadoop with a URI", props: iceberg.Properties{"type": "hadoop", "uri": "thrift://x", "warehouse": "/wh"}, wantErr: "takes no --catalog-uri"},
		{name: "sql without a URI", props: iceberg.Properties{"type": "sql"}, wantErr: "--catalog-uri is required for a sql catalog"},
		{name: "sql driver not linked", props: iceberg.Properties{"type": "sql", "uri": "x", "sql.driver": "oracle"}, wantErr: `"oracle" is not linked`},
		{name: "sql dialect unknown", props: iceberg.Properties{"type": "sql", "uri": "x", "sql.driver": "pgx", "sql.dialect": "db2"}, wantErr: "postgres, mysql or sqlite"},
		{name: "sql DSN implying no driver", props: iceberg.Properties{"type": "sql", "uri": "host=db dbname=lake"}, wantErr: "driver does not follow"},
		{name: "postgres JDBC parameter without a Go equivalent", props: iceberg.Properties{"uri": "jdbc:postgresql://db/lake?prepareThreshold=0"},
			wantErr: `"prepareThreshold" of the sql catalog's URI has no PostgreSQL Go driver equivalent`},
		{name: "mysql JDBC parameter without a Go equivalent", props: iceberg.Properties{"uri": "jdbc:mysql://db/lake?rewriteBatchedStatements=true"},
			wantErr: `"rewriteBatchedStatements" of the sql catalog's URI has no MySQL Go driver equivalent`},
		{name: "mysql URL without a database", props: iceberg.Properties{"uri": "mysql://db:3306"}, wantErr: "names no database"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := maps.Clone(tt.props)
			got, err := Config{Name: "lake", Props: tt.props}.Resolve()
			if !maps.Equal(tt.props, in) {
				t.Errorf("Resolve changed its input: %v", tt.props)
			}
			if tt.wantErr != "" {
				if !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want an ErrConfig containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			for k, v := range tt.want {
				if got.Props[k] != v {
					t.Errorf("%s = %q, want %q (props %v)", k, got.Props[k], v, got.Props)
				}
			}
		})
	}
}

// TestResolveCatalogName: a configured catalog needs a name (a JDBC
// catalog's rows are keyed by it); the embedded one has its own.
func TestResolveCatalogName(t *testing.T) {
	if _, err := (Config{Props: iceberg.Properties{"uri": "http://x"}}).Resolve(); err == nil || !strings.Contains(err.Error(), "--catalog-name") {
		t.Fatalf("err = %v, want one naming --catalog-name", err)
	}
	if _, err := (Config{EmbeddedDir: t.TempDir()}).Resolve(); err != nil {
		t.Fatal(err)
	}
}

// The catalogs that reach S3 Tables are named in the log; others are not.
func TestS3TablesCatalog(t *testing.T) {
	for _, tc := range []struct {
		props map[string]string
		s3    bool
	}{
		{map[string]string{"uri": "https://s3tables.us-east-1.amazonaws.com/iceberg", "warehouse": "arn:aws:s3tables:us-east-1:111122223333:bucket/b"}, true},
		{map[string]string{"uri": "https://example.com/iceberg", "warehouse": "arn:aws-cn:s3tables:cn-north-1:111122223333:bucket/b"}, true},
		{map[string]string{"uri": "https://glue.us-east-1.amazonaws.com/iceberg", "warehouse": "111122223333:s3tablescatalog/b", "rest.signing-name": "glue"}, true},
		{map[string]string{"uri": "https://proxy.internal/iceberg", "rest.signing-name": "s3tables"}, true},
		{map[string]string{"uri": "https://s3tables.eu-west-1.amazonaws.com/iceberg"}, true},
		{map[string]string{"uri": "https://glue.us-east-1.amazonaws.com/iceberg", "warehouse": "111122223333", "rest.signing-name": "glue"}, false},
		{map[string]string{"uri": "http://localhost:8181", "warehouse": "s3://lake/wh"}, false},
	} {
		if got := s3TablesCatalog(tc.props) != ""; got != tc.s3 {
			t.Errorf("s3TablesCatalog(%v) = %q, want S3 Tables %v", tc.props, s3TablesCatalog(tc.props), tc.s3)
		}
	}
}
