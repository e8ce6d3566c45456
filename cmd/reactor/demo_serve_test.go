package main

import (
	"context"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestDemoServe runs a short demo with --serve: it prints the status
// page's URL, keeps serving it after the summary, and stops cleanly when
// interrupted.
func TestDemoServe(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the embedded demo for several seconds")
	}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	var stdout, stderr syncBuffer
	done := make(chan error, 1)
	go func() {
		done <- demoCmd(ctx, []string{"--duration", "2s", "--rate", "5", "--partitions", "2", "--serve"}, &stdout, &stderr)
	}()
	serving := regexp.MustCompile(`status page: (http://127\.0\.0\.1:\d+/) \(reactor keeps running; Ctrl-C stops it\)`)
	var url string
	for deadline := time.Now().Add(2 * time.Minute); url == ""; time.Sleep(100 * time.Millisecond) {
		select {
		case err := <-done:
			t.Fatalf("demo ended before serving: %v\n%s\n%s", err, stdout.String(), stderr.String())
		default:
		}
		if m := serving.FindStringSubmatch(stdout.String()); m != nil {
			url = m[1]
		}
		if time.Now().After(deadline) {
			t.Fatalf("the demo never said it serves the status page:\n%s", stdout.String())
		}
	}
	if !strings.Contains(stdout.String(), "status page: "+url+"\n") {
		t.Errorf("the URL was not printed when reactor started:\n%s", stdout.String())
	}
	for _, path := range []string{"", "tables/demo.events", "jobs"} {
		resp, err := http.Get(url + path)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), "demo.events") {
			t.Errorf("GET /%s: %d\n%s", path, resp.StatusCode, body)
		}
	}
	resp, err := http.Post(url, "text/plain", strings.NewReader("x"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("POST /: %d, want 405", resp.StatusCode)
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("demo after Ctrl-C: %v", err)
		}
	case <-time.After(time.Minute):
		t.Fatal("the demo did not stop after Ctrl-C")
	}
	if !strings.Contains(stdout.String(), "OK: table holds exactly the rows written") {
		t.Errorf("no summary before serving:\n%s", stdout.String())
	}
	// Without --keep the demo's directory goes when it ends: no path in
	// it is printed, and the way to keep it is.
	if strings.Contains(stdout.String(), "reactor-demo-") || !strings.Contains(stdout.String(), "`reactor demo --keep` keeps them") {
		t.Errorf("a path about to vanish, or no word of --keep:\n%s", stdout.String())
	}
}

func TestDemoServeNeedsAnAddress(t *testing.T) {
	_, err := parseDemoConfig([]string{"--serve", "--http-addr", ""}, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "--serve needs --http-addr") {
		t.Fatalf("got %v", err)
	}
}

func TestStatusURL(t *testing.T) {
	for addr, want := range map[string]string{
		"127.0.0.1:9090": "http://127.0.0.1:9090/",
		"[::]:9090":      "http://127.0.0.1:9090/",
		":9090":          "http://127.0.0.1:9090/",
		"0.0.0.0:80":     "http://127.0.0.1:80/",
		"[::1]:9090":     "http://[::1]:9090/",
	} {
		if got := statusURL(addr); got != want {
			t.Errorf("statusURL(%q) = %q, want %q", addr, got, want)
		}
	}
}
