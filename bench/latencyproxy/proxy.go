// Package latencyproxy is a TCP proxy for benchmarks that adds a round
// trip to every exchange through it and counts the connections opened:
// bench/objstore and the executor's commit-race benchmark put it before
// the embedded S3 gateway to stand for object storage over a network. It
// owns no protocol knowledge (bytes are forwarded unchanged) and must not
// limit bandwidth, drop or reorder anything.
package latencyproxy

import (
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// Proxy is a TCP proxy that delays every byte by half a round trip
// in each direction, so a request/response exchange costs one round trip
// (plus one more per new connection's handshake). Delays are pipelined: a
// chunk is forwarded delay after it arrived, so bandwidth is not limited,
// only latency added, as on a long link.
type Proxy struct {
	ln     net.Listener
	target string
	half   time.Duration
	// Conns counts the connections clients opened through it.
	Conns atomic.Int64
	wg    sync.WaitGroup
	mu    sync.Mutex
	open  map[net.Conn]struct{}
}

// Start listens on a free loopback port and forwards to target with rtt
// added to each round trip.
func Start(target string, rtt time.Duration) (*Proxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &Proxy{ln: ln, target: target, half: rtt / 2, open: map[net.Conn]struct{}{}}
	p.wg.Add(1)
	go p.serve()
	return p, nil
}

// Addr is the host:port to connect to.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

func (p *Proxy) serve() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.Conns.Add(1)
		p.wg.Add(1)
		go p.handle(c)
	}
}

func (p *Proxy) track(c net.Conn, add bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if add {
		p.open[c] = struct{}{}
	} else {
		delete(p.open, c)
	}
}

func (p *Proxy) handle(client net.Conn) {
	defer p.wg.Done()
	// The connection handshake crosses the link too.
	time.Sleep(2 * p.half)
	up, err := net.Dial("tcp", p.target)
	if err != nil {
		_ = client.Close()
		return
	}
	p.track(client, true)
	p.track(up, true)
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); p.pipe(up, client) }()
	go func() { defer wg.Done(); p.pipe(client, up) }()
	wg.Wait()
	_ = client.Close()
	_ = up.Close()
	p.track(client, false)
	p.track(up, false)
}

type chunk struct {
	b  []byte
	at time.Time
}

// pipe copies src to dst, each chunk delayed by p.half; at src's end it
// half-closes dst, on a write error it closes both.
func (p *Proxy) pipe(dst, src net.Conn) {
	ch := make(chan chunk, 4096)
	go func() {
		defer close(ch)
		for {
			buf := make([]byte, 64<<10)
			n, err := src.Read(buf)
			if n > 0 {
				ch <- chunk{buf[:n], time.Now().Add(p.half)}
			}
			if err != nil {
				return
			}
		}
	}()
	for c := range ch {
		if d := time.Until(c.at); d > 0 {
			time.Sleep(d)
		}
		if _, err := dst.Write(c.b); err != nil {
			_ = dst.Close()
			_ = src.Close()
			for range ch {
			}
			return
		}
	}
	if tc, ok := dst.(*net.TCPConn); ok {
		_ = tc.CloseWrite()
	}
}

// Close stops accepting and cuts every open connection.
func (p *Proxy) Close() {
	_ = p.ln.Close()
	p.mu.Lock()
	for c := range p.open {
		_ = c.Close()
	}
	p.mu.Unlock()
	p.wg.Wait()
}
