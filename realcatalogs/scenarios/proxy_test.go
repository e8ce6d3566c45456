package scenarios

import (
	"bytes"
	"io"
	"net"
	"sync"
	"testing"
)

// thriftProxy forwards connections to the Hive Metastore and can cut them
// all at once (a Metastore restart, a network fault, the death of the
// process on the other side), or hold the first call of a method: the
// client's message carrying the method's name is not forwarded, so the
// call never reaches the Metastore and the client waits for an answer.
type thriftProxy struct {
	ln     net.Listener
	target string

	mu    sync.Mutex
	conns []net.Conn
	hold  []byte        // the method name to hold (nil: none)
	held  chan struct{} // closed when a held call arrived
	wg    sync.WaitGroup
}

func startThriftProxy(t *testing.T, target string) *thriftProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &thriftProxy{ln: ln, target: target}
	p.wg.Add(1)
	go p.accept()
	t.Cleanup(func() {
		_ = ln.Close()
		p.cut()
		p.wg.Wait()
	})
	return p
}

func (p *thriftProxy) addr() string { return p.ln.Addr().String() }

// holdNext holds the next call of method; the channel closes when it
// arrives.
func (p *thriftProxy) holdNext(method string) <-chan struct{} {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.hold = []byte(method)
	p.held = make(chan struct{})
	return p.held
}

func (p *thriftProxy) accept() {
	defer p.wg.Done()
	for {
		in, err := p.ln.Accept()
		if err != nil {
			return
		}
		out, err := net.Dial("tcp", p.target)
		if err != nil {
			_ = in.Close()
			continue
		}
		p.mu.Lock()
		p.conns = append(p.conns, in, out)
		p.mu.Unlock()
		p.wg.Add(2)
		go p.forward(out, in)
		go func() {
			defer p.wg.Done()
			_, _ = io.Copy(in, out)
			_ = in.Close()
			_ = out.Close()
		}()
	}
}

// forward copies the client's bytes to the Metastore, except from a held
// method's message on: that connection then forwards nothing more.
func (p *thriftProxy) forward(dst, src net.Conn) {
	defer p.wg.Done()
	defer func() { _ = dst.Close(); _ = src.Close() }()
	buf := make([]byte, 64<<10)
	var tail []byte // the end of the previous read: a name may straddle two
	for {
		n, err := src.Read(buf)
		if n > 0 {
			p.mu.Lock()
			hold := p.hold
			if hold != nil && bytes.Contains(append(tail, buf[:n]...), hold) {
				p.hold = nil
				close(p.held)
				p.mu.Unlock()
				// Forward nothing more; wait for the cut.
				_, _ = io.Copy(io.Discard, src)
				return
			}
			p.mu.Unlock()
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
			tail = append(tail[:0], buf[max(0, n-64):n]...)
		}
		if err != nil {
			return
		}
	}
}

// cut closes every connection through the proxy.
func (p *thriftProxy) cut() {
	p.mu.Lock()
	conns := p.conns
	p.conns = nil
	p.mu.Unlock()
	for _, c := range conns {
		_ = c.Close()
	}
}
