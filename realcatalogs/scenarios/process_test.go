package scenarios

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"
)

// The process handling mirrors realparts/scenarios (process_test.go): a
// child started from one locked OS thread gets SIGKILL when the suite dies.

// process is one server or reactor the suite started. Its output goes to a
// log file in the work directory, which failure messages quote the end of.
type process struct {
	name    string
	cmd     *exec.Cmd
	logPath string
	log     *os.File
	done    chan struct{} // closed when the process has exited
	waitErr error
	// stopSignal asks the process to stop (SIGTERM when zero;
	// PostgreSQL's SIGTERM waits for every client to leave, its SIGINT
	// does not).
	stopSignal syscall.Signal
}

// processes is every process the suite started and has not yet seen exit,
// so that an interrupt or a failing TestMain can stop them all.
type processes struct {
	mu    sync.Mutex
	live  []*process
	spawn chan spawnRequest
}

type spawnRequest struct {
	cmd  *exec.Cmd
	done chan error
}

// newProcesses starts the spawner: every child is started from one OS
// thread that never exits, because Linux delivers Pdeathsig when the
// parent *thread* ends, not the process; started from arbitrary goroutines
// a child could be killed when the Go runtime retires a thread.
func newProcesses() *processes {
	ps := &processes{spawn: make(chan spawnRequest)}
	go func() {
		runtime.LockOSThread() // never unlocked: the thread lives as long as the process
		for req := range ps.spawn {
			req.done <- req.cmd.Start()
		}
	}()
	return ps
}

// start runs argv with env (the whole environment: nothing is inherited),
// output appended to logPath. The child gets its own process group (a
// Ctrl-C reaches the suite, which stops it in order) and SIGKILL if the
// suite dies without stopping it.
func (ps *processes) start(name string, argv, env []string, logPath string) (*process, error) {
	return ps.startAs(name, argv, env, logPath, nil, nil)
}

// startAs is start with the child running as cred (nil: as the suite) and,
// when stdio is set, its stdin and stdout given to stdio instead of the
// log (stderr still goes to the log).
func (ps *processes) startAs(name string, argv, env []string, logPath string, cred *syscall.Credential,
	stdio func(cmd *exec.Cmd) error) (*process, error) {
	log, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	fmt.Fprintf(log, "--- %s: %s\n", time.Now().Format(time.RFC3339Nano), strings.Join(argv, " "))
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = env
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL, Credential: cred}
	if stdio != nil {
		cmd.Stdout = nil
		if err := stdio(cmd); err != nil {
			log.Close()
			return nil, fmt.Errorf("%s: %w", name, err)
		}
	}
	req := spawnRequest{cmd: cmd, done: make(chan error, 1)}
	ps.spawn <- req
	if err := <-req.done; err != nil {
		log.Close()
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	p := &process{name: name, cmd: cmd, logPath: logPath, log: log, done: make(chan struct{})}
	ps.mu.Lock()
	ps.live = append(ps.live, p)
	ps.mu.Unlock()
	go func() {
		p.waitErr = cmd.Wait()
		log.Close()
		ps.mu.Lock()
		ps.live = slices.DeleteFunc(ps.live, func(q *process) bool { return q == p })
		ps.mu.Unlock()
		close(p.done)
	}()
	return p, nil
}

// stopAll stops every live process, newest first (reactor before the
// servers it talks to).
func (ps *processes) stopAll() {
	ps.mu.Lock()
	live := slices.Clone(ps.live)
	ps.mu.Unlock()
	slices.Reverse(live)
	for _, p := range live {
		p.stop(10 * time.Second)
	}
}

// exited reports whether the process has ended.
func (p *process) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// stop sends SIGTERM to the process group, waits up to grace, then sends
// SIGKILL. It returns the process's exit error (nil for a clean exit, and
// for an exit caused by the SIGTERM sent here).
func (p *process) stop(grace time.Duration) error {
	if p.exited() {
		return p.waitErr
	}
	sig := p.stopSignal
	if sig == 0 {
		sig = syscall.SIGTERM
	}
	_ = syscall.Kill(-p.cmd.Process.Pid, sig)
	select {
	case <-p.done:
	case <-time.After(grace):
		_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
		<-p.done
		return fmt.Errorf("%s did not stop within %s of SIGTERM; killed", p.name, grace)
	}
	var exit *exec.ExitError
	if errors.As(p.waitErr, &exit) {
		if ws, ok := exit.Sys().(syscall.WaitStatus); ok && ws.Signaled() && ws.Signal() == sig {
			return nil
		}
	}
	return p.waitErr
}

// kill ends the process at once, as a crash or an OOM kill would.
func (p *process) kill() {
	if !p.exited() {
		_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
		<-p.done
	}
}

// tail is the end of the process's log, for failure messages.
func (p *process) tail(lines int) string {
	data, err := os.ReadFile(p.logPath)
	if err != nil {
		return err.Error()
	}
	all := bytes.Split(bytes.TrimRight(data, "\n"), []byte("\n"))
	if len(all) > lines {
		all = all[len(all)-lines:]
	}
	return fmt.Sprintf("--- last %d lines of %s:\n%s", len(all), p.logPath, bytes.Join(all, []byte("\n")))
}
