package jobkind

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
)

// Every kind parses back from its name, marshals as it, and appears in
// All once, in the job order.
func TestKindsRoundTrip(t *testing.T) {
	want := []string{"compact", "convert_equality_deletes", "rewrite_position_deletes", "sort", "expire_snapshots",
		"delete_expired_files", "rewrite_manifests", "remove_orphans"}
	var got []string
	for _, k := range All() {
		got = append(got, k.String())
		p, err := Parse(k.String())
		if err != nil || p != k {
			t.Errorf("Parse(%q) = %v, %v", k, p, err)
		}
		b, err := json.Marshal(map[Kind]Kind{k: k})
		if err != nil || string(b) != `{"`+k.String()+`":"`+k.String()+`"}` {
			t.Errorf("marshal %v: %s, %v", k, b, err)
		}
		var back map[Kind]Kind
		if err := json.Unmarshal(b, &back); err != nil || back[k] != k {
			t.Errorf("unmarshal %s: %v, %v", b, back, err)
		}
	}
	if !slices.Equal(got, want) {
		t.Errorf("All = %v, want %v (the names are on the wire)", got, want)
	}
}

// The zero kind and unknown names are errors, never a compaction.
func TestBadKinds(t *testing.T) {
	if Kind(0).Valid() || Kind(0).String() != "kind(0)" {
		t.Errorf("the zero kind reads %q", Kind(0))
	}
	if _, err := Kind(0).MarshalText(); err == nil {
		t.Error("the zero kind marshals")
	}
	for _, name := range []string{"", "defragment", "Compact", " compact"} {
		if _, err := Parse(name); err == nil || !strings.Contains(err.Error(), "unknown job kind") {
			t.Errorf("Parse(%q): %v", name, err)
		}
	}
	var k Kind
	if err := json.Unmarshal([]byte(`"defragment"`), &k); err == nil {
		t.Error("an unknown kind unmarshals")
	}
}

// The kind table: base priorities and Spark procedures.
func TestKindTable(t *testing.T) {
	urgent := map[Kind]bool{Compact: true, ConvertEqualityDeletes: true, RewritePositionDeletes: true, RewriteManifests: true}
	for _, k := range All() {
		if got := k.Priority() == PriorityUrgent; got != urgent[k] {
			t.Errorf("%s urgent = %v", k, got)
		}
	}
	var spark []string
	for _, k := range Spark() {
		spark = append(spark, k.String())
	}
	if want := []string{"compact", "rewrite_position_deletes", "sort", "expire_snapshots", "rewrite_manifests", "remove_orphans"}; !slices.Equal(spark, want) {
		t.Errorf("Spark = %v, want %v", spark, want)
	}
	if PriorityUrgent.String() != "urgent" || PriorityBackground.String() != "background" {
		t.Error("priority labels changed")
	}
}

// A Set holds every kind in one byte.
func TestSet(t *testing.T) {
	var s Set
	for i, k := range All() {
		s = s.With(k)
		if got := s.Kinds(); len(got) != i+1 || !slices.Contains(got, k) || !s.Has(k) {
			t.Fatalf("after adding %s the set holds %v", k, got)
		}
	}
	if Set(0).Kinds() != nil || Set(0).With(Kind(0)) != 0 || Set(0).Has(Compact) {
		t.Error("an empty set lists no kind, and adding no kind keeps it empty")
	}
}
