package objectio

import (
	"bytes"
	"context"
	"errors"
	"io"
	"io/fs"
	"math/rand/v2"
	"slices"
	"testing"

	iceio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/io/gocloud/blobfs"
	"gocloud.dev/blob/memblob"

	"github.com/icereactor/reactor/sizelimit"
)

// memBucketIO is a BucketIO on gocloud's in-memory bucket (the driver
// GCS's and Azure's share the code above with), with a small whole-object
// size so that large objects are cheap to make.
func memBucketIO(t *testing.T, whole, rng int64) *BucketIO {
	t.Helper()
	ctx := context.Background()
	b := memblob.OpenBucket(nil)
	t.Cleanup(func() { _ = b.Close() })
	extract := blobfs.DefaultObjectLocationExtractor("lake", "gs")
	return &BucketIO{FileIO: blobfs.New(ctx, b, extract), ctx: ctx, extract: extract,
		whole: whole, rng: rng, readers: 4, attempts: 3}
}

func randomBytes(n int) []byte {
	r := rand.New(rand.NewPCG(uint64(n), 7))
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.IntN(256))
	}
	return b
}

// TestBucketIOReadsWhatWasWritten: small objects (read whole by Open),
// objects larger than the whole-object size (their head in memory, the
// rest by ranges at least rng long) and empty objects read back exactly,
// through ReadAt anywhere, Read to the end and Seek.
func TestBucketIOReadsWhatWasWritten(t *testing.T) {
	b := memBucketIO(t, 1024, 300)
	for _, size := range []int{0, 1, 1023, 1024, 1025, 5000} {
		want := randomBytes(size)
		loc := "gs://lake/t/data/f.parquet"
		if err := b.WriteFile(loc, want); err != nil {
			t.Fatal(err)
		}
		f, err := b.Open(loc)
		if err != nil {
			t.Fatalf("size %d: %v", size, err)
		}
		info, err := f.Stat()
		if err != nil || info.Size() != int64(size) || info.Name() != "f.parquet" {
			t.Fatalf("size %d: stat %v %v", size, info, err)
		}
		// Footer first, then column chunks out of order, as Parquet reads.
		for _, at := range []int{size - 8, 0, size / 2, size - 1, 900, 1100, 3000} {
			if at < 0 || at >= size {
				continue
			}
			n := min(200, size-at)
			got := make([]byte, n)
			if _, err := f.ReadAt(got, int64(at)); err != nil && !errors.Is(err, io.EOF) {
				t.Fatalf("size %d: ReadAt %d: %v", size, at, err)
			}
			if !bytes.Equal(got, want[at:at+n]) {
				t.Fatalf("size %d: ReadAt %d returned other bytes", size, at)
			}
		}
		if _, err := f.Seek(0, io.SeekStart); err != nil {
			t.Fatal(err)
		}
		all, err := io.ReadAll(f)
		if err != nil || !bytes.Equal(all, want) {
			t.Fatalf("size %d: ReadAll %d bytes, %v", size, len(all), err)
		}
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

// TestBucketIOMissingAndRemoved: a missing object is fs.ErrNotExist for
// Open, Stat and Remove; Remove deletes.
func TestBucketIOMissingAndRemoved(t *testing.T) {
	b := memBucketIO(t, 1024, 300)
	loc := "gs://lake/t/data/f.parquet"
	if _, err := b.Open(loc); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("Open of a missing object: %v, want fs.ErrNotExist", err)
	}
	if err := b.Remove(loc); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("Remove of a missing object: %v, want fs.ErrNotExist", err)
	}
	if err := b.WriteFile(loc, []byte("x")); err != nil {
		t.Fatal(err)
	}
	if err := b.Remove(loc); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Stat(loc); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("Stat after Remove: %v, want fs.ErrNotExist", err)
	}
	for _, bad := range []string{"gs://other/t/x", "s3://lake/t/x", "gs://lake/t/../x"} {
		if _, err := b.Open(bad); err == nil {
			t.Errorf("Open(%q) succeeded", bad)
		}
		if err := b.Remove(bad); err == nil {
			t.Errorf("Remove(%q) succeeded", bad)
		}
	}
}

// TestBucketIOWalkDirIsBlobfs: the walk with listings ahead yields what
// blobfs's own walk yields, in the same order.
func TestBucketIOWalkDirIsBlobfs(t *testing.T) {
	b := memBucketIO(t, 1024, 300)
	for _, k := range []string{"t/data/a=1/x", "t/data/a=1/y", "t/data/a=2/z", "t/metadata/m.json", "t/metadata/_r/p.json", "u/data/q"} {
		if err := b.WriteFile("gs://lake/"+k, []byte(k)); err != nil {
			t.Fatal(err)
		}
	}
	walk := func(w func(string, fs.WalkDirFunc) error) []string {
		var got []string
		if err := w("gs://lake/t", func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			got = append(got, path)
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		return got
	}
	ahead, own := walk(b.WalkDir), walk(b.FileIO.WalkDir)
	if !slices.Equal(ahead, own) || len(own) == 0 {
		t.Fatalf("walk ahead %q, blobfs %q", ahead, own)
	}
	if n := ReadConcurrency(b); n != 4 {
		t.Fatalf("ReadConcurrency = %d, want 4", n)
	}
	var _ iceio.IO = b
}

// TestBucketIOSizeLimits: a metadata file over its limit is refused by
// Open and ReadFile on GCS and Azure as on S3, before it is read whole.
func TestBucketIOSizeLimits(t *testing.T) {
	b := memBucketIO(t, 1024, 300)
	limits, err := sizelimit.FromProperties(map[string]string{sizelimit.MetadataJSONProperty: "2048"})
	if err != nil {
		t.Fatal(err)
	}
	b.limits = limits
	small, large := "gs://lake/t/metadata/00001-a.metadata.json", "gs://lake/t/metadata/00002-b.metadata.json"
	if err := b.WriteFile(small, randomBytes(2000)); err != nil {
		t.Fatal(err)
	}
	if err := b.WriteFile(large, randomBytes(3000)); err != nil {
		t.Fatal(err)
	}
	if got, err := b.ReadFile(small); err != nil || len(got) != 2000 {
		t.Fatalf("ReadFile within the limit: %d bytes, %v", len(got), err)
	}
	var le *sizelimit.Error
	if _, err := b.ReadFile(large); !errors.As(err, &le) {
		t.Fatalf("ReadFile over the limit: %v, want a sizelimit.Error", err)
	}
	if _, err := b.Open(large); !errors.As(err, &le) {
		t.Fatalf("Open over the limit: %v, want a sizelimit.Error", err)
	}
}
