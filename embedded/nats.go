package embedded

import (
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats-server/v2/server"
)

// NATS is an in-process NATS server with JetStream enabled.
type NATS struct {
	srv *server.Server
}

// NATSOptions configure StartNATS.
type NATSOptions struct {
	// StoreDir holds JetStream's files; reuse it across restarts to keep
	// undelivered messages.
	StoreDir string
	// Port to listen on (loopback only); 0 picks a free one.
	Port int
}

// StartNATS starts the server and waits until it accepts connections.
func StartNATS(opts NATSOptions) (*NATS, error) {
	if opts.StoreDir == "" {
		return nil, errors.New("embedded nats: StoreDir is required")
	}
	port := opts.Port
	if port == 0 {
		port = server.RANDOM_PORT
	}
	srv, err := server.NewServer(&server.Options{
		ServerName: "reactor-embedded",
		Host:       "127.0.0.1",
		Port:       port,
		JetStream:  true,
		StoreDir:   opts.StoreDir,
		NoSigs:     true,
		NoLog:      true,
		// Keep JetStream's footprint small: this is a laptop/test server.
		JetStreamMaxMemory: 64 << 20,
		JetStreamMaxStore:  1 << 30,
	})
	if err != nil {
		return nil, fmt.Errorf("embedded nats: %w", err)
	}
	go srv.Start()
	if !srv.ReadyForConnections(15 * time.Second) {
		srv.Shutdown()
		return nil, errors.New("embedded nats: server not ready after 15s")
	}
	return &NATS{srv: srv}, nil
}

// URL is the client URL (nats://127.0.0.1:PORT).
func (n *NATS) URL() string { return n.srv.ClientURL() }

// Shutdown stops the server and waits for it to finish.
func (n *NATS) Shutdown() {
	n.srv.Shutdown()
	n.srv.WaitForShutdown()
}
