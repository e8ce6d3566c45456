package main

import (
	"context"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"sync/atomic"
	"time"
)

// counts are what the counting front of the gateway saw.
type counts struct {
	requests, gets, rangedGets, heads, puts, lists, deletes, posts atomic.Int64
	bytesOut, bytesIn                                              atomic.Int64
	// trace, when set, gets one line per request when it ends: its start
	// and duration since the command began, the requests in flight when it
	// started, method, path and query (-trace: which round trips follow
	// one another).
	trace    func(start, took time.Duration, inFlight int64, method, target string)
	inFlight atomic.Int64
}

type snapshot struct {
	Requests, GETs, RangedGETs, HEADs, PUTs, LISTs, DELETEs, POSTs int64
	BytesDown, BytesUp                                             int64
}

func (c *counts) snap() snapshot {
	return snapshot{c.requests.Load(), c.gets.Load(), c.rangedGets.Load(), c.heads.Load(), c.puts.Load(), c.lists.Load(),
		c.deletes.Load(), c.posts.Load(), c.bytesOut.Load(), c.bytesIn.Load()}
}

func (s snapshot) minus(o snapshot) snapshot {
	return snapshot{s.Requests - o.Requests, s.GETs - o.GETs, s.RangedGETs - o.RangedGETs, s.HEADs - o.HEADs, s.PUTs - o.PUTs,
		s.LISTs - o.LISTs, s.DELETEs - o.DELETEs, s.POSTs - o.POSTs, s.BytesDown - o.BytesDown, s.BytesUp - o.BytesUp}
}

type countingWriter struct {
	http.ResponseWriter
	n *atomic.Int64
}

func (w countingWriter) Write(b []byte) (int, error) {
	n, err := w.ResponseWriter.Write(b)
	w.n.Add(int64(n))
	return n, err
}

func (w countingWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// origHost carries a request's Host header as the client sent it.
type origHost struct{}

// startCounter serves a reverse proxy to the gateway that counts every
// request by kind and the body bytes each way. The Host header the client
// signed is passed through unchanged, so signatures stay valid, unless
// setHost: then it names the gateway (fake-gcs-server tells its XML API
// from its JSON API by the Host).
func startCounter(gateway string, setHost bool, c *counts) (addr string, stop func(), err error) {
	u, err := url.Parse(gateway)
	if err != nil {
		return "", nil, err
	}
	rp := httputil.NewSingleHostReverseProxy(u)
	rp.Transport = &http.Transport{MaxIdleConns: 1024, MaxIdleConnsPerHost: 1024}
	// fake-gcs-server sends a resumable upload's next requests to its own
	// address (a Location header): they go back through the proxies the
	// client came through instead.
	rp.ModifyResponse = func(resp *http.Response) error {
		if loc := resp.Header.Get("Location"); loc != "" && resp.Request != nil {
			if lu, err := url.Parse(loc); err == nil && lu.Host == u.Host {
				lu.Host, _ = resp.Request.Context().Value(origHost{}).(string)
				resp.Header.Set("Location", lu.String())
			}
		}
		return nil
	}
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c.requests.Add(1)
		q := r.URL.Query()
		switch r.Method {
		case http.MethodGet:
			if q.Has("list-type") || q.Has("prefix") || q.Has("delimiter") || q.Get("comp") == "list" {
				c.lists.Add(1)
			} else if r.Header.Get("Range") != "" || r.Header.Get("X-Ms-Range") != "" {
				c.rangedGets.Add(1)
			} else {
				c.gets.Add(1)
			}
		case http.MethodHead:
			c.heads.Add(1)
		case http.MethodPut:
			c.puts.Add(1)
		case http.MethodDelete:
			c.deletes.Add(1)
		case http.MethodPost:
			c.posts.Add(1)
		}
		if r.ContentLength > 0 {
			c.bytesIn.Add(r.ContentLength)
		}
		r = r.WithContext(context.WithValue(r.Context(), origHost{}, r.Host))
		if setHost {
			r.Host = u.Host
		}
		n, t0 := c.inFlight.Add(1), time.Now()
		rp.ServeHTTP(countingWriter{w, &c.bytesOut}, r)
		c.inFlight.Add(-1)
		if c.trace != nil {
			c.trace(time.Duration(t0.UnixNano()), time.Since(t0), n, r.Method, r.URL.RequestURI())
		}
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	srv := &http.Server{Handler: h}
	go func() { _ = srv.Serve(ln) }()
	return ln.Addr().String(), func() { _ = srv.Close() }, nil
}
