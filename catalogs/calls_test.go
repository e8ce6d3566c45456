package catalogs

import "testing"

func TestCallCountsByKind(t *testing.T) {
	for _, tc := range []struct {
		op, kind string
	}{
		{"load db.t", CallLoad},
		{"load namespace db", CallOther},
		{"locate db.t", CallLocate},
		{"commit to db.t", CallCommit},
		{"list namespaces", CallList},
		{CallList, CallList},
		{"create table db.t", CallOther},
		{"check namespace db", CallOther},
		{"", CallOther},
	} {
		var c Catalog
		c.calls.count(tc.op)
		for kind, n := range c.CallCounts() {
			want := int64(0)
			if kind == tc.kind {
				want = 1
			}
			if n != want {
				t.Errorf("%q: %s counted %d, want %d", tc.op, kind, n, want)
			}
		}
	}
}
