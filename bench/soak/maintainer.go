package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/icereactor/reactor/embedded"
)

// The maintainer is what keeps the soak's tables healthy while the writers
// write: reactor (the default, its own process as reactor run wires it), an
// external command given by -maintainer-cmd (a peer such as Iceberg's Flink
// TableMaintenance or a Spark schedule, interop/peers), or none. The writer,
// the sampler, the plots and the row check are the same for all of them, so
// their figures compare within one machine.
type maintainer interface {
	// NATSURL is the server the writers publish their commit events to.
	NATSURL() string
	// Usage is the maintainer's CPU time so far and its memory now.
	Usage() (usage, error)
	// Stop ends the maintainer, giving its running work grace.
	Stop(grace time.Duration) error
	// Describe is the header's line about it.
	Describe() string
}

// Names of the built-in maintainers; any other -maintainer names the
// command -maintainer-cmd runs.
const (
	maintainerReactor = "reactor"
	maintainerNone    = "none"
)

// reactorMaintainer is reactor's process.
type reactorMaintainer struct{ *reactorProcess }

func (r reactorMaintainer) NATSURL() string { return r.ready.NATSURL }

func (r reactorMaintainer) Usage() (usage, error) { return processUsage(r.Pid()) }

// MetricsAddr is reactor's HTTP listener (/metrics): the fleet's catalog
// calls are read there.
func (r reactorMaintainer) MetricsAddr() string { return r.ready.HTTPAddr }

func (r reactorMaintainer) Describe() string {
	return fmt.Sprintf("reactor (pid %d, its own process)", r.Pid())
}

// externalMaintainer is a command in its own process group (a JVM is
// rarely one process: spark-submit starts Python and Java), beside an
// embedded NATS server the soak runs for the writers' commit events (no one
// reads them: the writer is the same as in reactor's runs).
type externalMaintainer struct {
	name, command string
	nats          *embedded.NATS
	cmd           *exec.Cmd
	done          chan struct{}
	waitErr       error
	final         usage // from the kernel's accounting once the command exited
}

// startNATSOnly starts the soak's own NATS server for a maintainer that is
// not reactor; the command itself starts later (launch), once the tables
// exist.
func startNATSOnly(cfg config, dataDir string) (*externalMaintainer, error) {
	n, err := embedded.StartNATS(embedded.NATSOptions{StoreDir: filepath.Join(dataDir, "nats")})
	if err != nil {
		return nil, err
	}
	return &externalMaintainer{name: cfg.maintainer, command: cfg.maintainerCmd, nats: n}, nil
}

// maintainerStartTimeout bounds a peer's start-up (a JVM, a Spark session,
// a Flink MiniCluster on a busy 2-core machine).
const maintainerStartTimeout = 5 * time.Minute

// launch runs the command with the soak's tables in its environment and
// waits until it creates the ready file (SOAK_READY) or exits.
func (m *externalMaintainer) launch(ctx context.Context, env []string, readyFile, logPath string) error {
	if m.command == "" {
		return nil
	}
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("%s log: %w", m.name, err)
	}
	defer logFile.Close()
	m.cmd = exec.Command("sh", "-c", m.command)
	m.cmd.Env = append(append(os.Environ(), env...), "SOAK_READY="+readyFile)
	m.cmd.Stdout, m.cmd.Stderr = logFile, logFile
	m.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := m.cmd.Start(); err != nil {
		return fmt.Errorf("start %s: %w", m.name, err)
	}
	m.done = make(chan struct{})
	go func() {
		m.waitErr = m.cmd.Wait()
		if st := m.cmd.ProcessState; st != nil {
			m.final.cpu = st.UserTime() + st.SystemTime()
			if ru, ok := st.SysUsage().(*syscall.Rusage); ok {
				m.final.peak = ru.Maxrss << 10
			}
		}
		close(m.done)
	}()
	deadline := time.NewTimer(maintainerStartTimeout)
	defer deadline.Stop()
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	for {
		if _, err := os.Stat(readyFile); err == nil {
			return nil
		}
		select {
		case <-m.done:
			return fmt.Errorf("%s exited before it was ready (%v); see %s", m.name, m.waitErr, logPath)
		case <-deadline.C:
			m.kill()
			return fmt.Errorf("%s not ready after %s; see %s", m.name, maintainerStartTimeout, logPath)
		case <-ctx.Done():
			m.kill()
			return ctx.Err()
		case <-tick.C:
		}
	}
}

func (m *externalMaintainer) NATSURL() string { return m.nats.URL() }

func (m *externalMaintainer) Describe() string {
	if m.cmd == nil {
		return fmt.Sprintf("%s (no maintainer)", m.name)
	}
	return fmt.Sprintf("%s (process group %d: %s)", m.name, m.cmd.Process.Pid, m.command)
}

func (m *externalMaintainer) Usage() (usage, error) {
	if m.cmd == nil {
		return usage{}, nil
	}
	select {
	case <-m.done:
		return m.final, nil
	default:
	}
	return groupUsage(m.cmd.Process.Pid)
}

func (m *externalMaintainer) exited() bool {
	select {
	case <-m.done:
		return true
	default:
		return false
	}
}

// Stop sends SIGTERM to the whole group and waits grace (plus a margin
// for a JVM's shutdown hooks), then kills it.
func (m *externalMaintainer) Stop(grace time.Duration) error {
	defer m.nats.Shutdown()
	if m.cmd == nil {
		return nil
	}
	if m.exited() {
		return fmt.Errorf("%s had already exited: %v", m.name, m.waitErr)
	}
	if err := syscall.Kill(-m.cmd.Process.Pid, syscall.SIGTERM); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("stop %s: %w", m.name, err)
	}
	select {
	case <-m.done:
		return nil // a SIGTERM exit status is the expected end
	case <-time.After(grace + 15*time.Second):
		m.kill()
		return fmt.Errorf("%s did not stop within %s; killed", m.name, grace)
	}
}

func (m *externalMaintainer) kill() {
	_ = syscall.Kill(-m.cmd.Process.Pid, syscall.SIGKILL)
	<-m.done
}

// usage is CPU time and memory of a maintainer.
type usage struct {
	cpu  time.Duration // user + system so far
	rss  int64         // resident bytes now (summed over the group)
	peak int64         // the largest resident size seen by the kernel (VmHWM; summed over the group)
}

// processUsage reads one process's CPU time and memory from /proc.
func processUsage(pid int) (usage, error) {
	var u usage
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return u, fmt.Errorf("usage of %d: %w", pid, err)
	}
	st, err := parseStat(string(data))
	if err != nil {
		return u, err
	}
	u.cpu = st.cpu
	u.rss, u.peak = memory(pid)
	return u, nil
}

// groupUsage adds up the processes of process group pgid: their CPU time
// (with that of the children they reaped) and memory.
func groupUsage(pgid int) (usage, error) {
	var u usage
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return u, fmt.Errorf("usage of group %d: %w", pgid, err)
	}
	found := false
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			continue // ended meanwhile
		}
		st, err := parseStat(string(data))
		if err != nil || st.pgrp != pgid {
			continue
		}
		found = true
		u.cpu += st.cpu + st.childCPU
		rss, peak := memory(pid)
		u.rss += rss
		u.peak += peak
	}
	if !found {
		return u, fmt.Errorf("usage of group %d: no process left", pgid)
	}
	return u, nil
}

// stat is what the soak reads of /proc/<pid>/stat.
type stat struct {
	pgrp          int
	cpu, childCPU time.Duration
}

// parseStat reads pgrp (field 5), utime, stime (14, 15) and cutime, cstime
// (16, 17), counting from the last ')' as the command name may hold any
// byte.
func parseStat(line string) (stat, error) {
	i := strings.LastIndexByte(line, ')')
	if i < 0 {
		return stat{}, fmt.Errorf("malformed /proc stat line %q", line)
	}
	f := strings.Fields(line[i+1:])
	if len(f) < 15 {
		return stat{}, fmt.Errorf("/proc stat line has %d fields after the name, want at least 15", len(f))
	}
	var n [5]int64
	for j, k := range []int{2, 11, 12, 13, 14} {
		v, err := strconv.ParseInt(f[k], 10, 64)
		if err != nil {
			return stat{}, fmt.Errorf("/proc stat field %q: %w", f[k], err)
		}
		n[j] = v
	}
	const tick = time.Second / 100 // USER_HZ
	return stat{pgrp: int(n[0]), cpu: time.Duration(n[1]+n[2]) * tick, childCPU: time.Duration(n[3]+n[4]) * tick}, nil
}

// memory reads VmRSS and VmHWM of /proc/<pid>/status in bytes (0 when
// gone).
func memory(pid int) (rss, peak int64) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, 0
	}
	for line := range strings.SplitSeq(string(data), "\n") {
		key, val, ok := strings.Cut(line, ":")
		if !ok || (key != "VmRSS" && key != "VmHWM") {
			continue
		}
		kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(val), " kB"), 10, 64)
		if err != nil {
			continue
		}
		if key == "VmRSS" {
			rss = kb << 10
		} else {
			peak = kb << 10
		}
	}
	return rss, peak
}
