package manifestread

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/apache/iceberg-go"
)

// FuzzDecode feeds arbitrary bytes to the fast path as a manifest (the
// seed corpus under testdata/fuzz/FuzzDecode: manifests iceberg-go wrote,
// v1-v3, data and deletes). It must not panic, and whatever it accepts
// iceberg-go's reader must read to the same entries: where the two would
// differ, the fast path has to refuse (and Fetch then answers with
// iceberg-go's reading).
func FuzzDecode(f *testing.F) {
	r := New(4)
	f.Fuzz(func(t *testing.T, file []byte, version uint8, deletes bool) {
		v := int(version%3) + 1
		content := iceberg.ManifestContentData
		if deletes {
			content = iceberg.ManifestContentDeletes
		}
		m := iceberg.NewManifestFile(v, "fuzz.avro", int64(len(file)), 1, 77).SequenceNum(5, 1).Content(content).Build()
		got, err := r.Decode(file, m, false)
		if err != nil {
			return
		}
		want, werr := icebergRead(m, file)
		if werr != nil {
			t.Fatalf("the fast path read %d entries from a manifest iceberg-go refuses: %v", len(got), werr)
		}
		sameEntries(t, "fuzz", want, got)
	})
}

func icebergRead(m iceberg.ManifestFile, file []byte) (entries []iceberg.ManifestEntry, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("iceberg-go panicked: %v", p)
		}
	}()
	return iceberg.ReadManifest(m, bytes.NewReader(file), false)
}

// FuzzDecodeList is FuzzDecode for manifest lists (seeds: lists
// iceberg-go wrote, v1-v3): no panic, and what the fast path accepts
// iceberg-go's ReadManifestList reads the same.
func FuzzDecodeList(f *testing.F) {
	r := New(4)
	f.Fuzz(func(t *testing.T, list []byte) {
		got, err := r.DecodeList(list)
		if err != nil {
			return
		}
		want, werr := icebergReadList(list)
		if werr != nil {
			t.Fatalf("the fast path read %d manifests from a list iceberg-go refuses: %v", len(got), werr)
		}
		sameManifests(t, "fuzz", want, got)
	})
}

func icebergReadList(list []byte) (ms []iceberg.ManifestFile, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("iceberg-go panicked: %v", p)
		}
	}()
	return iceberg.ReadManifestList(bytes.NewReader(list))
}
