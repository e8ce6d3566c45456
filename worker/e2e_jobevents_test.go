package worker

import (
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/icereactor/reactor/events"
)

// A subscriber to reactor.jobs.> sees the compaction job scheduled, started
// and succeeded, in that order, with the reason and the counts Spark's
// rewrite_data_files returns matching what the table shows.
func TestJobLifecycleEvents(t *testing.T) {
	h := newHarness(t, testThresholds, nil)
	sub, err := h.conn.SubscribeSync(events.DefaultJobSubjectPrefix + ".>")
	if err != nil {
		t.Fatal(err)
	}
	// The files exist before reactor starts, so the first job sees all of
	// them and its counts are known exactly.
	for range 5 {
		h.commit("a", 10)
	}
	before := h.files()["a"]
	bytesBefore := h.bytes("a")
	h.start()

	var got []events.JobEvent
	for len(got) == 0 || !got[len(got)-1].Terminal() {
		msg, err := sub.NextMsg(time.Minute)
		if err != nil {
			t.Fatalf("job events so far %+v: %v", got, err)
		}
		var ev events.JobEvent
		if err := json.Unmarshal(msg.Data, &ev); err != nil {
			t.Fatalf("undecodable job event %q: %v", msg.Data, err)
		}
		if want := events.JobSubject(events.DefaultJobSubjectPrefix, ev.Phase, "db.events"); msg.Subject != want {
			t.Errorf("event on %s, want %s", msg.Subject, want)
		}
		got = append(got, ev)
	}
	phases := make([]string, len(got))
	for i, ev := range got {
		phases[i] = ev.Phase
		if ev.JobID != got[0].JobID || ev.Kind != "compact" || ev.Table != "db.events" {
			t.Errorf("event %d = %+v, want the same compact job on db.events", i, ev)
		}
	}
	if !slices.Equal(phases, []string{events.JobScheduled, events.JobStarted, events.JobSucceeded}) {
		t.Fatalf("phases = %v", phases)
	}
	sched := got[0]
	if len(sched.Reasons) != 1 || sched.Reasons[0].Threshold != "small_file_count" || sched.Reasons[0].Measured != 5 ||
		sched.Reasons[0].Limit != 5 || !slices.Equal(sched.Partitions, []string{"category=a"}) {
		t.Errorf("scheduled event reasons %+v partitions %v", sched.Reasons, sched.Partitions)
	}
	done := got[2]
	after := h.files()["a"]
	want := map[string]int64{
		"rewritten_data_files_count": int64(len(before)),
		"added_data_files_count":     int64(len(after)),
		"rewritten_bytes_count":      bytesBefore,
		"failed_data_files_count":    0,
		"removed_delete_files_count": 0,
	}
	for k, v := range want {
		if done.Counts[k] != v {
			t.Errorf("counts[%s] = %d, want %d (all counts %v)", k, done.Counts[k], v, done.Counts)
		}
	}
	if len(done.Counts) != len(want) {
		t.Errorf("counts %v, want exactly the keys of %v", done.Counts, want)
	}
	if done.Outcome != "succeeded" || done.Commits != 1 || done.CommittedSnapshotID != h.load().CurrentSnapshot().SnapshotID {
		t.Errorf("succeeded event %+v; table at snapshot %d", done, h.load().CurrentSnapshot().SnapshotID)
	}
	if h.contents().Total != h.writer.Written() {
		t.Errorf("table rows changed by compaction")
	}
}
