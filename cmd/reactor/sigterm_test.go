package main

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/apache/iceberg-go/table"
	"github.com/nats-io/nats.go"

	"github.com/icereactor/reactor/events"
	"github.com/icereactor/reactor/streamwriter"
)

// runAsReactor makes the test binary act as the reactor command when it
// is started by TestSIGTERMDuringCompaction: the real main, with its real
// signal handling, in a real child process.
const runAsReactor = "REACTOR_TEST_RUN_MAIN"

func TestMain(m *testing.M) {
	if os.Getenv(runAsReactor) == "1" {
		var args []string
		if err := json.Unmarshal([]byte(os.Getenv(runAsReactor+"_ARGS")), &args); err != nil {
			panic(err)
		}
		os.Args = append([]string{"reactor"}, args...)
		main()
		return
	}
	os.Exit(m.Run())
}

// SIGTERM while a compaction runs: reactor (a child process) stops taking
// events, lets the job finish or abandons it within the grace period, and
// exits 0; the table holds every row exactly once and no data file is left
// that no snapshot references (no half-state).
func TestSIGTERMDuringCompaction(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	dir := t.TempDir()
	f := newRunFixture(t, ctx, dir)
	srv, nc, cat, ident, writer := f.srv, f.nc, f.cat, f.ident, f.writer
	// Enough small files that the rewrite takes a while; all there before
	// reactor starts, so its first job is a compaction of all of them.
	for i := range 40 {
		if _, err := writer.Commit(ctx, []string{"a", "b"}[i%2], 200); err != nil {
			t.Fatal(err)
		}
	}
	thresholdsFile := filepath.Join(dir, "thresholds.yaml")
	if err := os.WriteFile(thresholdsFile, []byte("defaults: {target_file_size: 1MiB, small_file_count: 5, quiet_period: 0s, manifest_count: 1000}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	started := make(chan *nats.Msg, 16)
	sub, err := nc.ChanSubscribe(events.DefaultJobSubjectPrefix+".started.>", started)
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Unsubscribe()

	args, _ := json.Marshal([]string{"run", "--nats-url", srv.URL(), "--data-dir", dir, "--thresholds", thresholdsFile,
		"--http-addr", "", "--status-addr", "", "--shutdown-grace", "20s", "--notification-subject", ""})
	var stdout, stderr syncBuffer
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), runAsReactor+"=1", runAsReactor+"_ARGS="+string(args))
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	var msg *nats.Msg
	select {
	case msg = <-started:
	case err := <-exited:
		t.Fatalf("reactor exited before any job started (%v)\nstderr:\n%s", err, stderr.String())
	case <-ctx.Done():
		cmd.Process.Kill()
		<-exited
		t.Fatalf("no job started\nstderr:\n%s", stderr.String())
	}
	var ev events.JobEvent
	if err := json.Unmarshal(msg.Data, &ev); err != nil || ev.Kind != "compact" {
		t.Fatalf("first job %s (%v), want a compaction", msg.Data, err)
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	err = within(t, exited, time.Minute, "reactor to exit after SIGTERM (shutdown grace 20s)")
	logs := stderr.String()
	if err != nil {
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			t.Fatalf("reactor exited with %d after SIGTERM\nstderr:\n%s", exit.ExitCode(), logs)
		}
		t.Fatal(err)
	}
	for _, want := range []string{`"msg":"reactor shutting down`, `"msg":"reactor stopped"`} {
		if !strings.Contains(logs, want) {
			t.Errorf("log lacks %s:\n%s", want, logs)
		}
	}
	t.Logf("job %s: committed=%v", ev.JobID, strings.Contains(logs, `"outcome":"succeeded"`))

	tbl, err := cat.LoadTable(ctx, ident)
	if err != nil {
		t.Fatal(err)
	}
	got, err := streamwriter.Read(ctx, tbl)
	if err != nil {
		t.Fatal(err)
	}
	if got.Total != writer.Written() {
		t.Errorf("table holds %v, writer wrote %v", got.Total, writer.Written())
	}
	for id, n := range got.IDs {
		if n != 1 {
			t.Errorf("id %d present %d times", id, n)
		}
	}
	if stray := unreferencedDataFiles(t, ctx, tbl); len(stray) > 0 {
		t.Errorf("data files no snapshot references (an abandoned job's outputs): %v", stray)
	}
}

// unreferencedDataFiles lists the Parquet files under the table's data
// directory that no snapshot references.
func unreferencedDataFiles(t *testing.T, ctx context.Context, tbl *table.Table) []string {
	t.Helper()
	fs, err := tbl.FS(ctx)
	if err != nil {
		t.Fatal(err)
	}
	referenced := map[string]bool{}
	for _, snap := range tbl.Metadata().Snapshots() {
		manifests, err := snap.Manifests(fs)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range manifests {
			entries, err := m.FetchEntries(fs, false)
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range entries {
				referenced[strings.TrimPrefix(e.DataFile().FilePath(), "file://")] = true
			}
		}
	}
	var stray []string
	root := filepath.Join(strings.TrimPrefix(tbl.Location(), "file://"), "data")
	err = filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && strings.HasSuffix(path, ".parquet") && !referenced[path] {
			stray = append(stray, path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return stray
}
