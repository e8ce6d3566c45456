package status

import (
	"bytes"
	"context"
	"net/http"
	"slices"
	"time"

	"github.com/icereactor/reactor/tablename"
)

// Options configure the pages; the zero value is fine.
type Options struct {
	// Refresh is how often the pages reload themselves (default 5s; the
	// table page, which reads the table, every 3 periods).
	Refresh time.Duration
	// InspectTimeout bounds the table page's read of the table (default
	// 30s).
	InspectTimeout time.Duration
	// Now is the clock; tests leave it nil.
	Now func() time.Time
}

// Handler serves the status pages from src: / (the tables), /tables/<name>
// (one table) and /jobs. It answers GET and HEAD only (405 otherwise) and
// everything else it does not know with 404.
func Handler(src Source, o Options) http.Handler {
	if o.Refresh <= 0 {
		o.Refresh = 5 * time.Second
	}
	if o.InspectTimeout <= 0 {
		o.InspectTimeout = 30 * time.Second
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	h := &handler{src: src, o: o, pages: parsePages()}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", h.overview)
	mux.HandleFunc("GET /jobs", h.jobs)
	mux.HandleFunc("GET /tables/{name...}", h.table)
	mux.HandleFunc("GET /", h.notFound)
	return readOnly(mux)
}

type handler struct {
	src   Source
	o     Options
	pages pages
}

// readOnly refuses every method but GET and HEAD: the pages change
// nothing, and no form or script on them sends anything.
func readOnly(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, "method not allowed: the status pages are read-only", http.StatusMethodNotAllowed)
			return
		}
		if r.Method == http.MethodHead {
			w = headWriter{w}
		}
		next.ServeHTTP(w, r)
	})
}

// headWriter answers HEAD with GET's headers and no body (net/http's
// server drops it too; this holds for any other server or test recorder).
type headWriter struct{ http.ResponseWriter }

func (headWriter) Write(p []byte) (int, error) { return len(p), nil }

func (h *handler) overview(w http.ResponseWriter, r *http.Request) {
	now := h.o.Now()
	h.render(w, http.StatusOK, h.pages.overview, h.frame("tables", h.o.Refresh, now, buildOverview(h.src, now)))
}

func (h *handler) jobs(w http.ResponseWriter, r *http.Request) {
	now := h.o.Now()
	h.render(w, http.StatusOK, h.pages.jobs, h.frame("jobs", h.o.Refresh, now, buildJobs(h.src, now)))
}

func (h *handler) table(w http.ResponseWriter, r *http.Request) {
	now := h.o.Now()
	name := r.PathValue("name")
	if _, err := tablename.Parse(name); err != nil {
		h.fail(w, http.StatusBadRequest, now, "not a table name", err.Error())
		return
	}
	if _, found := slices.BinarySearch(h.src.Tables(), name); !found {
		msg := "this replica holds no state for " + name + ": reactor has not read it (not in a watched namespace, no commit seen yet) or another replica owns it"
		if owner := h.src.Owners()(name); owner != "" {
			msg += "; its lease is held by " + owner
		}
		h.fail(w, http.StatusNotFound, now, "unknown table", msg)
		return
	}
	var (
		in  Inspection
		err error
	)
	// HEAD gets the headers only: the table is not read for them.
	if r.Method != http.MethodHead {
		ctx, cancel := context.WithTimeout(r.Context(), h.o.InspectTimeout)
		defer cancel()
		in, err = h.src.Inspect(ctx, name)
	}
	h.render(w, http.StatusOK, h.pages.table, h.frame("", 3*h.o.Refresh, now, buildTable(h.src, name, in, err, now)))
}

func (h *handler) notFound(w http.ResponseWriter, r *http.Request) {
	h.fail(w, http.StatusNotFound, h.o.Now(), "not found", "no status page at "+r.URL.Path)
}

func (h *handler) fail(w http.ResponseWriter, code int, now time.Time, title, msg string) {
	h.render(w, code, h.pages.fail, h.frame("", 0, now, failure{Title: title, Message: msg}))
}

// frame wraps a page's content in what every page shows.
func (h *handler) frame(nav string, refresh time.Duration, now time.Time, content any) frame {
	return frame{Nav: nav, Refresh: int(refresh / time.Second), Replica: h.src.Replica(), Now: now.UTC().Format(time.RFC3339), Content: content}
}

// render executes the page into memory first: a template that fails
// sends a plain 500, never half a page.
func (h *handler) render(w http.ResponseWriter, code int, p page, data frame) {
	var buf bytes.Buffer
	if err := p.Execute(&buf, data); err != nil {
		http.Error(w, "the status page could not be rendered", http.StatusInternalServerError)
		return
	}
	hd := w.Header()
	hd.Set("Content-Type", "text/html; charset=utf-8")
	// Nothing on the pages runs or loads anything: say so to the browser,
	// so even a value that escaped escaping could not.
	hd.Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'")
	hd.Set("X-Content-Type-Options", "nosniff")
	hd.Set("Referrer-Policy", "no-referrer")
	hd.Set("Cache-Control", "no-store")
	w.WriteHeader(code)
	_, _ = w.Write(buf.Bytes())
}
