package worker

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/icereactor/reactor/events"
	"github.com/icereactor/reactor/jobkind"
	"github.com/icereactor/reactor/streamwriter"
)

const deleteThresholds = `
defaults:
  target_file_size: 1MiB
  small_file_count: 100
  min_input_files: 5
  quiet_period: 100ms
  cooldown: 500ms
  commit_retry_time: 30s
  delete_min_input_files: 5
  delete_file_ratio: 0.5
  deleted_row_ratio: 0.3
`

// A CDC-style writer deletes from two partitions: partition a collects
// small position-delete files and few deleted rows, so reactor merges its
// deletes; partition b collects equality deletes, which only a compaction
// applying them removes. Each job says why in its reason, and the table
// holds exactly the live rows afterwards.
func TestDeleteDebtPicksTheCheaperJob(t *testing.T) {
	h := newHarness(t, deleteThresholds, streamwriter.MergeOnReadProperties)
	sub, err := h.conn.SubscribeSync(events.DefaultJobSubjectPrefix + ".succeeded.>")
	if err != nil {
		t.Fatal(err)
	}
	for range 4 {
		h.commit("a", 50) // ids 1..200
	}
	for range 4 {
		h.commit("b", 50) // ids 201..400
	}
	for i := range int64(6) {
		if _, err := h.writer.DeleteRows(h.ctx, 1+i*30); err != nil {
			t.Fatal(err)
		}
	}
	for i := range int64(5) {
		if _, err := h.writer.DeleteKeys(h.ctx, 201+i*30); err != nil {
			t.Fatal(err)
		}
	}
	w := h.start()

	jobs := map[string]events.JobEvent{}
	for len(jobs) < 2 {
		msg, err := sub.NextMsg(2 * time.Minute)
		if err != nil {
			t.Fatalf("jobs so far %v: %v\nlogs:\n%s", jobs, err, h.logs.String())
		}
		var ev events.JobEvent
		if err := json.Unmarshal(msg.Data, &ev); err != nil {
			t.Fatal(err)
		}
		if ev.Outcome == "succeeded" {
			jobs[ev.Kind] = ev
		}
	}
	merge, compact := jobs[jobkind.RewritePositionDeletes.String()], jobs[jobkind.Compact.String()]
	if len(merge.Partitions) != 1 || merge.Partitions[0] != "category=a" || merge.Reasons[0].Threshold != "delete_file_ratio" ||
		!strings.Contains(merge.Reasons[0].Note, "cheaper than rewriting") {
		t.Errorf("position-delete rewrite %+v, want partition a for delete_file_ratio", merge)
	}
	if merge.Counts["rewritten_delete_files_count"] != 6 || merge.Counts["added_delete_files_count"] != 1 {
		t.Errorf("position-delete rewrite counts %v, want 6 merged into 1", merge.Counts)
	}
	if len(compact.Partitions) != 1 || compact.Partitions[0] != "category=b" ||
		!strings.Contains(compact.Reasons[0].Note, "equality delete") {
		t.Errorf("compaction %+v, want partition b because of its equality deletes", compact)
	}
	if compact.Counts["removed_delete_files_count"] != 5 || compact.Counts["rewritten_data_files_count"] != 4 {
		t.Errorf("compaction counts %v, want 4 data files rewritten and the 5 equality deletes removed", compact.Counts)
	}
	for _, reason := range []string{"cheaper than rewriting", "equality delete files: only a compaction"} {
		if !strings.Contains(h.logs.String(), reason) {
			t.Errorf("log lacks the reason %q", reason)
		}
	}
	got := h.contents()
	if got.Total != h.writer.Written() {
		t.Errorf("table holds %v, writer's live rows %v", got.Total, h.writer.Written())
	}
	for i := range int64(6) {
		if got.IDs[1+i*30] != 0 || (i < 5 && got.IDs[201+i*30] != 0) {
			t.Errorf("deleted id %d or %d is visible again", 1+i*30, 201+i*30)
		}
	}
	_, parts := w.Planner.TableCounters("db.events")
	for _, p := range parts {
		if p.Key == "category=a" && (p.PositionDeleteFiles != 1 || p.DataFiles != 4) {
			t.Errorf("partition a after the merge: %+v, want 4 data files and 1 delete file", p.Counters)
		}
		if p.Key == "category=b" && (p.DeleteFiles() != 0 || p.DataFiles != 1) {
			t.Errorf("partition b after the compaction: %+v, want 1 data file and no delete file", p.Counters)
		}
	}
}
