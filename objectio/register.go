package objectio

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"sync"
	"time"

	iceio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/io/gocloud/blobfs"
	// Their registrations are replaced below; they must initialise first.
	_ "github.com/apache/iceberg-go/io/gocloud/azure"
	_ "github.com/apache/iceberg-go/io/gocloud/gcs"
	icebergs3 "github.com/apache/iceberg-go/io/gocloud/s3"
	"github.com/apache/iceberg-go/utils"
	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"gocloud.dev/blob/s3blob"

	"github.com/icereactor/reactor/sizelimit"
)

// Properties (catalog properties, like iceberg-go's s3.*) tuning the IO.
const (
	// WholeObjectProperty: objects up to this many bytes are read with one
	// GET (a plain byte count).
	WholeObjectProperty = "reactor.s3.whole-object-bytes"
	// RangeProperty: the least a ranged read of a larger object fetches.
	RangeProperty = "reactor.s3.range-bytes"
	// ReadConcurrencyProperty: how many files a scan reads at once from
	// this object store (reactor's --read-concurrency sets it).
	ReadConcurrencyProperty = "reactor.read-concurrency"
	// MaxAttemptsProperty: attempts per request, the first included,
	// before a throttled (503 SlowDown) or failed request is an error.
	MaxAttemptsProperty = "reactor.s3.max-attempts"
	// ReadTimeoutProperty: the longest a request waits for the store to
	// send anything (its answer's first byte, or the next bytes of a body
	// being read) before the attempt fails (a Go duration or seconds; 0
	// turns it off).
	ReadTimeoutProperty = "reactor.s3.read-timeout"
)

const (
	// DefaultWholeObjectBytes holds every small file reactor compacts
	// and every manifest of a healthy table.
	DefaultWholeObjectBytes = 8 << 20
	// DefaultRangeBytes: at 30 ms a round trip costs what about 4 MiB
	// takes to arrive at 1 Gbit/s, so smaller ranges are latency-bound.
	DefaultRangeBytes = 4 << 20

	// idlePerHost bounds the idle connections kept per endpoint; it is
	// above MaxReadConcurrency so every concurrent reader finds one.
	idlePerHost = 512
	idleTimeout = 90 * time.Second
	// DefaultConnectTimeout bounds a TCP connection's set-up to the
	// store, when iceberg-go's s3.connect-timeout is not given (the SDK's
	// own default is 30 s).
	DefaultConnectTimeout = 10 * time.Second
	// DefaultReadTimeout: a store that sends nothing for this long fails
	// the attempt. It resets on every byte, so a slow transfer that
	// progresses never fails; a store that accepts connections and never
	// answers fails a request after MaxAttempts of it.
	DefaultReadTimeout = 30 * time.Second
	// DefaultMaxAttempts: the SDK's standard retryer (exponential
	// backoff with jitter, at most 20 s between attempts) retries
	// throttling and 5xx answers; 5 attempts ride out a throttling burst
	// of several seconds where the SDK's 3 would fail the job.
	DefaultMaxAttempts = 5
	// DefaultReadConcurrency: files read at once by a scan of an object
	// store. A read waits on the network, not a core, so it is not
	// GOMAXPROCS; each reader holds at most one decoded file, so memory
	// stays bounded by it.
	DefaultReadConcurrency = 16
	// MaxReadConcurrency is the most concurrent reads a reactor setting
	// may ask for.
	MaxReadConcurrency = 256
)

// schemes are the ones iceberg-go's S3 IO registers that reach S3 through
// the AWS SDK ("oss" is left to iceberg-go).
var schemes = []string{"s3", "s3a", "s3n"}

func init() {
	p := &provider{clients: map[transportKey]aws.HTTPClient{}}
	for _, s := range schemes {
		iceio.Unregister(s)
		iceio.Register(s, p.open)
	}
	for _, s := range gcsSchemes {
		iceio.Unregister(s)
		iceio.Register(s, p.openGCS)
	}
	for _, s := range azureSchemes {
		iceio.Unregister(s)
		iceio.Register(s, p.openAzure)
	}
}

// provider builds FileIOs. It is the one value registered with
// iceberg-go's registry; the transports it shares live here because
// iceberg-go builds a new FileIO for every scan and commit, and only a
// transport outliving them reuses connections.
type provider struct {
	mu      sync.Mutex
	clients map[transportKey]aws.HTTPClient
	// shared are the GCS and Azure clients' transports, one per timeout
	// setting.
	shared map[transportKey]*http.Transport
}

// sharedTransport is the transport of every GCS and Azure FileIO with the
// timeouts of props: the default transport's settings (proxy from the
// environment, HTTP/2, TLS timeouts) with an idle pool above any read
// concurrency, where the default keeps 2 idle connections per host (the
// GCS client's) or 10 (the Azure SDK's); a connection set up within
// s3.connect-timeout and a rolling read deadline of reactor.s3.read-timeout,
// as on S3, so a store that stops answering fails the request.
func (p *provider) sharedTransport(props map[string]string) (*http.Transport, error) {
	k, err := timeoutsOf(props)
	if err != nil {
		return nil, err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if t, ok := p.shared[k]; ok {
		return t, nil
	}
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxIdleConns = idlePerHost
	t.MaxIdleConnsPerHost = idlePerHost
	t.IdleConnTimeout = idleTimeout
	dialer := &net.Dialer{Timeout: k.connect, KeepAlive: 30 * time.Second}
	t.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := dialer.DialContext(ctx, network, addr)
		if err != nil || k.read <= 0 {
			return c, err
		}
		return &deadlineConn{Conn: c, read: k.read}, nil
	}
	if p.shared == nil {
		p.shared = map[transportKey]*http.Transport{}
	}
	p.shared[k] = t
	return t, nil
}

// deadlineConn gives every read a deadline of read from its start: a
// transfer that progresses never fails, a silent store does.
type deadlineConn struct {
	net.Conn
	read time.Duration
}

func (c *deadlineConn) Read(b []byte) (int, error) {
	if err := c.Conn.SetReadDeadline(time.Now().Add(c.read)); err != nil {
		return 0, err
	}
	return c.Conn.Read(b)
}

// timeoutsOf reads s3.connect-timeout and reactor.s3.read-timeout.
func timeoutsOf(props map[string]string) (transportKey, error) {
	k := transportKey{connect: DefaultConnectTimeout, read: DefaultReadTimeout}
	if v, ok := props[iceio.S3ConnectTimeout]; ok {
		d, err := parseTimeout(iceio.S3ConnectTimeout, v, false)
		if err != nil {
			return k, err
		}
		k.connect = d
	}
	if v, ok := props[ReadTimeoutProperty]; ok {
		d, err := parseTimeout(ReadTimeoutProperty, v, true)
		if err != nil {
			return k, err
		}
		k.read = d
	}
	return k, nil
}

type transportKey struct {
	proxy   string
	connect time.Duration
	read    time.Duration
}

func (p *provider) httpClient(props map[string]string) (aws.HTTPClient, error) {
	var k transportKey
	if v, ok := props[iceio.S3ProxyURI]; ok {
		if _, err := url.Parse(v); err != nil {
			return nil, fmt.Errorf("invalid s3 proxy url %q: %w", v, err)
		}
		k.proxy = v
	}
	t, err := timeoutsOf(props)
	if err != nil {
		return nil, err
	}
	k.connect, k.read = t.connect, t.read
	p.mu.Lock()
	defer p.mu.Unlock()
	if c, ok := p.clients[k]; ok {
		return c, nil
	}
	c := awshttp.NewBuildableClient().WithTransportOptions(func(t *http.Transport) {
		t.MaxIdleConns = idlePerHost
		t.MaxIdleConnsPerHost = idlePerHost
		t.IdleConnTimeout = idleTimeout
		if k.proxy != "" {
			u, _ := url.Parse(k.proxy)
			t.Proxy = http.ProxyURL(u)
		}
	})
	c = c.WithDialerOptions(func(d *net.Dialer) { d.Timeout = k.connect })
	if k.read > 0 {
		// The SDK's rolling deadline on every read of the connection:
		// a hung store fails the attempt, the retryer tries again, and
		// after the last attempt the job fails and frees its slot.
		c = c.WithReadTimeout(k.read)
	}
	// Frozen: the SDK copies a buildable client for every S3 client it
	// builds (to apply its defaults mode), and a copy has a transport,
	// and so a connection pool, of its own.
	f := c.Freeze()
	p.clients[k] = f
	return f, nil
}

// parseTimeout reads a timeout property: a Go duration or seconds; 0 is
// allowed (off) where zeroOff.
func parseTimeout(name, v string, zeroOff bool) (time.Duration, error) {
	d, err := time.ParseDuration(v)
	if err != nil {
		s, ferr := strconv.ParseFloat(v, 64)
		if ferr != nil {
			return 0, fmt.Errorf("invalid %s %q: seconds or a Go duration", name, v)
		}
		d = time.Duration(s * float64(time.Second))
	}
	if d < 0 || d == 0 && !zeroOff {
		return 0, errors.New(name + " must be a positive duration")
	}
	return d, nil
}

func sizeProp(props map[string]string, key string, def int64) (int64, error) {
	v, ok := props[key]
	if !ok || v == "" {
		return def, nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < 1 {
		return 0, fmt.Errorf("objectio: %s must be a positive integer, got %q", key, v)
	}
	return n, nil
}

// shape is how a FileIO reads: the catalog properties of this package.
type shape struct {
	whole, rng        int64
	readers, attempts int
	// limits refuse a table file too large to read (package sizelimit).
	limits sizelimit.Limits
}

func shapeOf(props map[string]string) (shape, error) {
	whole, err := sizeProp(props, WholeObjectProperty, DefaultWholeObjectBytes)
	if err != nil {
		return shape{}, err
	}
	rng, err := sizeProp(props, RangeProperty, DefaultRangeBytes)
	if err != nil {
		return shape{}, err
	}
	readers, err := sizeProp(props, ReadConcurrencyProperty, DefaultReadConcurrency)
	if err != nil {
		return shape{}, err
	}
	attempts, err := sizeProp(props, MaxAttemptsProperty, DefaultMaxAttempts)
	if err != nil {
		return shape{}, err
	}
	if readers > MaxReadConcurrency {
		return shape{}, fmt.Errorf("objectio: %s is at most %d, got %d", ReadConcurrencyProperty, MaxReadConcurrency, readers)
	}
	limits, err := sizelimit.FromProperties(props)
	if err != nil {
		return shape{}, err
	}
	return shape{whole: whole, rng: rng, readers: int(readers), attempts: int(attempts), limits: limits}, nil
}

// open is the FileIO factory for s3:// locations: iceberg-go's
// configuration (credentials, region, endpoint, path style), this
// package's transport and Open.
func (p *provider) open(ctx context.Context, parsed *url.URL, props map[string]string) (iceio.IO, error) {
	if v, err := strconv.ParseBool(props[iceio.S3CompatMode]); err == nil && v {
		return nil, fmt.Errorf("objectio: %s is not supported by reactor's S3 IO", iceio.S3CompatMode)
	}
	sh, err := shapeOf(props)
	if err != nil {
		return nil, err
	}
	var cfg aws.Config
	if base := utils.GetAwsConfig(ctx); base != nil {
		cfg = *base
	} else {
		base, err := icebergs3.ParseAWSConfig(ctx, props)
		if err != nil {
			return nil, err
		}
		cfg = *base
	}
	if r := props[iceio.S3Region]; r != "" {
		cfg.Region = r
	} else if r := props[iceio.S3ClientRegion]; r != "" {
		cfg.Region = r
	}
	if props[iceio.S3AccessKeyID] != "" && props[iceio.S3SecretAccessKey] != "" {
		cfg.Credentials = credentials.NewStaticCredentialsProvider(props[iceio.S3AccessKeyID],
			props[iceio.S3SecretAccessKey], props[iceio.S3SessionToken])
	}
	// The property, else AWS_MAX_ATTEMPTS or a shared config's
	// max_attempts, else the default.
	if _, set := props[MaxAttemptsProperty]; set || cfg.RetryMaxAttempts == 0 {
		cfg.RetryMaxAttempts = sh.attempts
	}
	if cfg.HTTPClient, err = p.httpClient(props); err != nil {
		return nil, err
	}
	endpoint, ok := props[iceio.S3EndpointURL]
	if !ok {
		endpoint = os.Getenv("AWS_S3_ENDPOINT")
	}
	pathStyle := endpoint != ""
	if v, err := strconv.ParseBool(props[iceio.S3ForceVirtualAddressing]); err == nil {
		pathStyle = !v
	}
	client := s3.NewFromConfig(cfg, func(o *s3.Options) {
		if endpoint != "" {
			o.BaseEndpoint = aws.String(endpoint)
		}
		o.UsePathStyle = pathStyle
		o.DisableLogOutputChecksumValidationSkipped = true
	})
	bucket, err := s3blob.OpenBucketV2(ctx, client, parsed.Host, nil)
	if err != nil {
		return nil, err
	}
	extract := blobfs.DefaultObjectLocationExtractor(parsed.Host, schemes...)
	return &FileIO{FileIO: blobfs.New(ctx, bucket, extract), ctx: ctx, client: client, bucket: parsed.Host,
		extract: extract, whole: sh.whole, rng: sh.rng, readers: sh.readers, attempts: cfg.RetryMaxAttempts,
		limits: sh.limits, expires: credentialsExpiry(props)}, nil
}
