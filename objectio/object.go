package objectio

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	pathpkg "path"
	"strconv"
	"strings"
	"sync"
	"time"

	iceio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/io/gocloud/blobfs"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go"

	"github.com/icereactor/reactor/sizelimit"
)

// FileIO is iceberg-go's blob FileIO on S3 with Open, ReadFile, Remove
// and WalkDir replaced; every other method (writes, bulk deletes, one
// directory's listing, Stat) is blobfs's.
type FileIO struct {
	*blobfs.FileIO

	ctx     context.Context
	client  *s3.Client
	bucket  string
	extract blobfs.ObjectLocationExtractor
	whole   int64
	rng     int64
	readers int
	// attempts bounds the GETs of one read whose body breaks off (the
	// SDK's retries end when the headers arrive).
	attempts int
	// limits refuse a table file too large to read (package sizelimit).
	limits sizelimit.Limits
	// expires is when the credentials in the properties expire (zero:
	// none given).
	expires time.Time
}

// ReadConcurrency is how many files a scan should read at once from
// fsys: the configured read concurrency for this package's FileIOs (and
// any FileIO wrapping one that says so), 0 (the scan's own default) for
// any other.
func ReadConcurrency(fsys iceio.IO) int {
	if f, ok := fsys.(interface{ ReadConcurrency() int }); ok {
		return f.ReadConcurrency()
	}
	return 0
}

// ReadConcurrency is the configured read concurrency.
func (f *FileIO) ReadConcurrency() int { return f.readers }

var (
	_ iceio.ReadFileIO      = (*FileIO)(nil)
	_ iceio.WriteFileIO     = (*FileIO)(nil)
	_ iceio.ListableIO      = (*FileIO)(nil)
	_ iceio.BulkRemovableIO = (*FileIO)(nil)
	_ iceio.StatIO          = (*FileIO)(nil)
	// What iceberg-go's Hadoop catalog needs of a FileIO, as blobfs has.
	_ iceio.RenameIO          = (*FileIO)(nil)
	_ iceio.RenameNoReplaceIO = (*FileIO)(nil)
	_ iceio.RemoveAllIO       = (*FileIO)(nil)
	_ iceio.MkdirAllIO        = (*FileIO)(nil)
)

// Open reads the object's tail (all of it when it is at most the
// whole-object size) with one GET and returns a file serving reads from
// it, fetching what lies before the tail by ranges.
func (f *FileIO) Open(name string) (iceio.File, error) {
	loc, err := f.extract(name)
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: name, Err: err}
	}
	key := loc.Key()
	if !fs.ValidPath(key) {
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrInvalid}
	}
	data, start, total, mod, err := f.get(key, "bytes=-"+strconv.FormatInt(f.whole, 10))
	var ae smithy.APIError
	if errors.As(err, &ae) && ae.ErrorCode() == "InvalidRange" {
		// S3 refuses any suffix range on an empty object.
		data, start, total, mod, err = f.get(key, "")
	}
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: name, Err: err}
	}
	o := &object{sys: f, name: pathpkg.Base(key), size: total, mod: mod, mem: data, memAt: start, rng: f.rng,
		fetch: func(off, n int64) ([]byte, error) {
			data, _, _, _, err := f.get(key, fmt.Sprintf("bytes=%d-%d", off, off+n-1))
			return data, err
		}}
	// The first GET brought at most the whole-object size: a file over
	// its limit is refused before anything more of it is read.
	if err := checkOpened(f.limits, name, o); err != nil {
		return nil, err
	}
	return o, nil
}

// ReadFile reads the whole object through Open (one GET up to the
// whole-object size, a second for the rest of a larger one), so a
// metadata file over its limit is refused by its size before more of it
// is read, and a compressed one by what it decompresses to before it is
// handed over.
func (f *FileIO) ReadFile(name string) ([]byte, error) {
	return readWhole(f, f.limits, name)
}

// checkOpened refuses an opened file over its size limit, and a Parquet
// footer over its limit when the first read reached the file's end.
func checkOpened(limits sizelimit.Limits, name string, o *object) error {
	if err := limits.CheckFile(name, o.size); err != nil {
		return err
	}
	if end := o.memAt + int64(len(o.mem)); o.size >= 8 && len(o.mem) >= 8 && end == o.size {
		return limits.CheckFooter(name, o.size, o.mem[len(o.mem)-8:])
	}
	return nil
}

// readWhole opens name through fsys and reads all of it: what the first
// read brought, and what lies before and after it in one more read each.
func readWhole(fsys iceio.IO, limits sizelimit.Limits, name string) ([]byte, error) {
	file, err := fsys.Open(name)
	if err != nil {
		return nil, err
	}
	defer file.Close()
	o := file.(*object)
	data := o.mem
	span := func(off, n int64) ([]byte, error) {
		part, err := o.fetch(off, n)
		if err != nil {
			return nil, &fs.PathError{Op: "read", Path: name, Err: err}
		}
		if int64(len(part)) != n {
			return nil, &fs.PathError{Op: "read", Path: name, Err: fmt.Errorf("ranged read %d-%d returned %d bytes", off, off+n-1, len(part))}
		}
		return part, nil
	}
	if o.memAt > 0 {
		head, err := span(0, o.memAt)
		if err != nil {
			return nil, err
		}
		data = append(head, data...)
	}
	if end := o.memAt + int64(len(o.mem)); end < o.size {
		rest, err := span(end, o.size-end)
		if err != nil {
			return nil, err
		}
		data = append(data, rest...)
	}
	if err := limits.CheckMetadata(name, data); err != nil {
		return nil, err
	}
	return data, nil
}

// errBody marks a GET whose body broke off: the object is immutable, so
// the GET is made again.
var errBody = errors.New("read body")

// get fetches key (the byte range rng, "" for all) and returns the bytes,
// where they start and the object's size. A body that ends early (a
// connection reset mid-response) is fetched again, up to the attempts
// of a request; bytes are returned only from a whole body.
func (f *FileIO) get(key, rng string) (data []byte, start, total int64, mod time.Time, err error) {
	for attempt := 1; ; attempt++ {
		data, start, total, mod, err = f.getOnce(key, rng)
		if err == nil || !errors.Is(err, errBody) || attempt >= max(f.attempts, 1) || f.ctx.Err() != nil {
			return data, start, total, mod, err
		}
		select {
		case <-f.ctx.Done():
			return nil, 0, 0, mod, err
		case <-time.After(time.Duration(attempt) * 20 * time.Millisecond):
		}
	}
}

func (f *FileIO) getOnce(key, rng string) (data []byte, start, total int64, mod time.Time, err error) {
	in := &s3.GetObjectInput{Bucket: aws.String(f.bucket), Key: aws.String(key)}
	if rng != "" {
		in.Range = aws.String(rng)
	}
	out, err := f.client.GetObject(f.ctx, in)
	if err != nil {
		var nk *s3types.NoSuchKey
		if errors.As(err, &nk) {
			err = fmt.Errorf("%w: %w", fs.ErrNotExist, err)
		}
		return nil, 0, 0, mod, err
	}
	defer out.Body.Close()
	n := aws.ToInt64(out.ContentLength)
	if n < 0 {
		return nil, 0, 0, mod, fmt.Errorf("get %s: no content length", key)
	}
	data = make([]byte, n)
	if _, err := io.ReadFull(out.Body, data); err != nil {
		return nil, 0, 0, mod, fmt.Errorf("get %s: %w: %w", key, errBody, err)
	}
	start, total = 0, n
	if cr := aws.ToString(out.ContentRange); cr != "" {
		if start, total, err = parseContentRange(cr); err != nil {
			return nil, 0, 0, mod, fmt.Errorf("get %s: %w", key, err)
		}
	}
	return data, start, total, aws.ToTime(out.LastModified), nil
}

// parseContentRange reads "bytes START-END/TOTAL".
func parseContentRange(cr string) (start, total int64, err error) {
	rest, ok := strings.CutPrefix(cr, "bytes ")
	span, size, ok2 := strings.Cut(rest, "/")
	from, _, ok3 := strings.Cut(span, "-")
	if !ok || !ok2 || !ok3 {
		return 0, 0, fmt.Errorf("unreadable Content-Range %q", cr)
	}
	if start, err = strconv.ParseInt(from, 10, 64); err != nil {
		return 0, 0, fmt.Errorf("unreadable Content-Range %q: %w", cr, err)
	}
	if total, err = strconv.ParseInt(size, 10, 64); err != nil {
		return 0, 0, fmt.Errorf("unreadable Content-Range %q: %w", cr, err)
	}
	return start, total, nil
}

// fetcher reads the bytes [off, off+n) of one object: a ranged GET.
type fetcher func(off, n int64) ([]byte, error)

// object is an open object: the part of it the first read brought (the
// tail on S3, the head on the other stores) in memory and, for a large
// object, the last range fetched outside it. Reads at any offset may come
// from several goroutines (Parquet column readers); the window is
// guarded.
type object struct {
	sys   any
	name  string
	size  int64
	mod   time.Time
	mem   []byte
	memAt int64
	// fetch reads outside mem, at least rng bytes at a time.
	fetch fetcher
	rng   int64

	mu       sync.Mutex
	pos      int64
	window   []byte
	windowAt int64
}

func (o *object) ReadAt(p []byte, off int64) (int, error) {
	if off < 0 {
		return 0, &fs.PathError{Op: "read", Path: o.name, Err: fs.ErrInvalid}
	}
	n := 0
	for n < len(p) {
		at := off + int64(n)
		if at >= o.size {
			return n, io.EOF
		}
		if at >= o.memAt && at < o.memAt+int64(len(o.mem)) {
			n += copy(p[n:], o.mem[at-o.memAt:])
			continue
		}
		c, err := o.fromWindow(p[n:], at, int64(len(p)-n))
		n += c
		if err != nil {
			return n, err
		}
	}
	return n, nil
}

// fromWindow copies what it can of [at, at+want) from the window,
// fetching a new window (at least the range size, never into the part in
// memory) when at is outside it.
func (o *object) fromWindow(p []byte, at, want int64) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if at < o.windowAt || at >= o.windowAt+int64(len(o.window)) {
		end := min(at+max(want, o.rng), o.size)
		if at < o.memAt {
			end = min(end, o.memAt)
		}
		data, err := o.fetch(at, end-at)
		if err != nil {
			return 0, &fs.PathError{Op: "read", Path: o.name, Err: err}
		}
		if int64(len(data)) != end-at {
			return 0, &fs.PathError{Op: "read", Path: o.name, Err: fmt.Errorf("ranged read %d-%d returned %d bytes", at, end-1, len(data))}
		}
		o.window, o.windowAt = data, at
	}
	return copy(p, o.window[at-o.windowAt:]), nil
}

func (o *object) Read(p []byte) (int, error) {
	o.mu.Lock()
	pos := o.pos
	o.mu.Unlock()
	if pos >= o.size {
		return 0, io.EOF
	}
	n, err := o.ReadAt(p[:min(int64(len(p)), o.size-pos)], pos)
	o.mu.Lock()
	o.pos = pos + int64(n)
	o.mu.Unlock()
	if err == io.EOF && n > 0 {
		err = nil
	}
	return n, err
}

func (o *object) Seek(offset int64, whence int) (int64, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	switch whence {
	case io.SeekStart:
	case io.SeekCurrent:
		offset += o.pos
	case io.SeekEnd:
		offset += o.size
	default:
		return 0, &fs.PathError{Op: "seek", Path: o.name, Err: fs.ErrInvalid}
	}
	if offset < 0 {
		return 0, &fs.PathError{Op: "seek", Path: o.name, Err: fs.ErrInvalid}
	}
	o.pos = offset
	return offset, nil
}

// Close lets go of the window; the object holds no connection (its
// bodies are read in full before they are returned), and the part in
// memory goes with the object.
func (o *object) Close() error {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.window = nil
	return nil
}

func (o *object) Stat() (fs.FileInfo, error) { return o, nil }
func (o *object) Name() string               { return o.name }
func (o *object) Size() int64                { return o.size }
func (o *object) Mode() fs.FileMode          { return fs.ModeIrregular }
func (o *object) ModTime() time.Time         { return o.mod }
func (o *object) IsDir() bool                { return false }
func (o *object) Sys() any                   { return o.sys }

// Remove deletes the object with one DeleteObject. blobfs asks with a
// HEAD first so that it can report a missing object as fs.ErrNotExist;
// on a store across a network that is a second round trip per deleted
// file (expiry deletes hundreds), and S3's delete is idempotent, so the
// one difference is that an object already gone is not told apart here:
// it counts as deleted.
func (f *FileIO) Remove(name string) error {
	loc, err := f.extract(name)
	if err != nil {
		return &fs.PathError{Op: "remove", Path: name, Err: err}
	}
	key := loc.Key()
	if !fs.ValidPath(key) {
		return &fs.PathError{Op: "remove", Path: name, Err: fs.ErrInvalid}
	}
	if _, err := f.client.DeleteObject(f.ctx, &s3.DeleteObjectInput{Bucket: aws.String(f.bucket), Key: aws.String(key)}); err != nil {
		return &fs.PathError{Op: "remove", Path: name, Err: err}
	}
	return nil
}
