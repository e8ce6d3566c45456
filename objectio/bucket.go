package objectio

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	pathpkg "path"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	iceio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/io/gocloud/blobfs"
	"gocloud.dev/gcerrors"
	"google.golang.org/api/googleapi"

	"github.com/icereactor/reactor/sizelimit"
)

// BucketIO is iceberg-go's blob FileIO on a GCS or Azure bucket with Open,
// Remove and WalkDir shaped as FileIO's are on S3; every other method
// (writes, bulk deletes, one directory's listing, ReadFile, Stat) is
// blobfs's on the same client.
type BucketIO struct {
	*blobfs.FileIO

	ctx     context.Context
	extract blobfs.ObjectLocationExtractor
	whole   int64
	rng     int64
	readers int
	// attempts bounds the reads of one range whose body breaks off (the
	// stores' clients retry a request until its headers arrive).
	attempts int
	// limits refuse a table file too large to read (package sizelimit).
	limits sizelimit.Limits
	// expires is when the credentials in the properties expire (zero:
	// none given).
	expires time.Time
}

var (
	_ iceio.ReadFileIO      = (*BucketIO)(nil)
	_ iceio.WriteFileIO     = (*BucketIO)(nil)
	_ iceio.ListableIO      = (*BucketIO)(nil)
	_ iceio.BulkRemovableIO = (*BucketIO)(nil)
	_ iceio.StatIO          = (*BucketIO)(nil)
)

// ReadConcurrency is the configured read concurrency.
func (b *BucketIO) ReadConcurrency() int { return b.readers }

// Open reads the object's first WholeObjectBytes (all of it when it is at
// most that size) with one ranged GET and returns a file serving reads
// from them, fetching what lies after by ranges. Neither GCS nor Azure
// reads a suffix range through gocloud, so a large object keeps its head
// rather than its tail: its footer costs one more range.
func (b *BucketIO) Open(name string) (iceio.File, error) {
	key, err := b.key("open", name)
	if err != nil {
		return nil, err
	}
	data, total, mod, err := b.read(key, 0, b.whole)
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: name, Err: err}
	}
	o := &object{sys: b, name: pathpkg.Base(key), size: total, mod: mod, mem: data, rng: b.rng,
		fetch: func(off, n int64) ([]byte, error) {
			data, _, _, err := b.read(key, off, n)
			return data, err
		}}
	if err := checkOpened(b.limits, name, o); err != nil {
		return nil, err
	}
	return o, nil
}

// ReadFile reads the whole object through Open, refusing a metadata file
// over its size limit as FileIO.ReadFile does.
func (b *BucketIO) ReadFile(name string) ([]byte, error) {
	return readWhole(b, b.limits, name)
}

func (b *BucketIO) key(op, name string) (string, error) {
	loc, err := b.extract(name)
	if err != nil {
		return "", &fs.PathError{Op: op, Path: name, Err: err}
	}
	key := loc.Key()
	if !fs.ValidPath(key) {
		return "", &fs.PathError{Op: op, Path: name, Err: fs.ErrInvalid}
	}
	return key, nil
}

// read fetches [off, off+n) of key (less at the object's end), with the
// object's size and modification time. A body that breaks off is read
// again, up to the attempts of a request; bytes are returned only from a
// whole body.
func (b *BucketIO) read(key string, off, n int64) (data []byte, total int64, mod time.Time, err error) {
	for attempt := 1; ; attempt++ {
		data, total, mod, err = b.readOnce(key, off, n)
		if err == nil || !errors.Is(err, errBody) || attempt >= max(b.attempts, 1) || b.ctx.Err() != nil {
			return data, total, mod, err
		}
		select {
		case <-b.ctx.Done():
			return nil, 0, mod, err
		case <-time.After(time.Duration(attempt) * 20 * time.Millisecond):
		}
	}
}

func (b *BucketIO) readOnce(key string, off, n int64) ([]byte, int64, time.Time, error) {
	r, err := b.Bucket.NewRangeReader(b.ctx, key, off, n, nil)
	if err != nil && off == 0 && unsatisfiableRange(err) {
		// Azure refuses any range of an empty blob.
		r, err = b.Bucket.NewRangeReader(b.ctx, key, 0, -1, nil)
	}
	if err != nil {
		if gcerrors.Code(err) == gcerrors.NotFound {
			err = fmt.Errorf("%w: %w", fs.ErrNotExist, err)
		}
		return nil, 0, time.Time{}, err
	}
	defer r.Close()
	want := min(n, max(r.Size()-off, 0))
	data := make([]byte, want)
	if _, err := io.ReadFull(r, data); err != nil {
		return nil, 0, time.Time{}, fmt.Errorf("get %s: %w: %w", key, errBody, err)
	}
	return data, r.Size(), r.ModTime(), nil
}

// unsatisfiableRange reports an HTTP 416 from either store's client.
func unsatisfiableRange(err error) bool {
	var az *azcore.ResponseError
	if errors.As(err, &az) {
		return az.StatusCode == http.StatusRequestedRangeNotSatisfiable
	}
	var g *googleapi.Error
	if errors.As(err, &g) {
		return g.Code == http.StatusRequestedRangeNotSatisfiable
	}
	return false
}

// Remove deletes the object with one request. blobfs tries a directory
// marker after a miss, a second round trip reactor never needs (it
// deletes files, not directories); a missing object is fs.ErrNotExist.
func (b *BucketIO) Remove(name string) error {
	key, err := b.key("remove", name)
	if err != nil {
		return err
	}
	if err := b.Bucket.Delete(b.ctx, key); err != nil {
		if gcerrors.Code(err) == gcerrors.NotFound {
			err = fs.ErrNotExist
		}
		return &fs.PathError{Op: "remove", Path: name, Err: err}
	}
	return nil
}

// WalkDir is blobfs's WalkDir with the directories listed the read
// concurrency at once (walk.go).
func (b *BucketIO) WalkDir(root string, fn fs.WalkDirFunc) error {
	return walkBucket(b.FileIO, b.extract, b.readers, root, fn)
}
