package main

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/iceberg-go/table"
	"github.com/nats-io/nats.go"

	"github.com/icereactor/reactor/deletions"
	"github.com/icereactor/reactor/events"
	"github.com/icereactor/reactor/streamwriter"
)

// Expiry beside a busy writer commits and bounds the history; the files it
// unlinks are deleted only once min_reader_margin has passed since, also
// when reactor is killed (SIGKILL) between the expiry and the deletion: the
// restarted reactor finds the pending list in the table's storage and
// deletes the files when due, none early. A reader that planned on the
// oldest snapshot before any of it reads every row to the end.
func TestExpiryDeletionSurvivesSIGKILL(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	dir := t.TempDir()
	f := newRunFixture(t, ctx, dir)
	srv, nc, cat, ident, writer := f.srv, f.nc, f.cat, f.ident, f.writer
	for i := range 12 {
		if _, err := writer.Commit(ctx, []string{"a", "b"}[i%2], 50); err != nil {
			t.Fatal(err)
		}
	}
	// The slow reader plans now, on the table as it is before any job.
	reading, err := cat.LoadTable(ctx, ident)
	if err != nil {
		t.Fatal(err)
	}
	tasks, err := reading.Scan().PlanFiles(ctx)
	if err != nil {
		t.Fatal(err)
	}
	readerWants := writer.Written().Rows

	const margin = 20 * time.Second
	thresholdsFile := filepath.Join(dir, "thresholds.yaml")
	if err := os.WriteFile(thresholdsFile, []byte("defaults: {target_file_size: 1MiB, small_file_count: 5, quiet_period: 0s, "+
		"cooldown: 1s, snapshot_count: 10, min_reader_margin: "+margin.String()+"}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	succeeded := make(chan *nats.Msg, 256)
	sub, err := nc.ChanSubscribe(events.DefaultJobSubjectPrefix+".succeeded.>", succeeded)
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Unsubscribe()
	start := func() (*exec.Cmd, *syncBuffer, chan error) {
		args, _ := json.Marshal([]string{"run", "--nats-url", srv.URL(), "--data-dir", dir, "--thresholds", thresholdsFile,
			"--http-addr", "", "--status-addr", "", "--notification-subject", ""})
		var stderr syncBuffer
		cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), runAsReactor+"=1", runAsReactor+"_ARGS="+string(args))
		cmd.Stdout, cmd.Stderr = &stderr, &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		exited := make(chan error, 1)
		go func() { exited <- cmd.Wait() }()
		return cmd, &stderr, exited
	}

	// A busy writer while reactor compacts and expires.
	writeCtx, stopWriting := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; writeCtx.Err() == nil; i++ {
			if _, err := writer.Commit(writeCtx, []string{"a", "b"}[i%2], 20); err != nil && writeCtx.Err() == nil {
				t.Errorf("writer: %v", err)
				return
			}
			time.Sleep(50 * time.Millisecond)
		}
	}()
	cmd, logs, exited := start()
	// Wait for an expiry that deferred files.
	var expiry events.JobEvent
	for expiry.JobID == "" {
		select {
		case msg := <-succeeded:
			var ev events.JobEvent
			if err := json.Unmarshal(msg.Data, &ev); err != nil {
				t.Fatal(err)
			}
			if ev.Kind == "expire_snapshots" && ev.Counts["deletion_deferred_files_count"] > 0 {
				expiry = ev
			}
		case err := <-exited:
			t.Fatalf("reactor exited (%v)\n%s", err, logs.String())
		case <-ctx.Done():
			t.Fatalf("no expiry deferred any file\n%s", logs.String())
		}
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	<-exited
	stopWriting()
	wg.Wait()

	tbl, err := cat.LoadTable(ctx, ident)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(tbl.Metadata().Snapshots()); n > 10+30 {
		t.Errorf("%d snapshots: expiry did not bound the history beside the writer", n)
	}
	fs, err := tbl.FS(ctx)
	if err != nil {
		t.Fatal(err)
	}
	refs, err := deletions.List(fs, tbl.Location())
	if err != nil || len(refs) == 0 {
		t.Fatalf("pending lists after the kill: %v (err %v), want the expiry's", refs, err)
	}
	type pendingFile struct {
		path string
		due  time.Time
	}
	var pending []pendingFile
	// The key reactor generated in its data directory at its first start,
	// and kept across the restart.
	keys, err := deletions.ReadKeyFile(filepath.Join(dir, "record.key"))
	if err != nil {
		t.Fatal(err)
	}
	for _, ref := range refs {
		b, err := keys.Records(fs, deletions.RefOf(tbl)).ReadBatch(ref)
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range b.Files {
			pending = append(pending, pendingFile{strings.TrimPrefix(f.Path, "file://"), b.Due})
		}
	}
	// checkNoneEarly fails the test for any pending file gone before its
	// due time, and reports whether all are gone.
	checkNoneEarly := func() (allGone bool) {
		now := time.Now()
		allGone = true
		for _, f := range pending {
			_, err := os.Stat(f.path)
			exists := err == nil
			if !exists && now.Before(f.due.Add(-time.Second)) {
				t.Fatalf("%s deleted before its due time %s", f.path, f.due)
			}
			allGone = allGone && !exists
		}
		return allGone
	}
	checkNoneEarly()

	// Restarted, reactor finds the list and waits for it; meanwhile the
	// reader, holding the oldest snapshot, reads to the end.
	cmd, logs, exited = start()
	defer func() {
		cmd.Process.Kill()
		<-exited
	}()
	if got := readTasks(t, ctx, reading, tasks); got != readerWants {
		t.Errorf("the reader holding the old snapshot read %d rows, want %d", got, readerWants)
	}
	for !checkNoneEarly() {
		select {
		case err := <-exited:
			t.Fatalf("reactor exited (%v)\n%s", err, logs.String())
		case <-ctx.Done():
			t.Fatalf("pending files not deleted after their due time\n%s", logs.String())
		case <-time.After(200 * time.Millisecond):
		}
	}
	tbl, err = cat.LoadTable(ctx, ident)
	if err != nil {
		t.Fatal(err)
	}
	got, err := streamwriter.Read(ctx, tbl)
	if err != nil {
		t.Fatal(err)
	}
	if got.Total != writer.Written() {
		t.Errorf("table holds %v rows, writer wrote %v", got.Total, writer.Written())
	}
	for id, n := range got.IDs {
		if n != 1 {
			t.Errorf("id %d present %d times", id, n)
		}
	}
}

// readTasks reads planned scan tasks to the end and counts the rows.
func readTasks(t *testing.T, ctx context.Context, tbl *table.Table, tasks []table.FileScanTask) int64 {
	t.Helper()
	_, records, err := tbl.Scan().ReadTasks(ctx, tasks)
	if err != nil {
		t.Fatal(err)
	}
	var n int64
	for rec, err := range records {
		if err != nil {
			t.Fatalf("reading the old snapshot: %v", err)
		}
		n += rec.NumRows()
		rec.Release()
	}
	return n
}
