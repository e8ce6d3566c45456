package lease

// A replica as a real process, stopped with SIGSTOP for longer than its
// lease TTL while a new incarnation takes its name and shards, then
// continued: from the moment it runs again it must refuse every commit.

import (
	"bufio"
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

const (
	childURLEnv   = "REACTOR_LEASE_CHILD_NATS"
	childTableEnv = "REACTOR_LEASE_CHILD_TABLE"
)

func TestMain(m *testing.M) {
	if url := os.Getenv(childURLEnv); url != "" {
		os.Exit(runCommitChecker(url, os.Getenv(childTableEnv)))
	}
	os.Exit(m.Run())
}

// runCommitChecker is the child: replica pod-0 with a 2 s TTL, asking
// CheckCommit for one table every millisecond and printing each answer
// with the wall-clock time, until its stdin closes.
func runCommitChecker(url, table string) int {
	nc, err := nats.Connect(url)
	if err != nil {
		fmt.Println("error", err)
		return 1
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		fmt.Println("error", err)
		return 1
	}
	m, err := Start(context.Background(), js, Options{Replica: "pod-0", TTL: 2 * time.Second, Shards: 16,
		Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		fmt.Println("error", err)
		return 1
	}
	defer m.Stop()
	done := make(chan struct{})
	go func() {
		_, _ = bufio.NewReader(os.Stdin).ReadString('\n')
		close(done)
	}()
	out := bufio.NewWriter(os.Stdout)
	defer out.Flush()
	for {
		select {
		case <-done:
			return 0
		case <-time.After(time.Millisecond):
		}
		// The time is taken before the check: a line stamped after the
		// process was continued is a check made after it.
		at := time.Now().UnixNano()
		verdict := "ok"
		if err := m.CheckCommit(table); err != nil {
			verdict = "refused"
		}
		fmt.Fprintf(out, "%d %s\n", at, verdict)
		_ = out.Flush()
	}
}

func TestStoppedReplicaNeverCommitsOnALeaseItLost(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a child process and stops it for seconds")
	}
	f := newFleet(t)
	const table = "db.events"
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childURLEnv+"="+f.url, childTableEnv+"="+table)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGCONT)
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	var (
		mu    sync.Mutex
		lines []string
		ok    = make(chan struct{})
		once  sync.Once
	)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			mu.Lock()
			lines = append(lines, sc.Text())
			mu.Unlock()
			if strings.HasSuffix(sc.Text(), " ok") {
				once.Do(func() { close(ok) })
			}
		}
	}()
	select {
	case <-ok:
	case <-time.After(time.Minute):
		t.Fatalf("the child never could commit: %v", lines)
	}

	if err := cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	stopped := time.Now()
	// A new incarnation under the same name: the stopped one keeps its
	// connection and answers nothing, so it is waited out.
	again := f.start("pod-0", 2*time.Second)
	eventually(t, "the new incarnation owns the table", func() bool { return again.MayRun(table) == nil })
	if time.Since(stopped) < 2*time.Second {
		t.Fatalf("the table moved %s after the stop, before the stopped one's lease could expire", time.Since(stopped))
	}
	resumed := time.Now() // the child was stopped until after this
	if err := cmd.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	// Let it run and ask for a while, then read what it answered.
	time.Sleep(time.Second)
	_, _ = stdin.Write([]byte("\n"))
	_ = cmd.Wait()

	mu.Lock()
	defer mu.Unlock()
	var after, okAfter int
	for _, l := range lines {
		ts, verdict, found := strings.Cut(l, " ")
		if !found {
			continue
		}
		ns, err := strconv.ParseInt(ts, 10, 64)
		if err != nil || time.Unix(0, ns).Before(resumed) {
			continue
		}
		after++
		if verdict == "ok" {
			okAfter++
		}
	}
	if after == 0 {
		t.Fatalf("the child printed nothing after it was continued: %d lines", len(lines))
	}
	if okAfter > 0 {
		t.Fatalf("the continued replica passed %d of %d commit checks on a lease it lost", okAfter, after)
	}
	if again.MayRun(table) != nil || again.HeldCount() != 16 {
		t.Fatalf("the new incarnation lost the table: held %d", again.HeldCount())
	}
	t.Logf("stopped %s; %d checks after it was continued, all refused", resumed.Sub(stopped).Round(time.Millisecond), after)
}
