package main

import (
	"bytes"
	"context"

	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
)

// emulator is a store's emulator running as a process: fake-gcs-server
// (GCS) or Azurite (Azure Blob storage). Neither is the store itself;
// they answer its API, so request counts carry over, times do not.
type emulator struct {
	cmd      *exec.Cmd
	endpoint string
	done     chan error
	log      string
}

// azuriteAccount and azuriteKey are Azurite's well-known development
// account (public, documented by Microsoft).
const (
	azuriteAccount = "devstoreaccount1"
	azuriteKey     = "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="
)

func startEmulator(ctx context.Context, name string, argv []string, endpoint, ready, dir string) (*emulator, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	logPath := filepath.Join(filepath.Dir(dir), name+".log")
	logFile, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		logFile.Close()
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	e := &emulator{cmd: cmd, endpoint: endpoint, done: make(chan error, 1), log: logPath}
	go func() { e.done <- cmd.Wait(); logFile.Close() }()
	deadline := time.Now().Add(60 * time.Second)
	for {
		resp, err := http.Get(endpoint + ready)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode < 500 {
				return e, nil
			}
		}
		select {
		case err := <-e.done:
			return nil, fmt.Errorf("%s exited before it was ready (%v); see %s", name, err, logPath)
		case <-ctx.Done():
			_ = e.Close()
			return nil, ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			_ = e.Close()
			return nil, fmt.Errorf("%s not ready after 60 s; see %s", name, logPath)
		}
	}
}

func (e *emulator) Endpoint() string { return e.endpoint }

// CPU is the emulator's user and system time.
func (e *emulator) CPU() time.Duration { return processCPU(e.cmd.Process.Pid) }

// Close stops the emulator with SIGTERM, then SIGKILL after 10 s.
func (e *emulator) Close() error {
	_ = e.cmd.Process.Signal(os.Interrupt)
	select {
	case <-e.done:
	case <-time.After(10 * time.Second):
		_ = e.cmd.Process.Kill()
		<-e.done
	}
	return nil
}

// fakeGCS is fake-gcs-server, GCS's emulator, with its objects on disk.
type fakeGCS struct{ *emulator }

func startFakeGCS(ctx context.Context, bin, dir string) (*fakeGCS, error) {
	addr, err := freeLoopbackPort()
	if err != nil {
		return nil, err
	}
	_, port, _ := strings.Cut(addr, ":")
	e, err := startEmulator(ctx, "fake-gcs-server", []string{bin, "-scheme", "http", "-host", "127.0.0.1", "-port", port,
		"-backend", "filesystem", "-filesystem-root", dir, "-public-host", addr, "-external-url", "http://" + addr,
		"-log-level", "warn"}, "http://"+addr, "/storage/v1/b", dir)
	if err != nil {
		return nil, err
	}
	return &fakeGCS{e}, nil
}

func (g *fakeGCS) Properties(hostport string) map[string]string {
	return map[string]string{"gcs.service.host": "http://" + hostport + "/storage/v1/", "gcs.no-auth": "true"}
}

func (g *fakeGCS) Warehouse(bucket string) string { return "gs://" + bucket + "/warehouse" }

func (g *fakeGCS) CreateBucket(ctx context.Context, name string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, g.endpoint+"/storage/v1/b?project=bench",
		bytes.NewReader(fmt.Appendf(nil, `{"name":%q}`, name)))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(resp.Body)
		return fmt.Errorf("fake-gcs-server: create bucket %q: %s: %s", name, resp.Status, body)
	}
	return nil
}

// azurite is Azurite's Blob service, Azure Blob storage's emulator.
type azurite struct{ *emulator }

func startAzurite(ctx context.Context, bin, dir string) (*azurite, error) {
	addr, err := freeLoopbackPort()
	if err != nil {
		return nil, err
	}
	host, port, _ := strings.Cut(addr, ":")
	e, err := startEmulator(ctx, "azurite", []string{bin, "--blobHost", host, "--blobPort", port, "--location", dir,
		"--skipApiVersionCheck", "--loose", "--silent", "--disableTelemetry"}, "http://"+addr, "/"+azuriteAccount+"?comp=list", dir)
	if err != nil {
		return nil, err
	}
	return &azurite{e}, nil
}

func (a *azurite) Properties(hostport string) map[string]string {
	return map[string]string{"adls.auth.shared-key.account.name": azuriteAccount, "adls.auth.shared-key.account.key": azuriteKey,
		"adls.endpoint": hostport, "adls.protocol": "http"}
}

func (a *azurite) Warehouse(container string) string {
	return "abfs://" + container + "@" + azuriteAccount + ".dfs.core.windows.net/warehouse"
}

func (a *azurite) CreateBucket(ctx context.Context, name string) error {
	cred, err := azblob.NewSharedKeyCredential(azuriteAccount, azuriteKey)
	if err != nil {
		return err
	}
	cl, err := azblob.NewClientWithSharedKeyCredential(a.endpoint+"/"+azuriteAccount, cred, nil)
	if err != nil {
		return err
	}
	if _, err := cl.CreateContainer(ctx, name, nil); err != nil {
		return fmt.Errorf("azurite: create container %q: %w", name, err)
	}
	return nil
}
