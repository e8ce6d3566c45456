package selfexec

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"time"
)

// readyTimeout bounds how long Start waits for a child's ready file.
const readyTimeout = 2 * time.Minute

// Process is a running child, seen from the parent.
type Process struct {
	Name string // for errors: "reactor", "replica r2"
	Log  string // where its stdout and stderr go
	cmd  *exec.Cmd
	done chan struct{}
	err  error // cmd.Wait's, once done is closed
}

// Start runs this executable again with env set to spec as JSON, its
// output appended to logPath, and waits until readyFile holds a JSON
// document, which it decodes into ready. The child is killed with the
// parent where the OS allows it (Linux).
func Start(ctx context.Context, name, env string, spec any, readyFile, logPath string, ready any) (*Process, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	specJSON, err := json.Marshal(spec)
	if err != nil {
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("%s log: %w", name, err)
	}
	defer logFile.Close() // the child holds its own descriptor
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), env+"="+string(specJSON))
	cmd.Stdout, cmd.Stderr = logFile, logFile
	dieWithParent(cmd)
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	p := &Process{Name: name, Log: logPath, cmd: cmd, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		close(p.done)
	}()
	deadline := time.NewTimer(readyTimeout)
	defer deadline.Stop()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		if data, err := os.ReadFile(readyFile); err == nil {
			if err := json.Unmarshal(data, ready); err != nil {
				p.Kill()
				return nil, fmt.Errorf("%s ready file: %w", name, err)
			}
			return p, nil
		}
		select {
		case <-p.done:
			return nil, fmt.Errorf("%s exited before it was ready (%v); see %s", name, p.err, logPath)
		case <-deadline.C:
			p.Kill()
			return nil, fmt.Errorf("%s not ready after %s; see %s", name, readyTimeout, logPath)
		case <-ctx.Done():
			p.Kill()
			return nil, ctx.Err()
		case <-tick.C:
		}
	}
}

// Pid is the child's process id.
func (p *Process) Pid() int { return p.cmd.Process.Pid }

// Exited reports whether the child has ended.
func (p *Process) Exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// Err is how the child ended (nil while it runs).
func (p *Process) Err() error {
	if !p.Exited() {
		return nil
	}
	return p.err
}

// Stop asks the child to shut down (SIGTERM: reactor gives its running
// jobs the grace period) and waits; after grace plus a margin it is killed.
func (p *Process) Stop(grace time.Duration) error {
	if p.Exited() {
		return fmt.Errorf("%s had already exited: %v", p.Name, p.err)
	}
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("stop %s: %w", p.Name, err)
	}
	select {
	case <-p.done:
		return p.err
	case <-time.After(grace + 15*time.Second):
		p.Kill()
		return fmt.Errorf("%s did not stop within its grace period; killed", p.Name)
	}
}

// Kill is SIGKILL: no shutdown, jobs cut off mid-way. It returns once the
// child is gone.
func (p *Process) Kill() {
	_ = p.cmd.Process.Kill()
	<-p.done
}

// WriteReady is the child's side: it writes v as JSON to path atomically,
// so the parent never reads half a file.
func WriteReady(path string, v any) error {
	data, err := json.Marshal(v)
	if err != nil {
		return err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}
