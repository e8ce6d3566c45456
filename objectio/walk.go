package objectio

import (
	"errors"
	"io/fs"
	pathpkg "path"
	"strings"
	"sync"

	"github.com/apache/iceberg-go/io/gocloud/blobfs"
	"gocloud.dev/blob"
)

// WalkDir is blobfs's WalkDir (the same entries, paths and order, the
// root's directory marker left out) with the directories listed the read
// concurrency at once: on a bucket each directory costs an existence
// check and a listing, two round trips, and a table's partition
// directories (data/, data/category=c00/, ..., metadata/) were listed one
// after another by orphan cleanup's full listing.
func (f *FileIO) WalkDir(root string, fn fs.WalkDirFunc) error {
	return walkBucket(f.FileIO, f.extract, f.readers, root, fn)
}

// walkBucket is WalkDir for any bucket blobfs reads.
func walkBucket(b *blobfs.FileIO, extract blobfs.ObjectLocationExtractor, readers int, root string, fn fs.WalkDirFunc) error {
	if readers <= 1 {
		return b.WalkDir(root, fn)
	}
	key, err := blobfs.KeyExtractorFromObjectLocation(extract)(root)
	walkPath := key
	if err != nil {
		if !errors.Is(err, blobfs.ErrEmptyObjectKey) {
			return &fs.PathError{Op: "walk dir", Path: root, Err: err}
		}
		walkPath = "."
	}
	// blobfs names walked files by the root's scheme and authority when
	// the root has them, by their key otherwise.
	uriPrefix := ""
	if scheme, rest, ok := strings.Cut(root, "://"); ok {
		authority, _, _ := strings.Cut(rest, "/")
		uriPrefix = scheme + "://" + authority + "/"
	}
	marker := strings.TrimRight(walkPath, "/")
	if marker != "" && marker != "." {
		marker += "/"
	}
	return walkDirAhead(b.Bucket, walkPath, readers, func(path string, d fs.DirEntry, err error) error {
		if err == nil && d != nil && !d.IsDir() && marker != "" {
			if info, ierr := d.Info(); ierr == nil {
				if obj, ok := info.Sys().(*blob.ListObject); ok && obj.Key == marker {
					return nil
				}
			}
		}
		if uriPrefix != "" {
			if path == "." || path == "" {
				path = uriPrefix
			} else {
				path = uriPrefix + path
			}
		}
		return fn(path, d, err)
	})
}

// walkDirAhead is fs.WalkDir (same calls of fn, same order, SkipDir and
// SkipAll alike) with each directory's listing started, readers at a
// time in the order they were found, as soon as its parent was listed.
// fn is called from the caller's goroutine only. A listing of a
// directory fn skips is wasted, never visited.
func walkDirAhead(fsys fs.FS, root string, readers int, fn fs.WalkDirFunc) error {
	pf := newPrefetcher(fsys, readers)
	defer pf.close()
	info, err := fs.Stat(fsys, root)
	if err != nil {
		err = fn(root, nil, err)
	} else {
		err = pf.walk(root, fs.FileInfoToDirEntry(info), fn)
	}
	if err == fs.SkipDir || err == fs.SkipAll {
		return nil
	}
	return err
}

type listing struct {
	dir     string
	entries []fs.DirEntry
	err     error
	done    chan struct{}
}

// prefetcher lists directories in the background: a FIFO of names and
// readers workers; each listing is waited for by the walk through its
// done channel.
type prefetcher struct {
	fsys    fs.FS
	mu      sync.Mutex
	cond    *sync.Cond
	queue   []*listing
	closed  bool
	started map[string]*listing // the walk's goroutine only
	wg      sync.WaitGroup
}

func newPrefetcher(fsys fs.FS, readers int) *prefetcher {
	p := &prefetcher{fsys: fsys, started: map[string]*listing{}}
	p.cond = sync.NewCond(&p.mu)
	for range readers {
		p.wg.Add(1)
		go p.work()
	}
	return p
}

func (p *prefetcher) work() {
	defer p.wg.Done()
	for {
		p.mu.Lock()
		for len(p.queue) == 0 && !p.closed {
			p.cond.Wait()
		}
		if p.closed {
			p.mu.Unlock()
			return
		}
		l := p.queue[0]
		p.queue = p.queue[1:]
		p.mu.Unlock()
		// entries and err are the walk's once done is closed.
		l.entries, l.err = fs.ReadDir(p.fsys, l.dir)
		close(l.done)
	}
}

// start queues the listing of dir unless it was queued already.
func (p *prefetcher) start(dir string) *listing {
	if l, ok := p.started[dir]; ok {
		return l
	}
	l := &listing{dir: dir, done: make(chan struct{})}
	p.started[dir] = l
	p.mu.Lock()
	p.queue = append(p.queue, l)
	p.mu.Unlock()
	p.cond.Signal()
	return l
}

// close stops the workers once the listings under way are done; queued
// ones are dropped.
func (p *prefetcher) close() {
	p.mu.Lock()
	p.closed = true
	p.mu.Unlock()
	p.cond.Broadcast()
	p.wg.Wait()
}

// walk is fs.WalkDir's walkDir with the listing of name taken from the
// prefetcher, and its subdirectories' listings started before any of
// them is walked.
func (p *prefetcher) walk(name string, d fs.DirEntry, fn fs.WalkDirFunc) error {
	if err := fn(name, d, nil); err != nil || !d.IsDir() {
		if err == fs.SkipDir && d.IsDir() {
			err = nil
		}
		return err
	}
	l := p.start(name)
	<-l.done
	dirs, err := l.entries, l.err
	delete(p.started, name)
	if err != nil {
		if err = fn(name, d, err); err != nil {
			if err == fs.SkipDir && d.IsDir() {
				err = nil
			}
			return err
		}
	}
	for _, d1 := range dirs {
		if d1.IsDir() {
			p.start(pathpkg.Join(name, d1.Name()))
		}
	}
	for _, d1 := range dirs {
		if err := p.walk(pathpkg.Join(name, d1.Name()), d1, fn); err != nil {
			if err == fs.SkipDir {
				break
			}
			return err
		}
	}
	return nil
}
