// Command jobtail starts an embedded NATS server (JetStream on, as reactor
// needs) and prints every job event reactor publishes on it, one JSON
// document per line, until it is killed. The interop harness starts it,
// reads the server's URL from the first line ("nats URL"), runs `reactor
// run --nats-url URL` against it, and reads the job events from the lines
// that follow: the counts, the backend and the outcome of every job.
//
// Each line it reads on standard input, "SUBJECT JSON", is published to
// JetStream (retried until a stream takes it: reactor creates its commit
// stream when it connects), and answered with "published SUBJECT" on
// standard output: how the harness announces a table's commit to reactor,
// as a streaming writer would, once reactor is surely connected.
//
//	jobtail STORE_DIR [SUBJECT]   (SUBJECT defaults to reactor.jobs.>)
package main

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/icereactor/reactor/embedded"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: jobtail STORE_DIR [SUBJECT]")
		os.Exit(2)
	}
	subject := "reactor.jobs.>"
	if len(os.Args) > 2 {
		subject = os.Args[2]
	}
	srv, err := embedded.StartNATS(embedded.NATSOptions{StoreDir: os.Args[1]})
	if err != nil {
		fmt.Fprintln(os.Stderr, "jobtail:", err)
		os.Exit(1)
	}
	defer srv.Shutdown()
	nc, err := nats.Connect(srv.URL())
	if err != nil {
		fmt.Fprintln(os.Stderr, "jobtail:", err)
		os.Exit(1)
	}
	defer nc.Close()
	out := bufio.NewWriter(os.Stdout)
	var mu sync.Mutex
	if _, err := nc.Subscribe(subject, func(m *nats.Msg) {
		mu.Lock()
		defer mu.Unlock()
		out.Write(m.Data)
		out.WriteByte('\n')
		out.Flush()
	}); err != nil {
		fmt.Fprintln(os.Stderr, "jobtail:", err)
		os.Exit(1)
	}
	if err := nc.Flush(); err != nil {
		fmt.Fprintln(os.Stderr, "jobtail:", err)
		os.Exit(1)
	}
	mu.Lock()
	fmt.Fprintf(out, "nats %s\n", srv.URL())
	out.Flush()
	mu.Unlock()
	js, err := jetstream.New(nc)
	if err != nil {
		fmt.Fprintln(os.Stderr, "jobtail:", err)
		os.Exit(1)
	}
	go func() {
		in := bufio.NewScanner(os.Stdin)
		for in.Scan() {
			subject, body, ok := strings.Cut(strings.TrimSpace(in.Text()), " ")
			if !ok {
				continue
			}
			for deadline := time.Now().Add(2 * time.Minute); ; time.Sleep(200 * time.Millisecond) {
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				_, err := js.Publish(ctx, subject, []byte(body))
				cancel()
				if err == nil {
					break
				}
				if time.Now().After(deadline) {
					fmt.Fprintln(os.Stderr, "jobtail: publish:", err)
					break
				}
			}
			mu.Lock()
			fmt.Fprintf(out, "published %s\n", subject)
			out.Flush()
			mu.Unlock()
		}
	}()
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	<-sig
}
