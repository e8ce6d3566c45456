package embeddedtest

import (
	"fmt"
	"net"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
)

// Cluster is a NATS cluster of in-process servers with JetStream, routed
// to each other on loopback ports; a node can be stopped (its clients cut
// off, as when its process dies) and started again on its store.
type Cluster struct {
	t     testing.TB
	dir   string
	name  string
	ports []int // client ports
	route []int // cluster ports
	mu    sync.Mutex
	nodes []*server.Server // nil while stopped
}

// StartCluster starts n nodes and waits until JetStream has a meta leader.
// Every node is shut down when the test ends.
func StartCluster(t testing.TB, n int) *Cluster {
	t.Helper()
	c := &Cluster{t: t, dir: t.TempDir(), name: "reactor-test", nodes: make([]*server.Server, n)}
	for range n {
		c.ports = append(c.ports, freePort(t))
		c.route = append(c.route, freePort(t))
	}
	t.Cleanup(func() {
		for i := range c.nodes {
			c.Stop(i)
		}
	})
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = c.start(i)
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	c.WaitMetaLeader()
	return c
}

func freePort(t testing.TB) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// NodeName is node i's server name.
func (c *Cluster) NodeName(i int) string { return fmt.Sprintf("n%d", i+1) }

func (c *Cluster) start(i int) error {
	var routes []string
	for j, p := range c.route {
		if j != i {
			routes = append(routes, fmt.Sprintf("nats-route://127.0.0.1:%d", p))
		}
	}
	opts := &server.Options{
		ServerName:         c.NodeName(i),
		Host:               "127.0.0.1",
		Port:               c.ports[i],
		JetStream:          true,
		StoreDir:           filepath.Join(c.dir, c.NodeName(i)),
		JetStreamMaxMemory: 64 << 20,
		JetStreamMaxStore:  1 << 30,
		NoSigs:             true,
		NoLog:              true,
		Cluster:            server.ClusterOpts{Name: c.name, Host: "127.0.0.1", Port: c.route[i]},
		Routes:             server.RoutesFromStr(strings.Join(routes, ",")),
	}
	srv, err := server.NewServer(opts)
	if err != nil {
		return fmt.Errorf("cluster node %s: %w", c.NodeName(i), err)
	}
	go srv.Start()
	if !srv.ReadyForConnections(30 * time.Second) {
		srv.Shutdown()
		return fmt.Errorf("cluster node %s not ready after 30s", c.NodeName(i))
	}
	c.mu.Lock()
	c.nodes[i] = srv
	c.mu.Unlock()
	return nil
}

// URLs lists every node's client URL, comma-separated (a client given it
// fails over between them).
func (c *Cluster) URLs() string {
	var out []string
	for _, p := range c.ports {
		out = append(out, fmt.Sprintf("nats://127.0.0.1:%d", p))
	}
	return strings.Join(out, ",")
}

// URL is node i's client URL.
func (c *Cluster) URL(i int) string { return fmt.Sprintf("nats://127.0.0.1:%d", c.ports[i]) }

// Stop shuts node i down (its clients' connections drop).
func (c *Cluster) Stop(i int) {
	c.mu.Lock()
	srv := c.nodes[i]
	c.nodes[i] = nil
	c.mu.Unlock()
	if srv != nil {
		srv.Shutdown()
		srv.WaitForShutdown()
	}
}

// Restart starts a stopped node i again on its store.
func (c *Cluster) Restart(i int) {
	c.t.Helper()
	if err := c.start(i); err != nil {
		c.t.Fatal(err)
	}
}

// Node returns node i's index by server name (-1 if none).
func (c *Cluster) Node(name string) int {
	for i := range c.nodes {
		if c.NodeName(i) == name {
			return i
		}
	}
	return -1
}

// WaitMetaLeader waits until JetStream has a meta leader that counts
// every node as a peer (before, a stream of three replicas cannot be
// placed).
func (c *Cluster) WaitMetaLeader() {
	c.t.Helper()
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		c.mu.Lock()
		for _, srv := range c.nodes {
			if srv != nil && srv.JetStreamIsClustered() && srv.JetStreamIsLeader() && len(srv.JetStreamClusterPeers()) == len(c.nodes) {
				c.mu.Unlock()
				return
			}
		}
		c.mu.Unlock()
		time.Sleep(50 * time.Millisecond)
	}
	c.t.Fatal("no JetStream meta leader within a minute")
}
