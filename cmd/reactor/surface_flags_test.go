package main

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/icereactor/reactor/triggers"
	"github.com/icereactor/reactor/worker"
)

// The status pages' flags: loopback by default; anywhere else only with a
// token file or an explicit --status-allow-anonymous; beside /metrics when
// given the same address.
func TestStatusFlags(t *testing.T) {
	token := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(token, []byte("0123456789abcdef0123\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name       string
		args       []string
		env        map[string]string
		addr, file string
		wantErr    string
	}{
		{name: "loopback by default", addr: "127.0.0.1:9095"},
		{name: "disabled", args: []string{"--status-addr", ""}, addr: worker.StatusOff},
		{name: "all interfaces need a token", args: []string{"--status-addr", ":9095"}, wantErr: "--status-addr :9095 is not a loopback address"},
		{name: "beside /metrics needs a token too", args: []string{"--status-addr", ":9090"}, wantErr: "--status-addr :9090 is not a loopback address"},
		{name: "a token", args: []string{"--status-addr", ":9095", "--status-token-file", token}, addr: ":9095", file: token},
		{name: "a token from env, beside /metrics", env: map[string]string{"REACTOR_STATUS_ADDR": ":9090", "REACTOR_STATUS_TOKEN_FILE": token}, file: token},
		{name: "anonymous on purpose", args: []string{"--status-addr", "0.0.0.0:9095", "--status-allow-anonymous"}, addr: "0.0.0.0:9095"},
		{name: "a missing token file", args: []string{"--status-token-file", token + ".nope"}, wantErr: "--status-token-file"},
		{name: "localhost", args: []string{"--status-addr", "localhost:9095"}, addr: "localhost:9095"},
		{name: "ipv6 loopback", args: []string{"--status-addr", "[::1]:9095"}, addr: "[::1]:9095"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := parseRunConfig(tt.args, envMap(tt.env), &bytes.Buffer{})
			if tt.wantErr != "" {
				var uerr *usageError
				if !errors.As(err, &uerr) || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error = %v, want a usage error containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if cfg.statusAddr != tt.addr || cfg.statusToken != tt.file {
				t.Errorf("status addr %q token %q, want %q %q", cfg.statusAddr, cfg.statusToken, tt.addr, tt.file)
			}
		})
	}
}

// The stream limits and the unknown-table TTL: sizes with units, the
// discard policy by name, 0 turning the TTL off; nonsense refused.
func TestStreamFlags(t *testing.T) {
	cfg, err := parseRunConfig([]string{"--stream-max-bytes", "512MiB", "--stream-max-messages", "1000", "--stream-max-age", "24h",
		"--stream-discard", "old", "--dead-letter-max-bytes", "8MiB", "--unknown-table-ttl", "0"}, envMap(nil), &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	ev := cfg.commits.Limits
	if ev.MaxBytes != 512<<20 || ev.MaxMsgs != 1000 || ev.MaxAge != 24*time.Hour || ev.Discard != jetstream.DiscardOld ||
		cfg.notifications.Limits != ev || cfg.commits.DeadLetterLimits.MaxBytes != 8<<20 || cfg.commits.UnknownTableTTL >= 0 {
		t.Errorf("commits %+v, notifications %+v, dead letters %+v, ttl %s", ev, cfg.notifications.Limits, cfg.commits.DeadLetterLimits, cfg.commits.UnknownTableTTL)
	}
	def, err := parseRunConfig(nil, envMap(nil), &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	if def.commits.Limits.MaxBytes != triggers.DefaultEventLimits.MaxBytes || def.commits.Limits.Discard != jetstream.DiscardNew ||
		def.commits.UnknownTableTTL != triggers.DefaultUnknownTableTTL {
		t.Errorf("defaults: %+v ttl %s", def.commits.Limits, def.commits.UnknownTableTTL)
	}
	for _, bad := range [][]string{{"--stream-max-bytes", "lots"}, {"--stream-max-bytes", "0"}, {"--stream-discard", "newest"},
		{"--stream-max-messages", "-1"}, {"--unknown-table-ttl", "-1s"}, {"--dead-letter-max-age", "0s"}} {
		var uerr *usageError
		if _, err := parseRunConfig(bad, envMap(nil), &bytes.Buffer{}); !errors.As(err, &uerr) {
			t.Errorf("%v: %v, want a usage error", bad, err)
		}
	}
}
