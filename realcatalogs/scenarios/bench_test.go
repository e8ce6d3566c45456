package scenarios

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/icereactor/reactor/catalogs"
)

// catalogProps are the iceberg-go properties reactor's flags for the Spark
// catalog name amount to (reactorFlags).
func (s *suite) catalogProps(name string) iceberg.Properties {
	wh := "file://" + filepath.Join(s.work, "warehouse-"+name)
	switch name {
	case "hms":
		return iceberg.Properties{"type": "hive", "uri": "thrift://" + s.hmsAddr, "warehouse": wh}
	case "pg":
		return iceberg.Properties{"uri": "jdbc:postgresql://" + s.pgAddr + "/" + dbName, "warehouse": wh,
			"jdbc.user": dbUser, "jdbc.password": dbPassword}
	case "maria":
		return iceberg.Properties{"uri": "jdbc:mariadb://" + s.mariaAddr + "/" + dbName, "warehouse": wh,
			"jdbc.user": dbUser, "jdbc.password": dbPassword}
	case "hadoop":
		return iceberg.Properties{"type": "hadoop", "warehouse": wh}
	}
	panic("no catalog " + name)
}

// BenchmarkCommitThroughEachCatalog: one commit through each real catalog
// (a load of the table and a commit of one table property: a refresh, a
// new metadata file, the catalog's swap), by reactor's catalog (package
// catalogs over iceberg-go) and by Spark's (Iceberg Java's API in the
// suite's Spark session) on the same table, b.N each, one after the other.
// It reports the medians and their ratio (x-spark: reactor's over
// Spark's; the target is at most 2).
//
//	realcatalogs/run bench
func BenchmarkCommitThroughEachCatalog(b *testing.B) {
	if theSuite == nil || theSuite.spark == nil {
		b.Skip("realcatalogs suite not configured; run realcatalogs/run bench")
	}
	s := theSuite
	ctx := context.Background()
	for _, name := range []string{"hms", "pg", "maria", "hadoop"} {
		b.Run(name, func(b *testing.B) {
			tname := fmt.Sprintf("bench%d", b.N)
			if _, err := s.spark.call(map[string]any{"cmd": "create", "catalog": name, "table": "db." + tname}, 5*time.Minute); err != nil {
				b.Fatal(err)
			}
			cat, err := catalogs.Open(ctx, catalogs.Config{Name: name, Props: s.catalogProps(name), Logger: slog.New(slog.DiscardHandler)})
			if err != nil {
				b.Fatal(err)
			}
			defer cat.Close()
			ident := table.Identifier{"db", tname}
			// Warm: the first load opens connections.
			if _, err := cat.LoadTable(ctx, ident); err != nil {
				b.Fatal(err)
			}
			samples := make([]float64, 0, b.N)
			b.ResetTimer()
			for i := range b.N {
				t0 := time.Now()
				tbl, err := cat.LoadTable(ctx, ident)
				if err != nil {
					b.Fatal(err)
				}
				if _, err := setProperty(ctx, tbl, "reactor-suite.bench", fmt.Sprint(i)); err != nil {
					b.Fatal(err)
				}
				samples = append(samples, float64(time.Since(t0).Microseconds())/1000)
			}
			b.StopTimer()
			// Every commit changed the table (none was a no-op).
			tbl, err := cat.LoadTable(ctx, ident)
			if err != nil {
				b.Fatal(err)
			}
			if got := tbl.Properties()["reactor-suite.bench"]; got != fmt.Sprint(b.N-1) {
				b.Fatalf("after %d commits the table's property is %q", b.N, got)
			}
			ans, err := s.spark.call(map[string]any{"cmd": "bench", "catalog": name, "table": "db." + tname, "n": b.N}, 30*time.Minute)
			if err != nil {
				b.Fatal(err)
			}
			var spark []float64
			for _, v := range ans["ms"].([]any) {
				spark = append(spark, v.(float64))
			}
			goMs, sparkMs := median(samples), median(spark)
			b.ReportMetric(goMs, "reactor-ms/commit")
			b.ReportMetric(sparkMs, "spark-ms/commit")
			b.ReportMetric(goMs/sparkMs, "x-spark")
			// Spark's samples include four calls from Python into the JVM.
			b.ReportMetric(ans["py4j_call_ms"].(float64), "py4j-ms/call")
		})
	}
}
