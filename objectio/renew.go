package objectio

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"sync"
	"time"

	iceio "github.com/apache/iceberg-go/io"

	"github.com/icereactor/reactor/redact"
)

// Why credentials were renewed (the reason label of
// reactor_credential_renewals_total and of the log line).
const (
	// RenewBeforeExpiry: the credentials were about to expire.
	RenewBeforeExpiry = "before_expiry"
	// RenewRefused: the store refused them (expired, revoked).
	RenewRefused = "refused"
)

const (
	// renewBuffer is how long before their expiry credentials are
	// renewed, at most (iceberg-go's catalog/rest uses the same): half
	// their lifetime when that is shorter.
	renewBuffer = 5 * time.Minute
	// renewPause is the least time between two renewals before expiry:
	// a catalog that vends credentials already in their renewal window
	// (a clock apart, a forged expiry) is not asked again on every
	// request.
	renewPause = 10 * time.Second
	// replayBytes is how much of a file being written is kept to write
	// it again if the store refuses the credentials before it is done;
	// a larger file's write fails (the job's cleanup and retry handle
	// it). Kept only for credentials that expire.
	replayBytes = DefaultWholeObjectBytes
)

// FSys builds a FileIO (a table's FS method).
type FSys func(ctx context.Context) (iceio.IO, error)

// Reload loads the table again from its catalog and returns how to build
// its FileIO with the credentials the catalog vends now.
type Reload func(ctx context.Context) (FSys, error)

// RenewOptions say where renewals are told.
type RenewOptions struct {
	// Table names the table in log lines and errors.
	Table string
	// Log receives a line per renewal (nil: slog.Default()).
	Log *slog.Logger
	// Renewed is called once per renewal with its reason (a metric).
	Renewed func(reason string)
	// Now is the clock (nil: time.Now; tests).
	Now func() time.Time
}

// Credentials are one table's credentials, shared by every FileIO built
// of the table: renewed through the table's catalog shortly before they
// expire, and when the store refuses them, once for all the FileIOs that
// saw them fail. FS builds FileIOs that do so.
type Credentials struct {
	reload Reload
	o      RenewOptions

	// renewMu is held through a reload, so that requests that fail
	// together share one.
	renewMu sync.Mutex

	mu   sync.Mutex
	fsys FSys
	gen  uint64
	// issued is when the current credentials were loaded; nextEarly is
	// the earliest time of the next renewal before expiry.
	issued    time.Time
	nextEarly time.Time
}

// NewCredentials starts from fsys, the FileIO of the table as loaded.
func NewCredentials(fsys FSys, reload Reload, o RenewOptions) *Credentials {
	if o.Log == nil {
		o.Log = slog.Default()
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return &Credentials{reload: reload, o: o, fsys: fsys, issued: o.Now()}
}

// FS builds the table's FileIO with the current credentials: one of this
// package's FileIOs wrapped to renew them, any other FileIO (a local
// warehouse, one built elsewhere) as it is.
func (c *Credentials) FS(ctx context.Context) (iceio.IO, error) {
	fsys, gen := c.current()
	inner, err := fsys(ctx)
	if err != nil {
		return nil, err
	}
	r := &renewing{c: c, ctx: ctx, inner: inner, gen: gen}
	switch inner.(type) {
	case *FileIO:
		return &renewingS3{r}, nil
	case *BucketIO:
		return r, nil
	}
	return inner, nil
}

func (c *Credentials) current() (FSys, uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.fsys, c.gen
}

// dueEarly reports whether credentials expiring at exp are to be renewed
// now: within renewBuffer (or half their lifetime) of exp.
func (c *Credentials) dueEarly(exp time.Time) bool {
	if exp.IsZero() {
		return false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.o.Now()
	if now.Before(c.nextEarly) {
		return false
	}
	buffer := renewBuffer
	if life := exp.Sub(c.issued); life/2 < buffer {
		buffer = max(life/2, 0)
	}
	return !now.Before(exp.Add(-buffer))
}

// renew loads the table's credentials again, unless they were renewed
// since generation gen was handed out (then the caller uses those).
func (c *Credentials) renew(ctx context.Context, gen uint64, reason string, expired time.Time, cause error) error {
	c.renewMu.Lock()
	defer c.renewMu.Unlock()
	if _, now := c.current(); now != gen {
		return nil
	}
	fsys, err := c.reload(ctx)
	if err != nil {
		c.mu.Lock()
		c.nextEarly = c.o.Now().Add(renewPause)
		c.mu.Unlock()
		err = redact.Error(err)
		c.o.Log.Warn("storage credentials not renewed", "table", c.o.Table, "reason", reason, "error", err)
		return fmt.Errorf("objectio: renew the storage credentials of %s (%s): %w", c.o.Table, reason, err)
	}
	c.mu.Lock()
	c.fsys, c.gen = fsys, c.gen+1
	c.issued = c.o.Now()
	c.nextEarly = c.issued.Add(renewPause)
	c.mu.Unlock()
	if c.o.Renewed != nil {
		c.o.Renewed(reason)
	}
	attrs := []any{"table", c.o.Table, "reason", reason}
	if !expired.IsZero() {
		attrs = append(attrs, "expires_at", expired.UTC().Format(time.RFC3339))
	}
	if cause != nil {
		attrs = append(attrs, "refusal", redact.Error(cause))
	}
	c.o.Log.Info("storage credentials renewed", attrs...)
	return nil
}

// renewing is a FileIO of a table whose credentials Credentials renews:
// before a request when they are about to expire, and after a request
// the store refused for them, which it then makes once more (one renewal
// and one retry per request, so a real denial fails as it did).
type renewing struct {
	c   *Credentials
	ctx context.Context

	mu    sync.Mutex
	inner iceio.IO
	gen   uint64
}

var (
	_ iceio.ReadFileIO      = (*renewing)(nil)
	_ iceio.WriteFileIO     = (*renewing)(nil)
	_ iceio.ListableIO      = (*renewing)(nil)
	_ iceio.BulkRemovableIO = (*renewing)(nil)
	_ iceio.StatIO          = (*renewing)(nil)

	_ iceio.RenameIO          = (*renewingS3)(nil)
	_ iceio.RenameNoReplaceIO = (*renewingS3)(nil)
	_ iceio.RemoveAllIO       = (*renewingS3)(nil)
	_ iceio.MkdirAllIO        = (*renewingS3)(nil)
)

// renewingS3 adds what objectio's S3 FileIO has beyond a BucketIO.
type renewingS3 struct{ *renewing }

// use returns the FileIO to make a request with, renewing the
// credentials first when they are about to expire. A failed renewal is
// logged and the request goes out with the credentials it has: they may
// still be good, and a refusal is retried after a renewal.
func (r *renewing) use() (iceio.IO, uint64) {
	r.mu.Lock()
	inner, gen := r.inner, r.gen
	r.mu.Unlock()
	if _, now := r.c.current(); now != gen {
		// Renewed through another FileIO of the table: take them up.
		if fresh, freshGen, err := r.rebuild(gen); err == nil {
			return fresh, freshGen
		}
	}
	exp := expiryOf(inner)
	if !r.c.dueEarly(exp) {
		return inner, gen
	}
	if err := r.c.renew(r.ctx, gen, RenewBeforeExpiry, exp, nil); err != nil {
		return inner, gen
	}
	if fresh, freshGen, err := r.rebuild(gen); err == nil {
		return fresh, freshGen
	}
	return inner, gen
}

// rebuild replaces the FileIO of generation gen by one with the current
// credentials (once, for all requests that saw gen).
func (r *renewing) rebuild(gen uint64) (iceio.IO, uint64, error) {
	fsys, now := r.c.current()
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.gen != gen || now == gen {
		return r.inner, r.gen, nil
	}
	inner, err := fsys(r.ctx)
	if err != nil {
		return nil, 0, fmt.Errorf("objectio: FileIO with the renewed credentials of %s: %w", r.c.o.Table, redact.Error(err))
	}
	r.inner, r.gen = inner, now
	return inner, now, nil
}

// retry makes a request with the current FileIO and, when the store
// refused its credentials, renews them and makes it once more.
func retry[T any](r *renewing, op func(iceio.IO) (T, error)) (T, error) {
	inner, gen := r.use()
	v, err := op(inner)
	if !CredentialsRefused(err) {
		return v, err
	}
	fresh, _, err2 := r.renewed(inner, gen, err)
	if err2 != nil {
		return v, err2
	}
	return op(fresh)
}

// renewed renews the credentials that inner (of generation gen) was
// refused, and returns a FileIO with the fresh ones.
func (r *renewing) renewed(inner iceio.IO, gen uint64, refusal error) (iceio.IO, uint64, error) {
	if err := r.c.renew(r.ctx, gen, RenewRefused, expiryOf(inner), refusal); err != nil {
		return nil, 0, fmt.Errorf("%w (the store refused the credentials: %w)", err, refusal)
	}
	fresh, freshGen, err := r.rebuild(gen)
	if err != nil {
		return nil, 0, errors.Join(err, refusal)
	}
	return fresh, freshGen, nil
}

func expiryOf(fsys iceio.IO) time.Time {
	if e, ok := fsys.(interface{ CredentialsExpireAt() time.Time }); ok {
		return e.CredentialsExpireAt()
	}
	return time.Time{}
}

// CredentialsExpireAt is when the credentials in use expire.
func (r *renewing) CredentialsExpireAt() time.Time {
	r.mu.Lock()
	defer r.mu.Unlock()
	return expiryOf(r.inner)
}

// ReadConcurrency is the wrapped FileIO's.
func (r *renewing) ReadConcurrency() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return ReadConcurrency(r.inner)
}

func (r *renewing) Open(name string) (iceio.File, error) {
	inner, gen := r.use()
	f, err := inner.Open(name)
	if CredentialsRefused(err) {
		var fresh iceio.IO
		if fresh, gen, err = r.renewed(inner, gen, err); err != nil {
			return nil, err
		}
		inner = fresh
		f, err = fresh.Open(name)
	}
	if err != nil {
		return nil, err
	}
	return &renewingFile{r: r, name: name, f: f, inner: inner, gen: gen}, nil
}

func (r *renewing) ReadFile(name string) ([]byte, error) {
	return retry(r, func(fsys iceio.IO) ([]byte, error) { return fsys.(iceio.ReadFileIO).ReadFile(name) })
}

func (r *renewing) Remove(name string) error {
	_, err := retry(r, func(fsys iceio.IO) (struct{}, error) { return struct{}{}, fsys.Remove(name) })
	return err
}

func (r *renewing) Stat(name string) (fs.FileInfo, error) {
	return retry(r, func(fsys iceio.IO) (fs.FileInfo, error) { return fsys.(iceio.StatIO).Stat(name) })
}

func (r *renewing) WriteFile(name string, p []byte) error {
	_, err := retry(r, func(fsys iceio.IO) (struct{}, error) {
		return struct{}{}, fsys.(iceio.WriteFileIO).WriteFile(name, p)
	})
	return err
}

// DeleteFiles deletes paths; after a refusal of the credentials, the
// paths not yet deleted are deleted with fresh ones.
func (r *renewing) DeleteFiles(ctx context.Context, paths []string) ([]string, error) {
	inner, gen := r.use()
	deleted, err := inner.(iceio.BulkRemovableIO).DeleteFiles(ctx, paths)
	if !CredentialsRefused(err) {
		return deleted, err
	}
	fresh, _, err2 := r.renewed(inner, gen, err)
	if err2 != nil {
		return deleted, err2
	}
	done := make(map[string]bool, len(deleted))
	for _, p := range deleted {
		done[p] = true
	}
	var rest []string
	for _, p := range paths {
		if !done[p] {
			rest = append(rest, p)
		}
	}
	more, err := fresh.(iceio.BulkRemovableIO).DeleteFiles(ctx, rest)
	return append(deleted, more...), err
}

// WalkDir walks root; a walk the store refused part way is walked again
// with fresh credentials, fn called only for what it was not called for
// yet (and its answer for a directory, SkipDir, kept).
func (r *renewing) WalkDir(root string, fn fs.WalkDirFunc) error {
	seen := map[string]error{}
	visit := func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return fn(path, d, err)
		}
		if res, ok := seen[path]; ok {
			return res
		}
		res := fn(path, d, nil)
		seen[path] = res
		return res
	}
	// A refusal reaches fn first, as the error of a directory's listing;
	// it is handed back to the walk to be retried rather than to fn.
	var refused error
	guard := func(path string, d fs.DirEntry, err error) error {
		if CredentialsRefused(err) {
			refused = err
			return err
		}
		return visit(path, d, err)
	}
	_, err := retry(r, func(fsys iceio.IO) (struct{}, error) {
		refused = nil
		err := fsys.(iceio.ListableIO).WalkDir(root, guard)
		if err == nil && refused != nil {
			err = refused
		}
		return struct{}{}, err
	})
	if refused != nil && err != nil && CredentialsRefused(err) {
		// Refused again with fresh credentials: fn hears it as the walk
		// would have told it.
		return fn(root, nil, err)
	}
	return err
}

func (r *renewing) Create(name string) (iceio.FileWriter, error) {
	inner, gen := r.use()
	w, err := inner.(iceio.WriteFileIO).Create(name)
	if CredentialsRefused(err) {
		var fresh iceio.IO
		if fresh, gen, err = r.renewed(inner, gen, err); err != nil {
			return nil, err
		}
		inner = fresh
		w, err = fresh.(iceio.WriteFileIO).Create(name)
	}
	if err != nil {
		return nil, err
	}
	rw := &renewingWriter{r: r, name: name, w: w, inner: inner, gen: gen}
	if !expiryOf(inner).IsZero() {
		rw.kept = []byte{}
	}
	return rw, nil
}

func (r renewingS3) Rename(oldpath, newpath string) error {
	_, err := retry(r.renewing, func(fsys iceio.IO) (struct{}, error) {
		return struct{}{}, fsys.(iceio.RenameIO).Rename(oldpath, newpath)
	})
	return err
}

func (r renewingS3) RenameNoReplace(oldpath, newpath string) error {
	_, err := retry(r.renewing, func(fsys iceio.IO) (struct{}, error) {
		return struct{}{}, fsys.(iceio.RenameNoReplaceIO).RenameNoReplace(oldpath, newpath)
	})
	return err
}

func (r renewingS3) RemoveAll(name string) error {
	_, err := retry(r.renewing, func(fsys iceio.IO) (struct{}, error) {
		return struct{}{}, fsys.(iceio.RemoveAllIO).RemoveAll(name)
	})
	return err
}

func (r renewingS3) MkdirAll(path string) error {
	_, err := retry(r.renewing, func(fsys iceio.IO) (struct{}, error) {
		return struct{}{}, fsys.(iceio.MkdirAllIO).MkdirAll(path)
	})
	return err
}
