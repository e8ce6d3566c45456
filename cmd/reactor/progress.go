package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"golang.org/x/term"
)

// progressEvery is how often the progress line is redrawn: often enough to
// look alive, rarely enough to cost nothing.
const progressEvery = 250 * time.Millisecond

// terminalProgress draws one line on a terminal, redrawn in place, with how
// far a one-shot job has come: files and bytes of the current step, the
// rate and the time left. It implements executor.Progress.
type terminalProgress struct {
	w     io.Writer
	label string
	now   func() time.Time

	mu          sync.Mutex
	phase       string
	started     time.Time
	files, done int64
	bytes       int64
	doneBytes   int64
	drawn       bool
}

func newTerminalProgress(w io.Writer, label string, now func() time.Time) *terminalProgress {
	return &terminalProgress{w: w, label: label, now: now, started: now()}
}

// showProgress reports whether a one-shot command draws a progress line:
// only for a person at a terminal. Output piped to a file or a program, or
// --json, gets exactly the result and nothing else.
func showProgress(stdout, stderr io.Writer, json bool) bool {
	return !json && isTerminal(stdout) && isTerminal(stderr)
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

func (p *terminalProgress) Phase(name string, files, bytes int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.phase, p.files, p.bytes, p.done, p.doneBytes, p.started = name, files, bytes, 0, 0, p.now()
}

func (p *terminalProgress) Advance(files, bytes int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.done += files
	p.doneBytes += bytes
}

// logWriter is where the command's log lines go while the progress line is
// up: each write first clears the line, so a log line never runs into it;
// the next tick draws it again below.
func (p *terminalProgress) logWriter() io.Writer { return progressLog{p} }

type progressLog struct{ p *terminalProgress }

func (l progressLog) Write(b []byte) (int, error) {
	l.p.mu.Lock()
	defer l.p.mu.Unlock()
	if l.p.drawn {
		if _, err := io.WriteString(l.p.w, "\r\033[K"); err != nil {
			return 0, err
		}
		l.p.drawn = false
	}
	return l.p.w.Write(b)
}

// run redraws the line until ctx ends, then clears it, so the result the
// command prints next starts on a clean line.
func (p *terminalProgress) run(ctx context.Context) {
	t := time.NewTicker(progressEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			p.mu.Lock()
			if p.drawn {
				fmt.Fprint(p.w, "\r\033[K")
			}
			p.mu.Unlock()
			return
		case <-t.C:
			p.mu.Lock()
			if line := p.line(p.now()); line != "" {
				fmt.Fprint(p.w, "\r\033[K"+line)
				p.drawn = true
			}
			p.mu.Unlock()
		}
	}
}

// line is the progress line at now ("" before the first step starts).
// Call with p.mu held.
func (p *terminalProgress) line(now time.Time) string {
	if p.phase == "" {
		return ""
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s: %s", p.label, p.phase)
	switch {
	case p.files > 0:
		fmt.Fprintf(&b, " %d/%d files", p.done, p.files)
	case p.done > 0:
		fmt.Fprintf(&b, " %d files", p.done)
	}
	if p.bytes > 0 {
		fmt.Fprintf(&b, ", %s/%s", humanBytes(p.doneBytes), humanBytes(p.bytes))
	}
	elapsed := now.Sub(p.started)
	if elapsed <= 0 || p.done == 0 {
		fmt.Fprintf(&b, ", %s", elapsed.Round(time.Second))
		return b.String()
	}
	// The rate and the time left go by bytes where the step knows them
	// (files differ in size), else by files.
	done, total, unit := float64(p.done), float64(p.files), "files/s"
	if p.bytes > 0 && p.doneBytes > 0 {
		done, total = float64(p.doneBytes), float64(p.bytes)
		fmt.Fprintf(&b, ", %s/s", humanBytes(int64(done/elapsed.Seconds())))
	} else {
		fmt.Fprintf(&b, ", %.1f %s", done/elapsed.Seconds(), unit)
	}
	if total > done {
		left := time.Duration((total - done) / done * float64(elapsed))
		fmt.Fprintf(&b, ", %s left", left.Round(time.Second))
	}
	return b.String()
}

// humanBytes is n in binary units with one decimal ("36.1 MiB"): a
// progress line is read at a glance.
func humanBytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	v, i := float64(n)/unit, 0
	for v >= unit && i < 3 {
		v /= unit
		i++
	}
	return fmt.Sprintf("%.1f %ciB", v, "KMGT"[i])
}
