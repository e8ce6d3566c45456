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

// The environment the suite needs (realparts/run sets it). Without the
// first four every test skips.
const (
	envNATSServer = "REALPARTS_NATS_SERVER" // nats-server binary
	envMinIO      = "REALPARTS_MINIO"       // minio binary
	envCatalogJar = "REALPARTS_CATALOG_JAR" // iceberg-open-api jar (the REST catalog server)
	envReactor    = "REALPARTS_REACTOR"     // reactor binary built from this tree
	envJava       = "REALPARTS_JAVA"        // java to run the jar with (default: java on PATH)
	envWork       = "REALPARTS_WORK"        // work directory (default: a new temporary one)
	envCapture    = "REALPARTS_CAPTURE"     // write captured notifications here as fixtures
)

// theSuite holds the servers every scenario shares, started once by
// TestMain (nil when the suite is not configured). Scenarios run one after
// the other, each in its own namespace with its own reactor process.
var theSuite *suite

func TestMain(m *testing.M) {
	os.Exit(runMain(m))
}

func runMain(m *testing.M) int {
	missing := []string{}
	for _, k := range []string{envNATSServer, envMinIO, envCatalogJar, envReactor} {
		if os.Getenv(k) == "" {
			missing = append(missing, k)
		}
	}
	if len(missing) > 0 {
		// Every test skips: plain `go test ./...` needs none of this.
		fmt.Fprintf(os.Stderr, "realparts: %s not set; scenarios skipped (run realparts/run)\n", strings.Join(missing, ", "))
		return m.Run()
	}

	work := os.Getenv(envWork)
	if work == "" {
		var err error
		if work, err = os.MkdirTemp("", "realparts-"); err != nil {
			fmt.Fprintln(os.Stderr, "realparts:", err)
			return 1
		}
	}
	work, _ = filepath.Abs(work)

	procs := newProcesses()
	// An interrupt or a SIGTERM (CI cancelling the job) stops every server
	// before the suite exits; SIGKILL is covered by each child's Pdeathsig.
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	go func() {
		sig := <-sigs
		fmt.Fprintf(os.Stderr, "realparts: %v: stopping every server the suite started\n", sig)
		procs.stopAll()
		os.Exit(1)
	}()
	defer procs.stopAll()

	s, err := startSuite(context.Background(), work, procs)
	if err != nil {
		fmt.Fprintln(os.Stderr, "realparts: could not start the servers:", err)
		return 1
	}
	defer s.close()
	theSuite = s
	fmt.Fprintf(os.Stderr, "realparts: nats %s, minio %s, rest catalog %s; work directory %s\n",
		s.natsAddr, s.s3Endpoint, s.catalogURI, work)
	return m.Run()
}

// need returns the shared suite, or skips the test when it is not
// configured.
func need(t *testing.T) *suite {
	t.Helper()
	if theSuite == nil {
		t.Skip("realparts suite not configured (REALPARTS_* unset); run realparts/run")
	}
	return theSuite
}
