package executor_test

import (
	"net/url"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/apache/iceberg-go/catalog"

	"github.com/icereactor/reactor/bench/latencyproxy"
	"github.com/icereactor/reactor/embedded"
	"github.com/icereactor/reactor/embedded/s3gateway"
)

// s3RTTEnv, set to a round trip ("10ms", "0s"), puts the commit-race
// benchmark's tables on an s3:// warehouse on the embedded S3 gateway
// behind bench/latencyproxy adding that round trip to every exchange, the
// writer's and reactor's alike; unset, they stay on local disk.
const s3RTTEnv = "REACTOR_BENCH_S3_RTT"

// benchStore is one gateway and proxy for a benchmark (one gateway per
// process: see s3gateway), or nil on local disk.
type benchStore struct {
	gw  *s3gateway.Gateway
	px  *latencyproxy.Proxy
	rtt time.Duration
}

func newBenchStore(b *testing.B) *benchStore {
	b.Helper()
	v := os.Getenv(s3RTTEnv)
	if v == "" {
		return nil
	}
	rtt, err := time.ParseDuration(v)
	if err != nil || rtt < 0 {
		b.Fatalf("%s=%q: want a round trip such as 10ms", s3RTTEnv, v)
	}
	gw, err := s3gateway.Start(b.Context(), s3gateway.Options{RootDir: filepath.Join(b.TempDir(), "s3")})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = gw.Close() })
	if err := gw.CreateBucket(b.Context(), "bench"); err != nil {
		b.Fatal(err)
	}
	u, err := url.Parse(gw.Endpoint())
	if err != nil {
		b.Fatal(err)
	}
	px, err := latencyproxy.Start(u.Host, rtt)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(px.Close)
	return &benchStore{gw: gw, px: px, rtt: rtt}
}

// fixture is newFixture, on the store's warehouse (a new prefix each)
// when there is a store.
func (s *benchStore) fixture(b *testing.B) *fixture {
	b.Helper()
	if s == nil {
		return newFixture(b, nil)
	}
	dir := b.TempDir()
	props, err := embedded.CatalogProperties(dir)
	if err != nil {
		b.Fatal(err)
	}
	for k, v := range s.gw.IcebergProperties() {
		props[k] = v
	}
	props["s3.endpoint"] = "http://" + s.px.Addr()
	props["warehouse"] = "s3://bench/" + filepath.Base(dir)
	cat, err := catalog.Load(b.Context(), embedded.CatalogName, props)
	if err != nil {
		b.Fatal(err)
	}
	return newFixtureOn(b, cat, nil)
}
