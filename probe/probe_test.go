package probe

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/apache/iceberg-go/table"
	"github.com/nats-io/nats.go"

	"github.com/icereactor/reactor/embedded"
	"github.com/icereactor/reactor/events"
	"github.com/icereactor/reactor/streamwriter"
)

func TestParseStatCPU(t *testing.T) {
	tests := []struct {
		name    string
		line    string
		want    time.Duration
		wantErr bool
	}{
		{name: "plain", line: "42 (reactor) S 1 42 42 0 -1 4194560 100 0 0 0 250 130 0 0 20 0 9 0",
			want: 3800 * time.Millisecond},
		{name: "name with spaces and parentheses", line: "7 (a (b) c) R 1 7 7 0 -1 0 0 0 0 0 1 2 0 0 20 0 1 0",
			want: 30 * time.Millisecond},
		{name: "no name", line: "7 S 1", wantErr: true},
		{name: "truncated", line: "7 (x) S 1 2 3", wantErr: true},
		{name: "not a number", line: "7 (x) S 1 7 7 0 -1 0 0 0 0 0 ten 2 0", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseStatCPU(tt.line)
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, wantErr %v", err, tt.wantErr)
			}
			if got != tt.want {
				t.Errorf("got %v, want %v", got, tt.want)
			}
		})
	}
}

func TestProcessCPUOfSelf(t *testing.T) {
	d, err := ProcessCPU(os.Getpid())
	if err == ErrUnsupported {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	if d < 0 {
		t.Errorf("CPU time %v", d)
	}
	if _, err := LoadAverage(); err != nil {
		t.Error(err)
	}
}

func TestLatencies(t *testing.T) {
	var l Latencies
	t0 := time.Unix(1000, 0)
	for i := 1; i <= 100; i++ {
		l.Add(t0.Add(time.Duration(i)*time.Second), time.Duration(i)*time.Millisecond)
	}
	p := l.Interval()
	if p.N != 100 || p.P50 != 50*time.Millisecond || p.P99 != 99*time.Millisecond || p.Max != 100*time.Millisecond {
		t.Errorf("interval = %+v", p)
	}
	if p := l.Interval(); p.N != 0 {
		t.Errorf("second interval has %d, want none", p.N)
	}
	w := l.Window(t0.Add(11*time.Second), t0.Add(21*time.Second)) // 11..20
	if w.N != 10 || w.P50 != 15*time.Millisecond || w.Max != 20*time.Millisecond {
		t.Errorf("window = %+v", w)
	}
}

func TestJobTally(t *testing.T) {
	evs := []events.JobEvent{
		{Phase: events.JobScheduled, Kind: "compact"},
		{Phase: events.JobStarted, Kind: "compact"},
		{Phase: events.JobSucceeded, Kind: "compact", Outcome: "succeeded",
			Counts: map[string]int64{"rewritten_bytes_count": 1000, "rewritten_data_files_count": 10, "added_data_files_count": 1}},
		{Phase: events.JobScheduled, Kind: "compact"},
		{Phase: events.JobFailed, Kind: "compact", Outcome: "gave_up", Error: "conflicts",
			Counts: map[string]int64{"rewritten_bytes_count": 0}},
		{Phase: events.JobScheduled, Kind: "expire_snapshots"},
		{Phase: events.JobSucceeded, Kind: "expire_snapshots", Outcome: "succeeded",
			Counts: map[string]int64{"expired_snapshots_count": 7, "deleted_data_files_count": 3, "deleted_manifest_files_count": 9}},
		{Phase: events.JobScheduled, Kind: "expire_snapshots"},
		{Phase: events.JobSucceeded, Kind: "expire_snapshots", Outcome: "succeeded",
			Counts: map[string]int64{"expired_snapshots_count": 2, "deleted_data_files_count": 0, "deletion_deferred_files_count": 10}},
		{Phase: events.JobScheduled, Kind: "delete_expired_files"},
		{Phase: events.JobSucceeded, Kind: "delete_expired_files", Outcome: "succeeded", Time: time.Unix(50, 0),
			Counts: map[string]int64{"deleted_data_files_count": 4, "deleted_manifest_lists_count": 2, "still_referenced_files_count": 1}},
		{Phase: events.JobScheduled, Kind: "rewrite_manifests"},
	}
	tally := JobTally{Scheduled: map[string]int{}, Started: map[string]int{}, Finished: map[JobOutcome]int{},
		LastError: map[string]string{}, LastFinished: map[string]time.Time{}}
	for _, ev := range evs {
		tally.add(ev)
	}
	checks := []struct {
		name      string
		got, want int64
	}{
		{"compact succeeded", int64(tally.Count("compact", "succeeded")), 1},
		{"compact gave up", int64(tally.Count("compact", "gave_up")), 1},
		{"gave up, all kinds", int64(tally.Outcome("gave_up")), 1},
		{"running", int64(tally.Running()), 1},
		{"rewritten bytes", tally.RewrittenBytes, 1000},
		{"rewritten files", tally.RewrittenFiles, 10},
		{"added files", tally.AddedFiles, 1},
		{"expired snapshots", tally.ExpiredSnapshots, 9},
		{"deleted by expiry", tally.ExpiryDeletedFiles, 12},
		{"deferred by expiry", tally.ExpiryDeferredFiles, 10},
		{"deleted by the pass", tally.DeferredDeletedFiles, 6},
		{"kept by the pass", tally.DeferredKeptFiles, 1},
		{"pending", tally.PendingDeletion(), 3},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("%s = %d, want %d", c.name, c.got, c.want)
		}
	}
	if !tally.LastFinished["delete_expired_files"].Equal(time.Unix(50, 0)) {
		t.Errorf("last finished = %v", tally.LastFinished)
	}
	if tally.LastError["compact"] != "conflicts" {
		t.Errorf("last error = %q", tally.LastError["compact"])
	}
	clone := tally.clone()
	clone.Scheduled["compact"] = 100
	if tally.Scheduled["compact"] == 100 {
		t.Error("clone shares its maps")
	}
}

func TestWatchJobs(t *testing.T) {
	srv, err := embedded.StartNATS(embedded.NATSOptions{StoreDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Shutdown()
	conn, err := nats.Connect(srv.URL())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	jobs, err := WatchJobs(conn, "")
	if err != nil {
		t.Fatal(err)
	}
	pub := func(ev events.JobEvent) {
		data, err := json.Marshal(ev)
		if err != nil {
			t.Fatal(err)
		}
		if err := conn.Publish(events.JobSubject(events.DefaultJobSubjectPrefix, ev.Phase, "db.t"), data); err != nil {
			t.Fatal(err)
		}
	}
	pub(events.JobEvent{Phase: events.JobScheduled, Kind: "compact"})
	pub(events.JobEvent{Phase: events.JobSucceeded, Kind: "compact", Outcome: "succeeded",
		Counts: map[string]int64{"rewritten_bytes_count": 5}})
	if err := conn.Publish(events.DefaultJobSubjectPrefix+".succeeded.db.t", []byte("{not json")); err != nil {
		t.Fatal(err)
	}
	if err := jobs.Stop(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		tally := jobs.Tally()
		if tally.Malformed == 1 && tally.Count("compact", "succeeded") == 1 {
			if tally.RewrittenBytes != 5 || tally.Running() != 0 {
				t.Errorf("tally = %+v", tally)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("events not all received: %+v", tally)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestMeasureAndCompare writes a table of small commits and checks what the
// probe reports against what was written.
func TestMeasureAndCompare(t *testing.T) {
	ctx := t.Context()
	dir := t.TempDir()
	cat, err := embedded.OpenCatalog(ctx, filepath.Join(dir, "catalog"))
	if err != nil {
		t.Fatal(err)
	}
	ident := table.Identifier{"db", "events"}
	if _, err := streamwriter.CreateTable(ctx, cat, ident, nil); err != nil {
		t.Fatal(err)
	}
	w := streamwriter.New(cat, ident, nil)
	const commits, partitions, rows = 12, 3, 20
	for i := range commits {
		if _, err := w.Commit(ctx, fmt.Sprintf("p%d", i%partitions), rows); err != nil {
			t.Fatal(err)
		}
	}
	tbl, err := cat.LoadTable(ctx, ident)
	if err != nil {
		t.Fatal(err)
	}
	s, err := Measure(ctx, tbl, 512<<20)
	if err != nil {
		t.Fatal(err)
	}
	if s.DataFiles != commits || s.Partitions != partitions || s.IdealFiles != partitions || s.Snapshots != commits ||
		s.DataManifests != commits || s.DeleteFiles != 0 || s.PlannedFiles != commits || s.Records != commits*rows ||
		s.DiskDataFiles != commits || s.DataBytes != w.WrittenBytes() {
		t.Errorf("sample = %+v (writer wrote %d bytes)", s, w.WrittenBytes())
	}
	// A target below one file's size: every file is its own ideal.
	if s, err := Measure(ctx, tbl, 1); err != nil || s.IdealFiles != int(s.DataBytes) {
		t.Errorf("ideal at a 1-byte target = %d, want %d (%v)", s.IdealFiles, s.DataBytes, err)
	}
	if _, err := Measure(ctx, tbl, 0); err == nil {
		t.Error("a zero target should be refused")
	}

	c, err := NewCompacted(ctx, filepath.Join(dir, "compacted"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	load := func(ctx context.Context) (*table.Table, error) { return cat.LoadTable(ctx, ident) }
	for range 2 { // the second copy must not collide with the first
		scan, err := c.Compare(ctx, load, 512<<20)
		if err != nil {
			t.Fatal(err)
		}
		if scan.Rows != commits*rows || scan.CompactedFiles != partitions || scan.Live <= 0 || scan.Compacted <= 0 || scan.Ratio() <= 0 {
			t.Errorf("scan = %+v", scan)
		}
	}
	// The copies are dropped, files included.
	entries, err := os.ReadDir(filepath.Join(dir, "compacted", "warehouse", "compacted.db"))
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 0 {
		t.Errorf("copies left behind: %v", entries)
	}
}
