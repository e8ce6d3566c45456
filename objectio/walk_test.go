package objectio_test

import (
	"context"
	"fmt"
	"io/fs"
	"slices"
	"testing"

	iceio "github.com/apache/iceberg-go/io"

	"github.com/icereactor/reactor/objectio"
)

// TestWalkDirIsBlobfsWalkDir: on a bucket, objectio's WalkDir (listings
// several at a time) names the same files and directories in the same
// order as blobfs's (one at a time), with the same requests, for a root
// with and without its directory marker, from the bucket's root and by
// key.
func TestWalkDirIsBlobfsWalkDir(t *testing.T) {
	bucket := newBucket(t)
	for _, k := range []string{"t/metadata/v1.json", "t/metadata/snap-1.avro", "t/data/p=1/a.parquet",
		"t/data/p=1/b.parquet", "t/data/p=2/c.parquet", "t/data/p=2/_temporary/x", "t/data/p=3/d.parquet",
		"t/data/p=3/e/f.parquet", "t/top.txt", "u/marked/", "u/marked/g.parquet", "v.txt"} {
		body := []byte(k)
		if k[len(k)-1] == '/' {
			body = nil // a directory marker holds no data
		}
		put(t, bucket, k, body)
	}
	fsys, err := iceio.LoadFS(context.Background(), props(objectio.ReadConcurrencyProperty, "4"), "s3://"+bucket)
	if err != nil {
		t.Fatal(err)
	}
	ahead := fsys.(*objectio.FileIO)
	walk := func(w func(string, fs.WalkDirFunc) error, root string) ([]string, map[string]int) {
		var got []string
		testFront.reset()
		if err := w(root, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			info, ierr := d.Info()
			if ierr != nil {
				return ierr
			}
			got = append(got, fmt.Sprintf("%s dir=%v size=%d", path, d.IsDir(), info.Size()))
			return nil
		}); err != nil {
			t.Fatalf("walk %s: %v", root, err)
		}
		reqs, _ := testFront.reset()
		return got, reqs
	}
	for _, root := range []string{"s3://" + bucket + "/t", "s3://" + bucket + "/u/marked",
		"s3://" + bucket, "t/data"} {
		want, wantReqs := walk(ahead.FileIO.WalkDir, root)
		got, gotReqs := walk(ahead.WalkDir, root)
		if len(want) == 0 || !slices.Equal(got, want) {
			t.Fatalf("root %s: walked\n%v\nwant (blobfs)\n%v", root, got, want)
		}
		if fmt.Sprint(gotReqs) != fmt.Sprint(wantReqs) {
			t.Errorf("root %s: requests %v, blobfs made %v", root, gotReqs, wantReqs)
		}
	}
}
