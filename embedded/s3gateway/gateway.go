// Package s3gateway runs a real S3 server in-process for tests: an embedded
// versitygw (package embedgw) on its posix backend, optionally publishing its
// bucket-event notifications to NATS. Tests that need s3:// warehouses or real
// storage notifications use it instead of fakes, so the bytes reactor decodes
// in tests are the bytes a real gateway sends.
//
// It is test-only support: import it from _test.go files only. It is not a
// production component, and it drags versitygw's dependency tree into every
// binary that imports it.
//
// One gateway per process. embedgw keeps package-level globals (bucket-name
// validation, debug logging) and refuses a second RunVersityGW while one is
// running, and the posix backend changes the process's working directory to
// its root (it resolves object paths relative to it). So a test binary starts
// a single gateway in TestMain, shares it between its tests (distinct bucket
// names keep tests apart), and every path a test uses must be absolute.
package s3gateway

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/versity/versitygw/backend/meta"
	"github.com/versity/versitygw/backend/posix"
	"github.com/versity/versitygw/embedgw"
)

// Defaults for Options fields left empty. The credentials are the root
// account of a throw-away gateway on loopback; they protect nothing.
const (
	DefaultAccessKey = "reactor-test-access"
	DefaultSecretKey = "reactor-test-secret"
	DefaultRegion    = "us-east-1"
)

const (
	// healthPath is served by versitygw without authentication; polling it
	// tells "listening and routing" apart from "not up yet" without needing
	// signed requests. A bucket name cannot start with '.', so it masks no
	// bucket.
	healthPath = "/.s3gateway-health"

	// readyTimeout bounds the wait for the gateway to answer. Start-up is
	// milliseconds once built; the bound only turns a hang into an error.
	readyTimeout = 30 * time.Second
	pollInterval = 10 * time.Millisecond

	// startAttempts: a free port is found by binding port 0 and releasing
	// it, so another process may take it before versitygw binds it. A bind
	// failure with EADDRINUSE is retried on a fresh port; nothing else is.
	startAttempts = 3

	// shutdownTimeout bounds Close. versitygw's own HTTP shutdown waits up
	// to its internal limit for in-flight requests.
	shutdownTimeout = 30 * time.Second

	// Limits embedgw refuses to start without (zero is rejected or, for the
	// copy threshold, rejects every CopyObject). Values are generous: tests
	// should hit no limit they did not ask for.
	maxConnections      = 1024
	maxRequests         = 512
	multipartMaxParts   = 10000   // the S3 maximum
	copyObjectThreshold = 5 << 30 // 5 GiB, the S3 CopyObject limit
)

// Options configure Start.
type Options struct {
	// RootDir holds the buckets (one directory each, posix backend). It must
	// be absolute: the backend changes the working directory to it. It is
	// created if missing.
	RootDir string
	// NATSURL is where bucket notifications go ("" = no notifications).
	// versitygw publishes one plain {"Records":[...]} message per object
	// event on Subject, for every bucket (it has no per-bucket notification
	// configuration), after publishing an s3:TestEvent message at start-up.
	NATSURL string
	// Subject is the NATS subject for notifications; required with NATSURL.
	Subject string
	// AccessKey and SecretKey of the gateway's root account; defaults if
	// empty.
	AccessKey, SecretKey string
	// Region reported to clients; default "us-east-1".
	Region string
}

// Gateway is a running embedded versitygw.
type Gateway struct {
	endpoint string
	access   string
	secret   string
	region   string
	client   *s3.Client

	cancel context.CancelFunc
	// stopped is closed when RunVersityGW has returned; runErr is its
	// result, written before the close.
	stopped chan struct{}
	runErr  error
	// metaDir is a sidecar metadata directory Start created (only when the
	// root's filesystem lacks user xattrs); Close removes it.
	metaDir string
	// origWD is the working directory before posix.New changed it; Close
	// restores it so the rest of the process is not left inside RootDir.
	origWD string

	closeOnce sync.Once
	closeErr  error
}

// Start starts the gateway on a free loopback port and returns once it
// answers HTTP requests, or fails with an error saying why. ctx bounds the
// start-up only; the gateway runs until Close.
//
// Only one gateway may run per process (see the package documentation). A
// second Start while one runs fails with embedgw's "only one instance" error,
// but only after the posix backend has moved the working directory to its
// root and Start has moved it back; do not call it while requests are in
// flight.
func Start(ctx context.Context, opts Options) (*Gateway, error) {
	if opts.RootDir == "" || !filepath.IsAbs(opts.RootDir) {
		return nil, fmt.Errorf("s3gateway: RootDir must be an absolute path, got %q (the posix backend changes the working directory)", opts.RootDir)
	}
	if opts.NATSURL != "" && opts.Subject == "" {
		return nil, errors.New("s3gateway: Subject is required when NATSURL is set")
	}
	if opts.AccessKey == "" {
		opts.AccessKey = DefaultAccessKey
	}
	if opts.SecretKey == "" {
		opts.SecretKey = DefaultSecretKey
	}
	if opts.Region == "" {
		opts.Region = DefaultRegion
	}
	root := filepath.Clean(opts.RootDir)
	if err := os.MkdirAll(root, 0o755); err != nil {
		return nil, fmt.Errorf("s3gateway: create root dir: %w", err)
	}

	// The posix backend keeps object metadata (ETag, content type, ...) in
	// user xattrs. Some test machines mount /tmp as a filesystem without
	// them; fall back to a sidecar directory, which must lie outside root.
	var metaDir string
	if err := (meta.XattrMeta{}).Test(root); err != nil {
		dir, mkErr := os.MkdirTemp("", "s3gateway-meta-")
		if mkErr != nil {
			return nil, fmt.Errorf("s3gateway: %s has no xattrs (%w) and creating a sidecar metadata dir failed: %w", root, err, mkErr)
		}
		if metaDir, err = filepath.Abs(dir); err != nil {
			_ = os.RemoveAll(dir)
			return nil, fmt.Errorf("s3gateway: sidecar metadata dir: %w", err)
		}
	}

	origWD, err := os.Getwd()
	if err != nil {
		return nil, fmt.Errorf("s3gateway: get working directory: %w", err)
	}

	var lastErr error
	for range startAttempts {
		g, err := startOnce(ctx, opts, root, metaDir)
		if err == nil {
			g.origWD = origWD
			return g, nil
		}
		lastErr = err
		if !errors.Is(err, syscall.EADDRINUSE) {
			break
		}
	}
	// A failed start may already have moved the working directory.
	_ = os.Chdir(origWD)
	if metaDir != "" {
		_ = os.RemoveAll(metaDir)
	}
	return nil, lastErr
}

// startOnce builds a backend and runs the gateway on one freshly picked port.
// The backend is built per attempt because RunVersityGW shuts it down when it
// returns.
func startOnce(ctx context.Context, opts Options, root, metaDir string) (*Gateway, error) {
	port, err := freePort()
	if err != nil {
		return nil, err
	}

	var (
		ms    meta.MetadataStorer = meta.XattrMeta{}
		pOpts                     = posix.PosixOpts{CopyObjectThreshold: copyObjectThreshold}
	)
	if metaDir != "" {
		sc, err := meta.NewSideCar(metaDir)
		if err != nil {
			return nil, fmt.Errorf("s3gateway: sidecar metadata: %w", err)
		}
		ms, pOpts.SideCarDir = sc, metaDir
	}
	be, err := posix.New(root, ms, pOpts)
	if err != nil {
		return nil, fmt.Errorf("s3gateway: posix backend: %w", err)
	}

	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	cfg := &embedgw.Config{
		RootUserAccess:    opts.AccessKey,
		RootUserSecret:    opts.SecretKey,
		Region:            opts.Region,
		Ports:             []string{addr},
		MaxConnections:    maxConnections,
		MaxRequests:       maxRequests,
		MultipartMaxParts: multipartMaxParts,
		HealthPath:        healthPath,
		// Keep connections open between requests, as S3 and MinIO do.
		// versitygw's default (off) answers every request with
		// "Connection: close", which hides from tests how many
		// connections a client opens. Nothing reactor relies on needed
		// it: Close still ends in bounded time (fasthttp's shutdown
		// closes idle keep-alive connections and waits at most
		// versitygw's shutdown limit for busy ones), request bodies a
		// handler leaves unread are drained by versitygw's middleware
		// before the connection is reused, and idle connections count
		// against maxConnections, which is far above what a test's
		// client pools keep idle.
		KeepAlive: true,
		// No banner, no per-request log lines in test output.
		Quiet:     true,
		NatsURL:   opts.NATSURL,
		NatsTopic: opts.Subject,
	}

	// The gateway outlives ctx, which bounds start-up only; Close cancels it.
	runCtx, cancel := context.WithCancel(context.Background())
	g := &Gateway{
		endpoint: "http://" + addr,
		access:   opts.AccessKey,
		secret:   opts.SecretKey,
		region:   opts.Region,
		cancel:   cancel,
		stopped:  make(chan struct{}),
		metaDir:  metaDir,
	}
	go func() {
		g.runErr = embedgw.RunVersityGW(runCtx, be, cfg)
		close(g.stopped)
	}()

	if err := g.waitReady(ctx); err != nil {
		cancel()
		// If it is still running, wait for it to let go of the backend and
		// embedgw's "running" flag before a retry or a later Start.
		select {
		case <-g.stopped:
		case <-time.After(shutdownTimeout):
		}
		return nil, err
	}
	g.client = s3.New(s3.Options{
		BaseEndpoint: aws.String(g.endpoint),
		Region:       g.region,
		Credentials:  credentials.NewStaticCredentialsProvider(g.access, g.secret, ""),
		// A custom endpoint on loopback has no per-bucket DNS names.
		UsePathStyle: true,
	})
	return g, nil
}

// freePort asks the kernel for a free loopback port. embedgw offers no way
// to learn the address of a ":0" listener, so the port is picked here and
// released for versitygw to bind; Start retries if someone else took it.
func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("s3gateway: pick a free port: %w", err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	if err := ln.Close(); err != nil {
		return 0, fmt.Errorf("s3gateway: release picked port: %w", err)
	}
	return port, nil
}

// waitReady polls the health endpoint until it answers 200, the gateway
// exits (a configuration or bind error), ctx ends, or readyTimeout passes.
func (g *Gateway) waitReady(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, readyTimeout)
	defer cancel()

	hc := &http.Client{Timeout: time.Second}
	url := g.endpoint + healthPath
	var lastErr error
	ticker := time.NewTicker(pollInterval)
	defer ticker.Stop()
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return fmt.Errorf("s3gateway: build readiness request: %w", err)
		}
		resp, err := hc.Do(req)
		if err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			lastErr = fmt.Errorf("GET %s: status %s", url, resp.Status)
		} else {
			lastErr = err
		}

		select {
		case <-g.stopped:
			err := g.runErr
			if err == nil {
				err = errors.New("exited without an error")
			}
			return fmt.Errorf("s3gateway: versitygw stopped before answering on %s: %w", g.endpoint, err)
		case <-ctx.Done():
			return fmt.Errorf("s3gateway: versitygw not answering on %s (last attempt: %w): %w", g.endpoint, lastErr, ctx.Err())
		case <-ticker.C:
		}
	}
}

// Endpoint is the gateway's base URL, "http://127.0.0.1:PORT".
func (g *Gateway) Endpoint() string { return g.endpoint }

// Credentials are the root account's keys and the region clients must sign
// for.
func (g *Gateway) Credentials() (access, secret, region string) {
	return g.access, g.secret, g.region
}

// Client is an S3 client (path-style, root credentials) pointed at the
// gateway. It is shared and safe for concurrent use.
func (g *Gateway) Client() *s3.Client { return g.client }

// CreateBucket creates a bucket. Bucket names follow the strict AWS rules.
func (g *Gateway) CreateBucket(ctx context.Context, name string) error {
	in := &s3.CreateBucketInput{Bucket: aws.String(name)}
	// us-east-1 is the one region S3 wants no location constraint for.
	if g.region != "us-east-1" {
		in.CreateBucketConfiguration = &s3types.CreateBucketConfiguration{
			LocationConstraint: s3types.BucketLocationConstraint(g.region),
		}
	}
	if _, err := g.client.CreateBucket(ctx, in); err != nil {
		return fmt.Errorf("s3gateway: create bucket %q: %w", name, err)
	}
	return nil
}

// IcebergProperties are iceberg-go FileIO properties for s3:// locations on
// this gateway (use with io.LoadFS after blank-importing
// github.com/apache/iceberg-go/io/gocloud/s3). No path-style property is
// needed: iceberg-go uses path-style whenever s3.endpoint is set. A new map
// is returned on every call; callers may add to it.
func (g *Gateway) IcebergProperties() map[string]string {
	return map[string]string{
		"s3.endpoint":          g.endpoint,
		"s3.region":            g.region,
		"s3.access-key-id":     g.access,
		"s3.secret-access-key": g.secret,
	}
}

// Close stops the gateway, waits for it to finish (bounded) and restores the
// working directory Start found. Buckets under RootDir are left in place.
// Calling Close more than once returns the first result.
func (g *Gateway) Close() error {
	g.closeOnce.Do(func() {
		g.cancel()
		var errs []error
		select {
		case <-g.stopped:
			if g.runErr != nil {
				errs = append(errs, fmt.Errorf("s3gateway: versitygw: %w", g.runErr))
			}
		case <-time.After(shutdownTimeout):
			errs = append(errs, fmt.Errorf("s3gateway: versitygw did not stop within %s", shutdownTimeout))
		}
		if g.origWD != "" {
			if err := os.Chdir(g.origWD); err != nil {
				errs = append(errs, fmt.Errorf("s3gateway: restore working directory: %w", err))
			}
		}
		if g.metaDir != "" {
			if err := os.RemoveAll(g.metaDir); err != nil {
				errs = append(errs, fmt.Errorf("s3gateway: remove sidecar metadata: %w", err))
			}
		}
		g.closeErr = errors.Join(errs...)
	})
	return g.closeErr
}
