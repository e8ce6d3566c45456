package deletions

import (
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/icereactor/reactor/history"
)

// FuzzOpenRecord feeds arbitrary bytes to the record decoder as every kind
// of record: it must never panic, must refuse anything it does not accept
// with a *Refusal, and what it accepts must be what the key signed.
func FuzzOpenRecord(f *testing.F) {
	keys := testKeys(f, 1)
	binding := TableRef{Location: "s3://lake/db/t", UUID: "9c12d441-03fe-4693-9a96-a0705ddf69c1"}.binding()
	at := time.Date(2026, 12, 6, 0, 0, 0, 0, time.UTC)
	for kind, v := range map[string]any{
		KindPendingDeletes: Batch{Table: "db.t", JobID: "j", Due: at, Files: []File{{Path: "s3://lake/db/t/data/a.parquet", Kind: history.Data}}},
		KindExpiryIntent:   Intent{Table: "db.t", JobID: "j", BaseMetadata: "s3://lake/db/t/metadata/v1.metadata.json", Written: at},
		KindOutputIntent:   OutputIntent{Table: "db.t", JobID: "j", Token: "9c12d441-03fe-4693-9a96-a0705ddf69c1", Dirs: []string{"s3://lake/db/t/data"}},
		KindOwnSnapshots:   OwnSnapshots{Table: "db.t", JobID: "j", SnapshotIDs: []int64{1, 2}},
	} {
		sealed, err := keys.seal(kind, binding, v)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(sealed)
		plain, _ := json.Marshal(v)
		f.Add(plain)
	}
	f.Add([]byte(`{"reactor_record":1,"kind":"pending-deletes","body":null,"mac":""}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, kind := range []string{KindPendingDeletes, KindExpiryIntent, KindOutputIntent, KindOwnSnapshots} {
			var v map[string]any
			err := keys.open("x", data, kind, binding, &v)
			if err != nil {
				var r *Refusal
				if !errors.As(err, &r) {
					t.Fatalf("%s: an error that is not a refusal: %v", kind, err)
				}
				continue
			}
			var env envelope
			if json.Unmarshal(data, &env) != nil || env.Kind != kind || env.Table != binding {
				t.Fatalf("%s: accepted a record not sealed for it: %q", kind, data)
			}
		}
		var b Batch
		_ = decodeUnverified(data, &b)
	})
}
