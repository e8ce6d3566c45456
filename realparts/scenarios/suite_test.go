package scenarios

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
	"strings"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	// The REST catalog and the s3:// file IO, as reactor registers them.
	_ "github.com/apache/iceberg-go/catalog/rest"
	_ "github.com/apache/iceberg-go/io/gocloud/s3"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// The suite's own credentials for its MinIO (the root account). Loopback
// only, for the length of one run.
const (
	suiteAccessKey = "realparts"
	suiteSecretKey = "realparts-secret-key"
)

// readyTimeout bounds how long a server may take to answer after start: a
// hang guard, far above the few seconds each takes on a loaded machine.
const readyTimeout = 2 * time.Minute

// suite is the shared servers and clients to them.
type suite struct {
	work     string
	settings settings
	procs    *processes

	nats, minio, rest *process

	natsAddr   string // 127.0.0.1:PORT
	s3Endpoint string // http://127.0.0.1:PORT
	catalogURI string // http://127.0.0.1:PORT
	vars       map[string]string

	s3   *s3.Client
	conn *nats.Conn
	js   jetstream.JetStream
	// catalogProps open the REST catalog from the test side, with the
	// same properties reactor gets plus explicit credentials.
	catalogProps iceberg.Properties
	reactorBin   string
	javaBin      string
	jar          string
	natsBin      string
	captureDir   string
}

func startSuite(ctx context.Context, work string, procs *processes) (_ *suite, err error) {
	s := &suite{work: work, procs: procs, reactorBin: os.Getenv(envReactor), jar: os.Getenv(envCatalogJar),
		natsBin: os.Getenv(envNATSServer), javaBin: os.Getenv(envJava), captureDir: os.Getenv(envCapture)}
	if s.javaBin == "" {
		s.javaBin = "java"
	}
	defer func() {
		if err != nil {
			s.close()
			procs.stopAll()
		}
	}()
	if s.settings, err = loadSettings(); err != nil {
		return nil, err
	}
	for _, dir := range []string{"nats", "minio/data", "minio/queue", "rest"} {
		if err := os.MkdirAll(filepath.Join(work, dir), 0o755); err != nil {
			return nil, err
		}
	}

	if err := s.startNATS(ctx); err != nil {
		return nil, err
	}
	if err := s.startMinIO(ctx); err != nil {
		return nil, err
	}
	if err := s.startREST(ctx); err != nil {
		return nil, err
	}
	if err := s.configureBucket(ctx); err != nil {
		return nil, err
	}
	props, err := parseProps(s.vars, s.settings.Reactor.Env["REACTOR_CATALOG_PROP"])
	if err != nil {
		return nil, err
	}
	props["type"] = s.settings.Reactor.Env["REACTOR_CATALOG_TYPE"]
	props["uri"] = s.catalogURI
	props["warehouse"] = s.settings.Reactor.Env["REACTOR_WAREHOUSE"]
	props["s3.access-key-id"] = suiteAccessKey
	props["s3.secret-access-key"] = suiteSecretKey
	s.catalogProps = props
	return s, nil
}

func (s *suite) close() {
	if s.conn != nil {
		s.conn.Close()
	}
}

// baseEnv is what every child inherits from the suite's environment: enough
// to find programs and a home directory, nothing that configures MinIO, the
// catalog, AWS or reactor behind the settings' back.
func baseEnv() []string {
	var env []string
	for _, k := range []string{"PATH", "HOME", "TMPDIR", "LANG", "JAVA_HOME", "USER"} {
		if v, ok := os.LookupEnv(k); ok {
			env = append(env, k+"="+v)
		}
	}
	return env
}

// freePort asks the kernel for a free loopback port and releases it for a
// server to bind. Another process may take it in between; the starts
// retry with a new port when a server exits before answering.
func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("pick a free port: %w", err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	return port, ln.Close()
}

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

var errExitedEarly = errors.New("exited before it was ready")

func (s *suite) startNATS(ctx context.Context) error {
	return startWithRetry("nats-server", func() error {
		port, err := freePort()
		if err != nil {
			return err
		}
		addr := "127.0.0.1:" + strconv.Itoa(port)
		p, err := s.procs.start("nats-server", []string{s.natsBin, "-a", "127.0.0.1", "-p", strconv.Itoa(port),
			"-js", "-sd", filepath.Join(s.work, "nats")}, baseEnv(), filepath.Join(s.work, "nats.log"))
		if err != nil {
			return err
		}
		deadline := time.Now().Add(readyTimeout)
		for {
			conn, err := nats.Connect("nats://"+addr, nats.MaxReconnects(-1), nats.ReconnectWait(100*time.Millisecond))
			if err == nil {
				js, jerr := jetstream.New(conn)
				if jerr == nil {
					if _, jerr = js.AccountInfo(ctx); jerr == nil {
						s.nats, s.natsAddr, s.conn, s.js = p, addr, conn, js
						return nil
					}
				}
				conn.Close()
				err = jerr
			}
			if p.exited() {
				return fmt.Errorf("%w: %v\n%s", errExitedEarly, err, p.tail(20))
			}
			if time.Now().After(deadline) {
				p.kill()
				return fmt.Errorf("not ready on %s after %s: %w\n%s", addr, readyTimeout, err, p.tail(20))
			}
			time.Sleep(100 * time.Millisecond)
		}
	})
}

func (s *suite) startMinIO(ctx context.Context) error {
	return startWithRetry("minio", func() error {
		port, err := freePort()
		if err != nil {
			return err
		}
		console, err := freePort()
		if err != nil {
			return err
		}
		s.s3Endpoint = "http://127.0.0.1:" + strconv.Itoa(port)
		s.vars = map[string]string{
			"access_key":   suiteAccessKey,
			"secret_key":   suiteSecretKey,
			"nats_address": s.natsAddr,
			"queue_dir":    filepath.Join(s.work, "minio", "queue"),
			"s3_endpoint":  s.s3Endpoint,
		}
		env, err := render(s.settings.MinIO.Env, s.vars)
		if err != nil {
			return fmt.Errorf("minio.env: %w", err)
		}
		argv := []string{os.Getenv(envMinIO), "server", "--address", "127.0.0.1:" + strconv.Itoa(port),
			"--console-address", "127.0.0.1:" + strconv.Itoa(console), filepath.Join(s.work, "minio", "data")}
		p, err := s.procs.start("minio", argv, append(baseEnv(), env...), filepath.Join(s.work, "minio.log"))
		if err != nil {
			return err
		}
		if err := waitHTTP(ctx, p, s.s3Endpoint+"/minio/health/ready"); err != nil {
			return err
		}
		s.minio = p
		s.s3 = s3.New(s3.Options{
			Region:       s.settings.REST.Env["AWS_REGION"],
			BaseEndpoint: aws.String(s.s3Endpoint),
			UsePathStyle: true,
			Credentials:  credentials.NewStaticCredentialsProvider(suiteAccessKey, suiteSecretKey, ""),
		})
		return s.checkARN(p)
	})
}

// checkARN makes sure MinIO announced the notification target under the
// ARN the settings use: the spelling is MinIO's, case included.
func (s *suite) checkARN(p *process) error {
	want := "SQS ARNs: " + s.settings.MinIO.Notification.ARN
	deadline := time.Now().Add(10 * time.Second)
	for {
		data, err := os.ReadFile(p.logPath)
		if err != nil {
			return err
		}
		if strings.Contains(string(data), want) {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("minio never printed %q\n%s", want, p.tail(30))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func (s *suite) startREST(ctx context.Context) error {
	return startWithRetry("rest catalog", func() error {
		port, err := freePort()
		if err != nil {
			return err
		}
		s.catalogURI = "http://127.0.0.1:" + strconv.Itoa(port)
		s.vars["catalog_file"] = filepath.Join(s.work, "rest", "catalog.db")
		s.vars["catalog_uri"] = s.catalogURI
		env, err := render(s.settings.REST.Env, s.vars)
		if err != nil {
			return fmt.Errorf("rest.env: %w", err)
		}
		env = append(env, "CATALOG_REST_PORT="+strconv.Itoa(port))
		p, err := s.procs.start("rest-catalog", []string{s.javaBin, "-jar", s.jar}, append(baseEnv(), env...),
			filepath.Join(s.work, "rest-catalog.log"))
		if err != nil {
			return err
		}
		if err := waitHTTP(ctx, p, s.catalogURI+"/v1/config"); err != nil {
			return err
		}
		s.rest = p
		return nil
	})
}

// waitHTTP polls url until it answers 200, the process exits, or
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
			if resp.StatusCode == http.StatusOK {
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

// configureBucket creates the warehouse bucket and sets its notification
// rule through the S3 API, exactly as the settings give it.
func (s *suite) configureBucket(ctx context.Context) error {
	bucket := s.settings.MinIO.Bucket
	if _, err := s.s3.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(bucket)}); err != nil {
		return fmt.Errorf("create bucket %s: %w", bucket, err)
	}
	if err := s.putNotification(ctx, bucket, s.settings.MinIO.Notification.ARN); err != nil {
		return err
	}
	return nil
}

func (s *suite) putNotification(ctx context.Context, bucket, arn string) error {
	events := make([]s3types.Event, len(s.settings.MinIO.Notification.Events))
	for i, e := range s.settings.MinIO.Notification.Events {
		events[i] = s3types.Event(e)
	}
	_, err := s.s3.PutBucketNotificationConfiguration(ctx, &s3.PutBucketNotificationConfigurationInput{
		Bucket: aws.String(bucket),
		NotificationConfiguration: &s3types.NotificationConfiguration{
			QueueConfigurations: []s3types.QueueConfiguration{{QueueArn: aws.String(arn), Events: events}},
		},
	})
	if err != nil {
		return fmt.Errorf("set the notification rule of %s to %s: %w", bucket, arn, err)
	}
	return nil
}

// openCatalog opens the REST catalog from the test side.
func (s *suite) openCatalog(ctx context.Context) (catalog.Catalog, error) {
	return catalog.Load(ctx, "realparts", s.catalogProps)
}

// parseProps reads a REACTOR_CATALOG_PROP value (k=v,k=v) with its
// placeholders filled.
func parseProps(vars map[string]string, raw string) (iceberg.Properties, error) {
	rendered, err := render(map[string]string{"p": raw}, vars)
	if err != nil {
		return nil, err
	}
	props := iceberg.Properties{}
	for part := range strings.SplitSeq(strings.TrimPrefix(rendered[0], "p="), ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(part), "=")
		if !ok || k == "" {
			return nil, fmt.Errorf("REACTOR_CATALOG_PROP element %q is not key=value", part)
		}
		props[k] = v
	}
	return props, nil
}
