package selfexec

import (
	"context"
	"encoding/json"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

const testEnv = "SELFEXEC_TEST_CHILD"

type testSpec struct {
	Do        string `json:"do"` // "ready", "exit", "garbage"
	ReadyFile string `json:"ready_file"`
}

type testReady struct {
	Pid int `json:"pid"`
}

// TestMain is the child too: with testEnv set it plays the role asked.
func TestMain(m *testing.M) {
	specJSON, ok := os.LookupEnv(testEnv)
	if !ok {
		os.Exit(m.Run())
	}
	var spec testSpec
	if err := json.Unmarshal([]byte(specJSON), &spec); err != nil {
		os.Exit(2)
	}
	switch spec.Do {
	case "exit":
		os.Exit(3)
	case "garbage":
		_ = os.WriteFile(spec.ReadyFile, []byte("{"), 0o644)
		time.Sleep(time.Minute)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	if err := WriteReady(spec.ReadyFile, testReady{Pid: os.Getpid()}); err != nil {
		os.Exit(4)
	}
	<-ctx.Done()
	os.Exit(0)
}

func TestStartStopAndKill(t *testing.T) {
	dir := t.TempDir()
	start := func(do, name string) (*Process, testReady, error) {
		ready := filepath.Join(dir, name+".ready")
		var r testReady
		p, err := Start(t.Context(), name, testEnv, testSpec{Do: do, ReadyFile: ready}, ready, filepath.Join(dir, name+".log"), &r)
		return p, r, err
	}

	p, r, err := start("ready", "stopped")
	if err != nil {
		t.Fatal(err)
	}
	if r.Pid != p.Pid() || p.Exited() {
		t.Fatalf("ready %+v, pid %d, exited %v", r, p.Pid(), p.Exited())
	}
	if err := p.Stop(time.Second); err != nil {
		t.Errorf("stop: %v", err)
	}
	if !p.Exited() || p.Err() != nil {
		t.Errorf("after stop: exited %v, err %v", p.Exited(), p.Err())
	}
	if err := p.Stop(time.Second); err == nil || !strings.Contains(err.Error(), "already exited") {
		t.Errorf("second stop: %v", err)
	}

	p, _, err = start("ready", "killed")
	if err != nil {
		t.Fatal(err)
	}
	p.Kill()
	if !p.Exited() || p.Err() == nil {
		t.Errorf("after kill: exited %v, err %v", p.Exited(), p.Err())
	}

	if _, _, err := start("exit", "exits"); err == nil || !strings.Contains(err.Error(), "exited before it was ready") {
		t.Errorf("a child that exits: %v", err)
	}
	if _, _, err := start("garbage", "garbage"); err == nil || !strings.Contains(err.Error(), "ready file") {
		t.Errorf("a child that writes half a ready file: %v", err)
	}
}
