package worker

import (
	"io"
	"net"
	"net/url"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// stallProxy forwards TCP connections to an address until it is told to
// stall: from then on it accepts connections and moves no byte in either
// direction, on new and open connections alike, as a store that accepts
// connections and never answers does. A fake only in that it stands in
// front of the real store (the embedded S3 gateway) to make it hang.
type stallProxy struct {
	ln      net.Listener
	target  string
	stalled atomic.Bool
	mu      sync.Mutex
	resume  chan struct{} // closed when the stall ends
	conns   sync.WaitGroup
}

func newStallProxy(t *testing.T, target string) *stallProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &stallProxy{ln: ln, target: target, resume: make(chan struct{})}
	close(p.resume)
	go p.serve()
	t.Cleanup(func() {
		p.stall(false)
		ln.Close()
	})
	return p
}

// endpoint is the proxy as the http:// endpoint replacing target's.
func (p *stallProxy) endpoint(targetURL string) string {
	u, _ := url.Parse(targetURL)
	u.Host = p.ln.Addr().String()
	return u.String()
}

// stall starts (true) or ends (false) the stall.
func (p *stallProxy) stall(on bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if on == p.stalled.Load() {
		return
	}
	p.stalled.Store(on)
	if on {
		p.resume = make(chan struct{})
	} else {
		close(p.resume)
	}
}

// gate blocks while the proxy stalls.
func (p *stallProxy) gate() {
	p.mu.Lock()
	resume := p.resume
	p.mu.Unlock()
	<-resume
}

func (p *stallProxy) serve() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		go p.handle(c)
	}
}

func (p *stallProxy) handle(c net.Conn) {
	defer c.Close()
	p.gate()
	up, err := net.DialTimeout("tcp", p.target, 5*time.Second)
	if err != nil {
		return
	}
	defer up.Close()
	done := make(chan struct{}, 2)
	pipe := func(dst, src net.Conn) {
		buf := make([]byte, 32<<10)
		for {
			n, err := src.Read(buf)
			if n > 0 {
				p.gate()
				if _, werr := dst.Write(buf[:n]); werr != nil {
					break
				}
			}
			if err != nil {
				if err != io.EOF {
					break
				}
				if tc, ok := dst.(*net.TCPConn); ok {
					_ = tc.CloseWrite()
				}
				break
			}
		}
		done <- struct{}{}
	}
	go pipe(up, c)
	go pipe(c, up)
	<-done
}
