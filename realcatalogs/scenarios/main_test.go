package scenarios

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// The environment the suite needs (realcatalogs/run sets it). Without it
// every test skips.
const (
	envReactor          = "REALCATALOGS_REACTOR"          // reactor binary built from this tree
	envHMSHome          = "REALCATALOGS_HMS_HOME"         // the Hive Metastore's install (lib, deps, derby-template)
	envPGBin            = "REALCATALOGS_PG_BIN"           // PostgreSQL's bin directory
	envPGTemplate       = "REALCATALOGS_PG_TEMPLATE"      // a PostgreSQL data directory made by initdb
	envMariaDBD         = "REALCATALOGS_MARIADBD"         // mariadbd
	envMariaDBTemplate  = "REALCATALOGS_MARIADB_TEMPLATE" // a data directory made by mariadb-install-db
	envMoto             = "REALCATALOGS_MOTO"             // moto_server
	envPython           = "REALCATALOGS_PYTHON"           // the python with pyspark
	envSparkJars        = "REALCATALOGS_SPARK_JARS"       // Iceberg's Spark runtime and the JDBC drivers, comma-separated
	envSparkServer      = "REALCATALOGS_SPARK_SERVER"     // realcatalogs/spark/server.py
	envWork             = "REALCATALOGS_WORK"             // work directory (default: a new temporary one)
	envSkipSparkWriters = "REALCATALOGS_NO_SPARK"         // 1: skip what needs Spark (a quick local check)
)

// theSuite holds the servers every scenario shares, started once by
// TestMain (nil when the suite is not configured).
var theSuite *suite

func TestMain(m *testing.M) {
	os.Exit(runMain(m))
}

func runMain(m *testing.M) int {
	var missing []string
	for _, k := range []string{envReactor, envHMSHome, envPGBin, envPGTemplate, envMariaDBD, envMariaDBTemplate, envMoto, envPython, envSparkJars, envSparkServer} {
		if os.Getenv(k) == "" {
			missing = append(missing, k)
		}
	}
	if len(missing) > 0 {
		// Every test skips: plain `go test ./...` needs none of this.
		fmt.Fprintf(os.Stderr, "realcatalogs: %s not set; scenarios skipped (run realcatalogs/run)\n", strings.Join(missing, ", "))
		return m.Run()
	}
	work := os.Getenv(envWork)
	if work == "" {
		var err error
		if work, err = os.MkdirTemp("", "realcatalogs-"); err != nil {
			fmt.Fprintln(os.Stderr, "realcatalogs:", err)
			return 1
		}
	}
	work, _ = filepath.Abs(work)
	procs := newProcesses()
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	go func() {
		sig := <-sigs
		fmt.Fprintf(os.Stderr, "realcatalogs: %v: stopping every server the suite started\n", sig)
		procs.stopAll()
		os.Exit(1)
	}()
	defer procs.stopAll()

	s, err := startSuite(context.Background(), work, procs)
	if err != nil {
		fmt.Fprintln(os.Stderr, "realcatalogs: could not start the servers:", err)
		return 1
	}
	defer s.close()
	theSuite = s
	fmt.Fprintf(os.Stderr, "realcatalogs: hms %s, postgres %s, mariadb %s, moto %s; work directory %s\n",
		s.hmsAddr, s.pgAddr, s.mariaAddr, s.motoURL, work)
	return m.Run()
}

// need returns the shared suite, or skips the test when it is not
// configured.
func need(t *testing.T) *suite {
	t.Helper()
	if theSuite == nil {
		t.Skip("realcatalogs suite not configured (REALCATALOGS_* unset); run realcatalogs/run")
	}
	return theSuite
}

// needSpark is need for the scenarios with a Spark writer.
func needSpark(t *testing.T) *suite {
	t.Helper()
	s := need(t)
	if s.spark == nil {
		t.Skip("Spark not started (" + envSkipSparkWriters + "=1)")
	}
	return s
}
