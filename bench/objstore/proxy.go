package main

import (
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// latencyProxy is a TCP proxy that delays every byte by half a round trip
// in each direction, so a request/response exchange costs one round trip
// (plus one more per new connection's handshake). Delays are pipelined: a
// chunk is forwarded delay after it arrived, so bandwidth is not limited,
// only latency added, as on a long link.
type latencyProxy struct {
	ln     net.Listener
	target string
	half   time.Duration
	conns  atomic.Int64
	wg     sync.WaitGroup
	mu     sync.Mutex
	open   map[net.Conn]struct{}
}

func startProxy(target string, rtt time.Duration) (*latencyProxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &latencyProxy{ln: ln, target: target, half: rtt / 2, open: map[net.Conn]struct{}{}}
	p.wg.Add(1)
	go p.serve()
	return p, nil
}

func (p *latencyProxy) addr() string { return p.ln.Addr().String() }

func (p *latencyProxy) serve() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.conns.Add(1)
		p.wg.Add(1)
		go p.handle(c)
	}
}

func (p *latencyProxy) track(c net.Conn, add bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if add {
		p.open[c] = struct{}{}
	} else {
		delete(p.open, c)
	}
}

func (p *latencyProxy) handle(client net.Conn) {
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
func (p *latencyProxy) pipe(dst, src net.Conn) {
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

// close stops accepting and cuts every open connection.
func (p *latencyProxy) close() {
	_ = p.ln.Close()
	p.mu.Lock()
	for c := range p.open {
		_ = c.Close()
	}
	p.mu.Unlock()
	p.wg.Wait()
}
