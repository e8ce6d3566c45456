package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// server is the object store the benchmark runs against: the embedded
// S3 gateway (in this process), a MinIO process, or GCS's or Azure's
// emulator.
type server interface {
	// Endpoint is the store's http://host:port.
	Endpoint() string
	// Properties are the catalog properties reaching the store at
	// hostport (the proxy's address, or the store's own).
	Properties(hostport string) map[string]string
	// Warehouse is the warehouse location in bucket.
	Warehouse(bucket string) string
	CreateBucket(ctx context.Context, name string) error
	Close() error
}

// s3Server is an S3 server: the embedded gateway or MinIO.
type s3Server interface {
	Endpoint() string
	IcebergProperties() map[string]string
	CreateBucket(ctx context.Context, name string) error
	Close() error
}

// s3Store is an S3 server as a server.
type s3Store struct{ s3Server }

func (s s3Store) Properties(hostport string) map[string]string {
	p := s.IcebergProperties()
	p["s3.endpoint"] = "http://" + hostport
	return p
}

func (s s3Store) Warehouse(bucket string) string { return "s3://" + bucket + "/warehouse" }

// CPU is the server's when it runs as a process.
func (s s3Store) CPU() time.Duration {
	if c, ok := s.s3Server.(serverCPU); ok {
		return c.CPU()
	}
	return 0
}

// hostOf is the host:port of an http:// endpoint.
func hostOf(endpoint string) string {
	_, hp, _ := strings.Cut(endpoint, "://")
	return hp
}

// serverCPU is the CPU time of an S3 server that runs as its own process
// (MinIO); the in-process gateway's is part of the benchmark's own.
type serverCPU interface {
	CPU() time.Duration
}

// minio is a MinIO server on a free loopback port, its data under a
// directory of the work directory.
type minio struct {
	cmd      *exec.Cmd
	endpoint string
	client   *s3.Client
	done     chan error
}

const (
	minioUser   = "objstore-bench"
	minioSecret = "objstore-bench-secret"
	minioRegion = "us-east-1"
)

// startMinio starts the MinIO binary at bin (realparts/setup.sh builds
// it into ~/.cache/reactor-realparts/bin) and waits until it answers.
func startMinio(ctx context.Context, bin, dir string) (*minio, error) {
	addr, err := freeLoopbackPort()
	if err != nil {
		return nil, err
	}
	console, err := freeLoopbackPort()
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, "server", dir, "--address", addr, "--console-address", console, "--quiet")
	cmd.Env = append(os.Environ(), "MINIO_ROOT_USER="+minioUser, "MINIO_ROOT_PASSWORD="+minioSecret,
		"MINIO_BROWSER=off", "MINIO_UPDATE=off")
	logFile, err := os.Create(filepath.Join(filepath.Dir(dir), "minio.log"))
	if err != nil {
		return nil, err
	}
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		logFile.Close()
		return nil, fmt.Errorf("start minio %s: %w", bin, err)
	}
	m := &minio{cmd: cmd, endpoint: "http://" + addr, done: make(chan error, 1)}
	go func() { m.done <- cmd.Wait(); logFile.Close() }()
	m.client = s3.New(s3.Options{Region: minioRegion, BaseEndpoint: aws.String(m.endpoint), UsePathStyle: true,
		Credentials: credentials.NewStaticCredentialsProvider(minioUser, minioSecret, "")})
	deadline := time.Now().Add(60 * time.Second)
	for {
		resp, err := http.Get(m.endpoint + "/minio/health/ready")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return m, nil
			}
		}
		select {
		case err := <-m.done:
			return nil, fmt.Errorf("minio exited before it was ready (%v); see %s", err, logFile.Name())
		case <-ctx.Done():
			m.Close()
			return nil, ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			m.Close()
			return nil, errors.New("minio not ready after 60 s; see " + logFile.Name())
		}
	}
}

func (m *minio) Endpoint() string { return m.endpoint }

func (m *minio) IcebergProperties() map[string]string {
	return map[string]string{"s3.endpoint": m.endpoint, "s3.region": minioRegion,
		"s3.access-key-id": minioUser, "s3.secret-access-key": minioSecret}
}

func (m *minio) CreateBucket(ctx context.Context, name string) error {
	if _, err := m.client.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(name)}); err != nil {
		return fmt.Errorf("minio: create bucket %q: %w", name, err)
	}
	return nil
}

// Close stops MinIO with SIGTERM, then SIGKILL after 10 s.
func (m *minio) Close() error {
	_ = m.cmd.Process.Signal(os.Interrupt)
	select {
	case <-m.done:
	case <-time.After(10 * time.Second):
		_ = m.cmd.Process.Kill()
		<-m.done
	}
	return nil
}

// CPU is MinIO's user and system time.
func (m *minio) CPU() time.Duration { return processCPU(m.cmd.Process.Pid) }

// processCPU is a process's user and system time from /proc (clock ticks
// of 1/100 s, the kernel's USER_HZ on Linux).
func processCPU(pid int) time.Duration {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	// Fields after the command name, which is in parentheses and may hold spaces.
	_, rest, ok := strings.Cut(string(b), ") ")
	if !ok {
		return 0
	}
	f := strings.Fields(rest)
	if len(f) < 13 {
		return 0
	}
	utime, _ := strconv.ParseInt(f[11], 10, 64)
	stime, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(utime+stime) * 10 * time.Millisecond
}

func freeLoopbackPort() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}
