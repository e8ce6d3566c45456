package main

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

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
