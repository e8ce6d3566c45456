package planner

import (
	"reflect"
	"testing"
	"time"

	"github.com/apache/iceberg-go/table"
)

// Outlook says, from the planner's state alone, what Explain says reading
// the table when the planner's history holds nothing Explain cannot know
// (no job ran yet): the same checks, the same jobs, the same waits; only
// orphan cleanup, which Explain does not assess, and Explain's list of
// what it cannot know differ.
func TestOutlookIsExplainOfTheHeldState(t *testing.T) {
	f := newSchedFixture(t, "defaults:\n  target_file_size: 1MiB\n  small_file_count: 3\n  min_input_files: 2\n  quiet_period: 1s\n  compact_when_quiet_after: 1m\n  orphan_listing_interval: 100000h\n")
	if got := f.p.Tables(); len(got) != 0 {
		t.Fatalf("tables before any event: %v", got)
	}
	if _, ok := f.p.Outlook("db.t", time.Now()); ok {
		t.Fatal("an outlook of a table the planner has not read")
	}
	f.commit("a", 2)
	f.commit("b", 4)
	f.at(0)
	if got := f.p.Tables(); !reflect.DeepEqual(got, []string{"db.t"}) {
		t.Fatalf("tables %v, want [db.t]", got)
	}
	tbl, err := f.cat.LoadTable(f.ctx, table.Identifier{"db", "t"})
	if err != nil {
		t.Fatal(err)
	}
	last := time.UnixMilli(tbl.CurrentSnapshot().TimestampMs)
	for _, at := range []time.Duration{0, 3 * time.Second, 72 * time.Second} {
		now := last.Add(at)
		want, err := Explain(f.ctx, tbl, f.p.cfg.Load(), now)
		if err != nil {
			t.Fatal(err)
		}
		got, ok := f.p.Outlook("db.t", now)
		if !ok {
			t.Fatal("no outlook of a table the planner holds")
		}
		if len(got.Unknown) != 0 || len(want.Unknown) == 0 {
			t.Errorf("at +%s: outlook says it does not know %q, explain %q", at, got.Unknown, want.Unknown)
		}
		if !reflect.DeepEqual(got.Partitions, want.Partitions) || !reflect.DeepEqual(got.TableWide[:3], want.TableWide[:3]) ||
			got.SnapshotID != want.SnapshotID || len(got.Jobs) != len(want.Jobs) {
			t.Errorf("at +%s:\noutlook %+v\nexplain %+v", at, got, want)
			continue
		}
		for i := range got.Jobs {
			if got.Jobs[i].Kind != want.Jobs[i].Kind || !reflect.DeepEqual(got.Jobs[i].Reasons, want.Jobs[i].Reasons) {
				t.Errorf("at +%s: job %d outlook %+v, explain %+v", at, i, got.Jobs[i], want.Jobs[i])
			}
		}
		if at == 3*time.Second && len(got.Jobs) == 0 {
			t.Errorf("at +3s: b has 4 small files over small_file_count 3, want a compaction due")
		}
	}
}
