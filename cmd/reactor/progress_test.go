package main

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestProgressLine(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	const mib = 1 << 20
	for _, tc := range []struct {
		name                 string
		phase                string
		files, bytes         int64
		doneFiles, doneBytes int64
		after                time.Duration
		want                 string
	}{
		{name: "before the first step", want: ""},
		{name: "nothing done yet", phase: "rewrite", files: 700, bytes: 214 * mib, after: 2 * time.Second,
			want: "compact db.t: rewrite 0/700 files, 0 B/214.0 MiB, 2s"},
		{name: "rate and time left by bytes", phase: "rewrite", files: 700, bytes: 200 * mib, doneFiles: 350, doneBytes: 50 * mib, after: 10 * time.Second,
			want: "compact db.t: rewrite 350/700 files, 50.0 MiB/200.0 MiB, 5.0 MiB/s, 30s left"},
		{name: "by files when bytes are unknown", phase: "delete", files: 1000, doneFiles: 250, after: 5 * time.Second,
			want: "compact db.t: delete 250/1000 files, 50.0 files/s, 15s left"},
		{name: "no total: a count and a rate", phase: "list", doneFiles: 30, after: 3 * time.Second,
			want: "compact db.t: list 30 files, 10.0 files/s"},
		{name: "finished: no time left shown", phase: "rewrite", files: 4, bytes: 4096, doneFiles: 4, doneBytes: 4096, after: 2 * time.Second,
			want: "compact db.t: rewrite 4/4 files, 4.0 KiB/4.0 KiB, 2.0 KiB/s"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := newTerminalProgress(&bytes.Buffer{}, "compact db.t", func() time.Time { return t0 })
			if tc.phase != "" {
				p.Phase(tc.phase, tc.files, tc.bytes)
				p.Advance(tc.doneFiles, tc.doneBytes)
			}
			if got := p.line(t0.Add(tc.after)); got != tc.want {
				t.Errorf("line:\n got %q\nwant %q", got, tc.want)
			}
		})
	}
}

// A log line written while the progress line is up clears it first, and
// stopping clears what is drawn: the result starts on a clean line.
func TestProgressLineMakesWayForLogsAndResult(t *testing.T) {
	var out bytes.Buffer
	p := newTerminalProgress(&out, "expire db.t", time.Now)
	p.drawn = true
	if _, err := p.logWriter().Write([]byte("level=INFO msg=hello\n")); err != nil {
		t.Fatal(err)
	}
	if got := out.String(); got != "\r\033[Klevel=INFO msg=hello\n" {
		t.Errorf("log write: %q", got)
	}
	if _, err := p.logWriter().Write([]byte("second\n")); err != nil {
		t.Fatal(err)
	}
	if strings.Count(out.String(), "\033[K") != 1 {
		t.Errorf("cleared a line that was not drawn: %q", out.String())
	}

	out.Reset()
	p.drawn = true
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	p.run(ctx)
	if out.String() != "\r\033[K" {
		t.Errorf("stop wrote %q, want the line cleared", out.String())
	}
}

// Output to a file, a pipe or a buffer, or --json, gets no progress line.
func TestProgressOnlyOnATerminal(t *testing.T) {
	file, err := os.Create(filepath.Join(t.TempDir(), "out"))
	if err != nil {
		t.Fatal(err)
	}
	defer file.Close()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	devNull, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer devNull.Close()
	for name, out := range map[string]io.Writer{"buffer": &bytes.Buffer{}, "file": file, "pipe": w, "/dev/null": devNull} {
		if showProgress(out, out, false) {
			t.Errorf("%s: progress shown", name)
		}
	}
	if showProgress(os.Stdout, os.Stderr, true) {
		t.Error("--json: progress shown")
	}
}
