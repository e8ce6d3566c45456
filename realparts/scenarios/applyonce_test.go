package scenarios

import (
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/apache/iceberg-go/table"

	"github.com/icereactor/reactor/streamwriter"
)

// Scenario 5. The commit-event path and the notification path on the same
// table agree: `reactor write` (the compose file's writer, with its
// environment) publishes a commit event for every commit while MinIO
// announces the same commit's metadata.json, and reactor applies each
// commit once. Applied twice, a partition would reach small_file_count
// with half the files; so every compaction's reason must name exactly the
// files its base snapshot holds, and reactor's file count must end equal
// to the table's.
func TestCommitEventsAndNotificationsAgree(t *testing.T) {
	s := need(t)
	s.resetStreams(t)
	l := s.openLake(t, "s5", "events")
	// Created before reactor starts (reactor write would create it too):
	// a table created while reactor runs is scenario 2's subject.
	l.createTable(nil)
	jobs := s.watchJobs(t, l.name)
	r := s.newReactor(t, scenarioThresholds("s5", "  small_file_count: 6\n"))
	r.start()
	diag := func() string { return jobs.summary() + r.p.tail(40) }

	const commits, rows, partitions = 12, 50, 2
	env, err := render(s.settings.Reactor.Env, s.vars)
	if err != nil {
		t.Fatal(err)
	}
	env = append(append(baseEnv(), env...), "REACTOR_INTERVAL=100ms", fmt.Sprintf("REACTOR_ROWS=%d", rows),
		fmt.Sprintf("REACTOR_PARTITIONS=%d", partitions), fmt.Sprintf("REACTOR_COMMITS=%d", commits),
		"REACTOR_DATA_DIR="+filepath.Join(r.dir, "writer-data"))
	writer, err := s.procs.start("reactor write", []string{s.reactorBin, "write", l.name}, env, filepath.Join(r.dir, "writer.log"))
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-writer.done:
		if writer.waitErr != nil {
			t.Fatalf("reactor write: %v\n%s", writer.waitErr, writer.tail(20))
		}
	case <-time.After(3 * time.Minute):
		writer.kill()
		t.Fatalf("reactor write did not finish %d commits\n%s", commits, writer.tail(20))
	}

	// What reactor write commits: row ids 1.. in commit order, commit i to
	// category p(i mod partitions).
	var want streamwriter.Tally
	for i := range commits {
		for id := int64(i*rows + 1); id <= int64((i+1)*rows); id++ {
			want.Add(id, fmt.Sprintf("p%d", i%partitions), streamwriter.Payload(id))
		}
	}
	eventually(t, "both partitions compacted", 2*time.Minute, func() bool {
		f := l.dataFiles()
		return jobs.succeeded("compact") >= 1 && len(f["p0"]) == 1 && len(f["p1"]) == 1
	}, diag)
	eventually(t, "both paths delivered every commit", time.Minute, func() bool {
		return r.metric("reactor_events_total", map[string]string{"source": "commit", "outcome": "applied"}) >= commits &&
			r.metric("reactor_objects_total", map[string]string{"outcome": "commit"}) >= commits
	}, diag)
	l.checkRows(want)

	tbl := l.load()
	for _, ev := range jobs.scheduled("compact") {
		for _, reason := range ev.Reasons {
			files := filesAt(t, l, tbl, ev.BaseSnapshotID, reason.Partition)
			if reason.Threshold != "small_file_count" || reason.Measured != int64(files) {
				t.Errorf("compaction %s of %s: reason %s=%d, but its base snapshot %d holds %d files there (a commit applied twice?)",
					ev.JobID[:8], reason.Partition, reason.Threshold, reason.Measured, ev.BaseSnapshotID, files)
			}
		}
	}
	live := 0
	for _, files := range l.dataFiles() {
		live += len(files)
	}
	eventually(t, "reactor's file count equal to the table's", time.Minute, func() bool {
		return int(r.metric("reactor_table_data_files", map[string]string{"table": l.name})) == live
	}, func() string {
		return fmt.Sprintf("reactor_table_data_files = %v, the table has %d\n%s",
			r.metric("reactor_table_data_files", map[string]string{"table": l.name}), live, diag())
	})
	l.checkReferencedExist()
	if f := jobs.failures(); len(f) > 0 {
		t.Errorf("jobs failed:\n%s", jobs.summary())
	}
	r.stop()
}

// filesAt counts the data files of partition key (category=VALUE) in the
// given snapshot.
func filesAt(t *testing.T, l *lake, tbl *table.Table, snapshotID int64, key string) int {
	t.Helper()
	tasks, err := tbl.Scan(table.WithSnapshotID(snapshotID)).PlanFiles(l.ctx)
	if err != nil {
		t.Fatalf("plan snapshot %d: %v", snapshotID, err)
	}
	n := 0
	for _, task := range tasks {
		if "category="+fmt.Sprint(task.File.Partition()[1000]) == key {
			n++
		}
	}
	return n
}
