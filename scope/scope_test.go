package scope

import (
	"fmt"
	"strings"
	"testing"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
)

func meta(t testing.TB, loc string, props map[string]string) table.Metadata {
	t.Helper()
	sc := iceberg.NewSchema(0, iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64, Required: true})
	m, err := table.NewMetadata(sc, iceberg.UnpartitionedSpec, table.UnsortedSortOrder, loc, props)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

type tbl struct {
	name, loc string
	props     map[string]string
}

func registry(t *testing.T, tables []tbl, limits ...string) (*Known, map[string]table.Metadata) {
	t.Helper()
	k, err := NewKnown(limits...)
	if err != nil {
		t.Fatal(err)
	}
	metas := map[string]table.Metadata{}
	var all []Roots
	for _, tb := range tables {
		m := meta(t, tb.loc, tb.props)
		metas[tb.name] = m
		all = append(all, RootsOf(tb.name, m))
	}
	k.Replace(all)
	return k, metas
}

func TestPlacement(t *testing.T) {
	type probe struct {
		table, loc string
		rule       Rule // "" allowed
	}
	cases := []struct {
		name   string
		tables []tbl
		limits []string
		probes []probe
	}{
		{"siblings", []tbl{{"db.a", "/wh/db/a", nil}, {"db.b", "/wh/db/b", nil}}, nil, []probe{
			{"db.a", "/wh/db/a/data/x.parquet", ""},
			{"db.a", "file:///wh/db/a/metadata/snap-1.avro", ""},
			{"db.a", "/wh/db/b/data/x.parquet", OutsideTable},
			{"db.a", "/elsewhere/x.parquet", OutsideTable},
			{"db.a", "/wh/db/a/data//x.parquet", NotCanonical},
			{"db.a", "/wh/db/a/data/../../b/data/x.parquet", NotCanonical},
			{"db.b", "/wh/db/b/data/x.parquet", ""},
		}},
		{"nested: the child's files are the child's", []tbl{{"db.a", "/wh/db/a", nil}, {"db.b", "/wh/db/a/b", nil}}, nil, []probe{
			{"db.a", "/wh/db/a/data/x.parquet", ""},
			{"db.a", "/wh/db/a/b/data/x.parquet", OtherTable},
			{"db.a", "/wh/db/a/b/metadata/v1.metadata.json", OtherTable},
			{"db.a", "/wh/db/a/b/stray.parquet", OtherTable},
			{"db.b", "/wh/db/a/b/data/x.parquet", ""},
		}},
		{"a data path pointed at another table's data", []tbl{
			{"db.a", "/wh/db/a", map[string]string{"write.data.path": "/wh/db/b/data"}}, {"db.b", "/wh/db/b", nil}}, nil, []probe{
			{"db.a", "/wh/db/b/data/x.parquet", OutsideTable},
			{"db.a", "/wh/db/a/data/x.parquet", ""}, // its location stays a root
			{"db.b", "/wh/db/b/data/x.parquet", ""},
		}},
		{"a data path pointed at a partition inside another table", []tbl{
			{"db.a", "/wh/db/a", map[string]string{"write.data.path": "/wh/db/b/data/p=1"}}, {"db.b", "/wh/db/b", nil}}, nil, []probe{
			{"db.a", "/wh/db/b/data/p=1/x.parquet", OutsideTable},
			{"db.b", "/wh/db/b/data/p=1/x.parquet", ""},
		}},
		{"a metadata path pointed at another table's location", []tbl{
			{"db.a", "/wh/db/a", map[string]string{"write.metadata.path": "/wh/db/b"}}, {"db.b", "/wh/db/b", nil}}, nil, []probe{
			{"db.a", "/wh/db/b/metadata/v3.metadata.json", OutsideTable},
			{"db.a", "/wh/db/b/other.json", OutsideTable},
		}},
		{"relocated into another table's data", []tbl{{"db.a", "/wh/db/b/data/p=1", nil}, {"db.b", "/wh/db/b", nil}}, nil, []probe{
			{"db.a", "/wh/db/b/data/p=1/x.parquet", OutsideTable},
			{"db.a", "/wh/db/b/data/p=1/data/x.parquet", OutsideTable},
			{"db.b", "/wh/db/b/data/p=1/x.parquet", ""},
		}},
		{"relocated onto another table", []tbl{{"db.a", "/wh/db/b", nil}, {"db.b", "/wh/db/b", nil}}, nil, []probe{
			{"db.a", "/wh/db/b/data/x.parquet", OtherTable}, // one location, two tables: nobody's
			{"db.b", "/wh/db/b/data/x.parquet", OtherTable},
			{"db.b", "/wh/db/b/x.parquet", OtherTable},
		}},
		{"relocated above every table", []tbl{{"db.a", "/wh", nil}, {"db.b", "/wh/db/b", nil}}, nil, []probe{
			{"db.a", "/wh/db/b/data/x.parquet", OtherTable},
			{"db.a", "/wh/data/x.parquet", ""},
			{"db.b", "/wh/db/b/data/x.parquet", ""},
		}},
		{"a shared data path is nobody's", []tbl{
			{"db.a", "/wh/db/a", map[string]string{"write.data.path": "/wh/shared"}},
			{"db.b", "/wh/db/b", map[string]string{"write.data.path": "/wh/shared"}}}, nil, []probe{
			{"db.a", "/wh/shared/0101/db/a/x.parquet", OutsideTable},
			{"db.b", "/wh/shared/0101/db/b/x.parquet", OutsideTable},
			{"db.a", "/wh/db/a/metadata/snap-1.avro", ""},
		}},
		{"object stores: aliases, one bucket", []tbl{{"db.a", "s3a://lake/db/a", nil}, {"db.b", "s3://lake/db/b", nil}}, nil, []probe{
			{"db.a", "s3://lake/db/a/data/x.parquet", ""},
			{"db.a", "s3n://lake/db/a/data/x.parquet", ""},
			{"db.a", "s3://lake/db/b/data/x.parquet", OutsideTable},
			{"db.a", "s3://other/db/a/data/x.parquet", OutsideTable},
			{"db.a", "S3://LAKE/db/a/data/x.parquet", NotCanonical},
		}},
		{"GCS: one bucket, a neighbour whose name extends the table's", []tbl{{"db.a", "gs://lake/wh/db/a", nil}, {"db.ab", "gs://lake/wh/db/ab", nil}}, nil, []probe{
			{"db.a", "gs://lake/wh/db/a/data/x.parquet", ""},
			{"db.a", "gs://lake/wh/db/ab/data/x.parquet", OutsideTable},
			{"db.a", "gs://other/wh/db/a/data/x.parquet", OutsideTable},
			{"db.a", "s3://lake/wh/db/a/data/x.parquet", OutsideTable},
			{"db.a", "gs://lake/wh/db/a/data//x.parquet", NotCanonical},
			{"db.a", "gs://user@lake/wh/db/a/data/x.parquet", NotCanonical},
			{"db.ab", "gs://lake/wh/db/ab/data/x.parquet", ""},
		}},
		{"Azure: four schemes and two endpoints reach one blob", []tbl{
			{"db.a", "abfss://lake@acct.dfs.core.windows.net/wh/db/a", nil},
			{"db.b", "wasbs://lake@acct.blob.core.windows.net/wh/db/a/b", nil}}, nil, []probe{
			{"db.a", "abfss://lake@acct.dfs.core.windows.net/wh/db/a/data/x.parquet", ""},
			{"db.a", "abfs://lake@acct.dfs.core.windows.net/wh/db/a/data/x.parquet", ""},
			{"db.a", "wasbs://lake@acct.blob.core.windows.net/wh/db/a/data/x.parquet", ""},
			// The nested table is the nested table's, however it is spelt.
			{"db.a", "abfss://lake@acct.dfs.core.windows.net/wh/db/a/b/data/x.parquet", OtherTable},
			{"db.a", "wasb://lake@acct.blob.core.windows.net/wh/db/a/b/data/x.parquet", OtherTable},
			{"db.a", "abfss://pond@acct.dfs.core.windows.net/wh/db/a/data/x.parquet", OutsideTable},
			{"db.a", "abfss://lake@other.dfs.core.windows.net/wh/db/a/data/x.parquet", OutsideTable},
			{"db.a", "abfss://acct.dfs.core.windows.net/wh/db/a/data/x.parquet", NotCanonical},
			{"db.b", "abfss://lake@acct.dfs.core.windows.net/wh/db/a/b/data/x.parquet", ""},
		}},
		{"deletion scope", []tbl{{"db.a", "/wh/db/a", map[string]string{"write.data.path": "/outside/a"}}}, []string{"/wh"}, []probe{
			{"db.a", "/wh/db/a/data/x.parquet", ""},
			{"db.a", "/outside/a/x.parquet", OutsideTable},
		}},
		{"a data path outside the location, claimed by nobody else", []tbl{{"db.a", "/wh/db/a", map[string]string{"write.data.path": "/data/a"}}}, nil, []probe{
			{"db.a", "/data/a/x.parquet", ""},
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			k, metas := registry(t, tc.tables, tc.limits...)
			for _, p := range tc.probes {
				c := k.Check(p.table, metas[p.table])
				got, refusal := c.Allow(p.loc)
				switch {
				case p.rule == "" && refusal != nil:
					t.Errorf("%s deleting %s: refused %v; want allowed", p.table, p.loc, refusal)
				case p.rule != "" && refusal == nil:
					t.Errorf("%s deleting %s: allowed as %s; want refused (%s)", p.table, p.loc, got, p.rule)
				case p.rule != "" && refusal.Rule != p.rule:
					t.Errorf("%s deleting %s: refused %v; want rule %s", p.table, p.loc, refusal, p.rule)
				}
			}
		})
	}
}

func TestGCEnabledReadsAsJavaDoes(t *testing.T) {
	for value, want := range map[string]bool{"": true, "true": true, "TRUE": true, "True": true,
		"false": false, "False": false, "0": false, "1": false, "no": false, " true": false, "yes": false} {
		props := map[string]string{}
		if value != "" {
			props[GCEnabledKey] = value
		}
		k, metas := registry(t, []tbl{{"db.a", "/wh/db/a", props}})
		if got := GCEnabled(metas["db.a"]); got != want {
			t.Errorf("gc.enabled=%q: enabled %v, want %v", value, got, want)
		}
		_, refusal := k.Check("db.a", metas["db.a"]).Allow("/wh/db/a/data/x.parquet")
		if want != (refusal == nil) || !want && refusal.Rule != GCDisabled {
			t.Errorf("gc.enabled=%q: refusal %v", value, refusal)
		}
		// A losing attempt's own output goes whatever gc.enabled says.
		if _, refusal := k.Check("db.a", metas["db.a"]).AllowOwnOutput("/wh/db/a/data/x.parquet"); refusal != nil {
			t.Errorf("gc.enabled=%q: own output refused: %v", value, refusal)
		}
	}
}

func TestWithinDropsRootsARecordDidNotHave(t *testing.T) {
	k, metas := registry(t, []tbl{{"db.a", "/wh/db/a", map[string]string{"write.data.path": "/data/a-now"}}})
	c := k.Check("db.a", metas["db.a"])
	if _, r := c.Allow("/data/a-now/x.parquet"); r != nil {
		t.Fatalf("the current data path is a root: %v", r)
	}
	then := c.Within([]string{"/wh/db/a", "/wh/db/a/data"})
	if _, r := then.Allow("/data/a-now/x.parquet"); r == nil || r.Rule != OutsideTable {
		t.Errorf("a data path set after the record: %v, want outside_table", r)
	}
	if _, r := then.Allow("/wh/db/a/data/x.parquet"); r != nil {
		t.Errorf("the location is still a root: %v", r)
	}
	if _, r := c.Within(nil).Allow("/data/a-now/x.parquet"); r == nil {
		t.Errorf("a record without roots leaves only the location")
	}
	if _, r := c.Within([]string{"/wh/db/a/data"}).Allow("/wh/db/a/data/x.parquet"); r != nil {
		t.Errorf("a recorded data directory under the location: %v", r)
	}
	if _, r := c.Within([]string{"/wh/db/a/data"}).Allow("/wh/db/a/metadata/m.avro"); r == nil {
		t.Errorf("a file outside what the record named was allowed")
	}
	if _, r := c.Within([]string{"/wh/db/a/data/../../.."}).Allow("/wh/db/a/data/x.parquet"); r == nil {
		t.Errorf("a record naming only unusable roots allowed a file")
	}
}

func TestPartialMetadataRefusesEverything(t *testing.T) {
	full := fmt.Sprintf(`{"format-version":2,"table-uuid":"9c12d441-03fe-4693-9a96-a0705ddf69c1","location":"/wh/db/a",
"last-sequence-number":2,"last-updated-ms":1700000000000,"last-column-id":1,"current-schema-id":0,
"schemas":[{"type":"struct","schema-id":0,"fields":[{"id":1,"name":"id","required":true,"type":"long"}]}],
"default-spec-id":0,"partition-specs":[{"spec-id":0,"fields":[]}],"last-partition-id":999,
"default-sort-order-id":0,"sort-orders":[{"order-id":0,"fields":[]}],"properties":{},
"current-snapshot-id":2,"refs":{"main":{"snapshot-id":2,"type":"branch"}},
"snapshots":[%s{"snapshot-id":2,"parent-snapshot-id":1,"sequence-number":2,"timestamp-ms":1700000000000,"manifest-list":"/wh/db/a/metadata/snap-2.avro","summary":{"operation":"append"},"schema-id":0}],
"snapshot-log":[{"snapshot-id":1,"timestamp-ms":1690000000000},{"snapshot-id":2,"timestamp-ms":1700000000000}],"metadata-log":[]}`,
		`{"snapshot-id":1,"sequence-number":1,"timestamp-ms":1690000000000,"manifest-list":"/wh/db/a/metadata/snap-1.avro","summary":{"operation":"append"},"schema-id":0},`)
	whole, err := table.ParseMetadataString(full)
	if err != nil {
		t.Fatal(err)
	}
	refsOnly, err := table.ParseMetadataString(strings.Replace(full,
		`{"snapshot-id":1,"sequence-number":1,"timestamp-ms":1690000000000,"manifest-list":"/wh/db/a/metadata/snap-1.avro","summary":{"operation":"append"},"schema-id":0},`, "", 1))
	if err != nil {
		t.Fatal(err)
	}
	k, _ := registry(t, nil)
	if p := Partial(whole); p != "" {
		t.Fatalf("whole metadata read as partial: %s", p)
	}
	if _, r := k.Check("db.a", whole).Allow("/wh/db/a/data/x.parquet"); r != nil {
		t.Fatalf("whole: %v", r)
	}
	_, r := k.Check("db.a", refsOnly).Allow("/wh/db/a/data/x.parquet")
	if r == nil || r.Rule != PartialMetadata || !strings.Contains(r.Detail, "snapshot 1") {
		t.Errorf("metadata without snapshot 1: %v, want partial_metadata naming it", r)
	}
}

func TestRegistryIsSafeBeforeReady(t *testing.T) {
	k, err := NewKnown()
	if err != nil {
		t.Fatal(err)
	}
	if k.IsReady() {
		t.Fatal("ready before a listing")
	}
	k.Set(RootsOf("db.b", meta(t, "/wh/db/a/b", nil)))
	c := k.Check("db.a", meta(t, "/wh/db/a", nil))
	if _, r := c.Allow("/wh/db/a/b/data/x"); r == nil || r.Rule != OtherTable {
		t.Errorf("a table set before the first listing is known: %v", r)
	}
	k.Replace(nil)
	if !k.IsReady() {
		t.Error("not ready after a listing")
	}
	if _, err := NewKnown("relative/path"); err == nil {
		t.Error("a relative deletion scope accepted")
	}
}

func TestAncestors(t *testing.T) {
	for in, want := range map[string]string{
		"s3://b/a/c/f":     "s3://b/a/c s3://b/a s3://b",
		"file:///tmp/x/y":  "file:///tmp/x file:///tmp",
		"s3://b":           "",
		"gs://b/f.parquet": "gs://b",
	} {
		if got := strings.Join(ancestors(in), " "); got != want {
			t.Errorf("ancestors(%q) = %q, want %q", in, got, want)
		}
	}
}

// S3 Tables tables are told by their location's bucket: AWS names every
// table bucket's warehouse location so, and only s3 schemes reach one.
func TestS3TableBucket(t *testing.T) {
	for _, tc := range []struct{ loc, want string }{
		{"s3://63a8e430-6e0b-46f5-k833abtwr6s8tmtsycedn8s4yc3xhuse1b--table-s3", "63a8e430-6e0b-46f5-k833abtwr6s8tmtsycedn8s4yc3xhuse1b--table-s3"},
		{"s3://63a8e430-6e0b--table-s3/metadata/00001.metadata.json", "63a8e430-6e0b--table-s3"},
		{"s3a://abc--table-s3/data", "abc--table-s3"},
		{"S3N://ABC--TABLE-S3/data", "ABC--TABLE-S3"},
		{"s3://lake/warehouse/abc--table-s3", ""}, // a directory, not the bucket
		{"s3://lake--table-s3x/t", ""},
		{"s3://lake-table-s3/t", ""},
		{"gs://abc--table-s3/t", ""},
		{"file:///tmp/abc--table-s3", ""},
		{"", ""},
		{"::not a url", ""},
	} {
		if got := S3TableBucket(tc.loc); got != tc.want {
			t.Errorf("S3TableBucket(%q) = %q, want %q", tc.loc, got, tc.want)
		}
	}
}
