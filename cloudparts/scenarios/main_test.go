package scenarios

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The environment the suite needs (cloudparts/run sets it). Without the
// first three every test skips.
const (
	envFakeGCS = "CLOUDPARTS_FAKE_GCS" // fake-gcs-server binary
	envAzurite = "CLOUDPARTS_AZURITE"  // azurite-blob (Node.js script)
	envReactor = "CLOUDPARTS_REACTOR"  // reactor binary built from this tree
	envWork    = "CLOUDPARTS_WORK"     // work directory (default: a new temporary one)
)

// readyTimeout bounds how long a server may take to answer after start: a
// hang guard, far above the few seconds each takes on a loaded machine.
const readyTimeout = 2 * time.Minute

// theSuite holds the servers every scenario shares, started once by
// TestMain (nil when the suite is not configured).
var theSuite *suite

// suite is the shared servers. Scenarios may run in parallel: each has its
// own bucket or namespace and its own reactor processes.
type suite struct {
	work       string
	procs      *processes
	reactorBin string

	gcs   *process
	gcsEP string // http://127.0.0.1:PORT
	az    *process
	azEP  string // http://127.0.0.1:PORT
}

func TestMain(m *testing.M) { os.Exit(runMain(m)) }

func runMain(m *testing.M) int {
	var missing []string
	for _, k := range []string{envFakeGCS, envAzurite, envReactor} {
		if os.Getenv(k) == "" {
			missing = append(missing, k)
		}
	}
	if len(missing) > 0 {
		fmt.Fprintf(os.Stderr, "cloudparts: %s not set; scenarios skipped (run cloudparts/run)\n", strings.Join(missing, ", "))
		return m.Run()
	}
	work := os.Getenv(envWork)
	if work == "" {
		var err error
		if work, err = os.MkdirTemp("", "cloudparts-"); err != nil {
			fmt.Fprintln(os.Stderr, "cloudparts:", err)
			return 1
		}
	}
	work, _ = filepath.Abs(work)
	procs := newProcesses()
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	go func() {
		sig := <-sigs
		fmt.Fprintf(os.Stderr, "cloudparts: %v: stopping every server the suite started\n", sig)
		procs.stopAll()
		os.Exit(1)
	}()
	defer procs.stopAll()
	s := &suite{work: work, procs: procs, reactorBin: os.Getenv(envReactor)}
	ctx := context.Background()
	if err := s.startFakeGCS(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "cloudparts: fake-gcs-server:", err)
		return 1
	}
	if err := s.startAzurite(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "cloudparts: azurite:", err)
		return 1
	}
	theSuite = s
	fmt.Fprintf(os.Stderr, "cloudparts: fake-gcs-server %s, azurite %s; work directory %s\n", s.gcsEP, s.azEP, work)
	return m.Run()
}

// need returns the shared suite, or skips the test when it is not
// configured.
func need(t *testing.T) *suite {
	t.Helper()
	if theSuite == nil {
		t.Skip("cloudparts suite not configured (CLOUDPARTS_* unset); run cloudparts/run")
	}
	return theSuite
}

// baseEnv is what every child inherits: enough to find programs and a
// home directory, nothing that configures a store, AWS or reactor behind
// the test's back.
func baseEnv() []string {
	var env []string
	for _, k := range []string{"PATH", "HOME", "TMPDIR", "LANG", "JAVA_HOME", "USER"} {
		if v, ok := os.LookupEnv(k); ok {
			env = append(env, k+"="+v)
		}
	}
	return env
}

func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("pick a free port: %w", err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	return port, ln.Close()
}

var errExitedEarly = errors.New("exited before it was ready")

// startWithRetry starts a server on fresh ports up to three times: a port
// picked free can be taken before the server binds it.
func startWithRetry(what string, try func() error) error {
	var errs []error
	for range 3 {
		err := try()
		if err == nil {
			return nil
		}
		errs = append(errs, err)
		if !errors.Is(err, errExitedEarly) {
			break
		}
	}
	return fmt.Errorf("%s: %w", what, errors.Join(errs...))
}

// waitHTTP polls url until it answers below 500, the process exits, or
// readyTimeout passes.
func waitHTTP(ctx context.Context, p *process, url string) error {
	hc := &http.Client{Timeout: 2 * time.Second}
	deadline := time.Now().Add(readyTimeout)
	var last error
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return err
		}
		resp, err := hc.Do(req)
		if err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode < 500 {
				return nil
			}
			err = fmt.Errorf("GET %s: %s", url, resp.Status)
		}
		last = err
		if p.exited() {
			return fmt.Errorf("%s %w (%v)\n%s", p.name, errExitedEarly, last, p.tail(30))
		}
		if time.Now().After(deadline) {
			p.kill()
			return fmt.Errorf("%s not answering %s after %s: %w\n%s", p.name, url, readyTimeout, last, p.tail(30))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func (s *suite) startFakeGCS(ctx context.Context) error {
	return startWithRetry("fake-gcs-server", func() error {
		port, err := freePort()
		if err != nil {
			return err
		}
		addr := "127.0.0.1:" + strconv.Itoa(port)
		dir := filepath.Join(s.work, "gcs")
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
		p, err := s.procs.start("fake-gcs-server", []string{os.Getenv(envFakeGCS), "-scheme", "http", "-host", "127.0.0.1",
			"-port", strconv.Itoa(port), "-backend", "filesystem", "-filesystem-root", dir,
			"-public-host", addr, "-external-url", "http://" + addr, "-log-level", "warn"},
			baseEnv(), filepath.Join(s.work, "fake-gcs-server.log"))
		if err != nil {
			return err
		}
		if err := waitHTTP(ctx, p, "http://"+addr+"/storage/v1/b"); err != nil {
			return err
		}
		s.gcs, s.gcsEP = p, "http://"+addr
		return nil
	})
}

func (s *suite) startAzurite(ctx context.Context) error {
	return startWithRetry("azurite", func() error {
		port, err := freePort()
		if err != nil {
			return err
		}
		dir := filepath.Join(s.work, "azurite")
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
		p, err := s.procs.start("azurite", []string{os.Getenv(envAzurite), "--blobHost", "127.0.0.1",
			"--blobPort", strconv.Itoa(port), "--location", dir, "--skipApiVersionCheck", "--loose", "--silent",
			"--disableTelemetry"}, baseEnv(), filepath.Join(s.work, "azurite.log"))
		if err != nil {
			return err
		}
		ep := "http://127.0.0.1:" + strconv.Itoa(port)
		if err := waitHTTP(ctx, p, ep+"/"+azuriteAccount+"?comp=list"); err != nil {
			return err
		}
		s.az, s.azEP = p, ep
		return nil
	})
}
