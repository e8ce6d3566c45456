package objectio

import (
	"errors"
	"io"
	"io/fs"
	"sync"

	iceio "github.com/apache/iceberg-go/io"
)

// renewingFile is an open object of a renewing FileIO: a read the store
// refuses for its credentials (a large object's ranged read, after the
// credentials it was opened with were revoked) opens the object again
// with fresh ones and reads once more. Objects are immutable, so the
// reopened one has the same bytes.
type renewingFile struct {
	r    *renewing
	name string

	mu sync.Mutex
	f  iceio.File
	// inner and gen are the FileIO f was opened with.
	inner iceio.IO
	gen   uint64
	pos   int64
}

func (f *renewingFile) file() iceio.File {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.f
}

func (f *renewingFile) ReadAt(p []byte, off int64) (int, error) {
	f.mu.Lock()
	cur, inner, gen := f.f, f.inner, f.gen
	f.mu.Unlock()
	n, err := cur.ReadAt(p, off)
	if !CredentialsRefused(err) {
		return n, err
	}
	fresh, freshGen, err2 := f.r.renewed(inner, gen, err)
	if err2 != nil {
		return n, err2
	}
	reopened, err2 := fresh.Open(f.name)
	if err2 != nil {
		return n, errors.Join(err, err2)
	}
	f.mu.Lock()
	if f.f == cur {
		f.f, f.inner = reopened, fresh
		f.gen = freshGen
		_ = cur.Close()
	} else {
		_ = reopened.Close()
	}
	next := f.f
	f.mu.Unlock()
	return next.ReadAt(p, off)
}

func (f *renewingFile) Read(p []byte) (int, error) {
	f.mu.Lock()
	pos := f.pos
	f.mu.Unlock()
	n, err := f.ReadAt(p, pos)
	f.mu.Lock()
	f.pos = pos + int64(n)
	f.mu.Unlock()
	if err == io.EOF && n > 0 {
		err = nil
	}
	return n, err
}

func (f *renewingFile) Seek(offset int64, whence int) (int64, error) {
	info, err := f.Stat()
	if err != nil {
		return 0, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	switch whence {
	case io.SeekStart:
	case io.SeekCurrent:
		offset += f.pos
	case io.SeekEnd:
		offset += info.Size()
	default:
		return 0, &fs.PathError{Op: "seek", Path: f.name, Err: fs.ErrInvalid}
	}
	if offset < 0 {
		return 0, &fs.PathError{Op: "seek", Path: f.name, Err: fs.ErrInvalid}
	}
	f.pos = offset
	return offset, nil
}

func (f *renewingFile) Stat() (fs.FileInfo, error) { return f.file().Stat() }

func (f *renewingFile) Close() error { return f.file().Close() }

// renewingWriter writes one object. When the store refuses the
// credentials before the object is written, and the object so far is
// small enough to have been kept, it is written again from the start
// with fresh credentials; a larger one's write fails as it would have.
type renewingWriter struct {
	r     *renewing
	name  string
	inner iceio.IO
	gen   uint64
	w     iceio.FileWriter
	// kept is what was written so far, while it is at most replayBytes
	// (nil: not kept, no replay).
	kept    []byte
	retried bool
}

func (w *renewingWriter) Write(p []byte) (int, error) {
	n, err := w.w.Write(p)
	if w.kept != nil {
		if len(w.kept)+len(p) > replayBytes {
			w.kept = nil
		} else {
			w.kept = append(w.kept, p...)
		}
	}
	if err == nil || !CredentialsRefused(err) || !w.replayable() {
		return n, err
	}
	if err := w.replay(err); err != nil {
		return n, err
	}
	return len(p), nil
}

func (w *renewingWriter) Close() error {
	err := w.w.Close()
	if err == nil || !CredentialsRefused(err) || !w.replayable() {
		return err
	}
	if err := w.replay(err); err != nil {
		return err
	}
	return w.w.Close()
}

func (w *renewingWriter) ReadFrom(r io.Reader) (int64, error) {
	return io.Copy(struct{ io.Writer }{w}, r)
}

func (w *renewingWriter) replayable() bool { return w.kept != nil && !w.retried }

// replay renews the credentials and writes what was kept to a new
// writer.
func (w *renewingWriter) replay(refusal error) error {
	w.retried = true
	_ = w.w.Close()
	fresh, gen, err := w.r.renewed(w.inner, w.gen, refusal)
	if err != nil {
		return err
	}
	nw, err := fresh.(iceio.WriteFileIO).Create(w.name)
	if err != nil {
		return err
	}
	if _, err := nw.Write(w.kept); err != nil {
		_ = nw.Close()
		return err
	}
	w.w, w.inner, w.gen = nw, fresh, gen
	return nil
}
