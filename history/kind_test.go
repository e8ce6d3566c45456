package history

import (
	"encoding/json"
	"testing"
)

// The kinds keep the spellings users and stored batches see: the pending
// deletions' JSON and the delete-file metrics' label.
func TestKindSpellings(t *testing.T) {
	want := map[Kind]string{ManifestList: "manifest_list", Manifest: "manifest", Data: "data",
		PositionDelete: "position_delete", EqualityDelete: "equality_delete", Statistics: "statistics"}
	for k, s := range want {
		b, err := json.Marshal(k)
		if err != nil || string(b) != `"`+s+`"` {
			t.Errorf("%d marshals as %s, %v; want %q", k, b, err, s)
		}
		var back Kind
		if err := json.Unmarshal(b, &back); err != nil || back != k {
			t.Errorf("%s unmarshals as %d, %v", b, back, err)
		}
	}
	if PositionDelete.MetricLabel() != "position" || EqualityDelete.MetricLabel() != "equality" {
		t.Errorf("metric labels %q, %q; want position, equality", PositionDelete.MetricLabel(), EqualityDelete.MetricLabel())
	}
	var k Kind
	if err := json.Unmarshal([]byte(`"position_deletes"`), &k); err == nil {
		t.Error("an unknown spelling was accepted")
	}
}
