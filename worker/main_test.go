package worker

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/icereactor/reactor/embedded"
	"github.com/icereactor/reactor/embedded/s3gateway"
)

// The S3 end-to-end tests share one embedded versitygw (one per process is
// all versitygw supports) publishing its bucket notifications to one NATS
// server. Every other test starts NATS servers of its own.
var (
	sharedNATS    *embedded.NATS
	sharedGateway *s3gateway.Gateway
	// sharedGatewayRoot holds the gateway's buckets as directories (posix
	// backend): tests age objects there, since the gateway reports a
	// file's modification time as the object's LastModified.
	sharedGatewayRoot string
)

const gatewaySubject = "versitygw.events"

func TestMain(m *testing.M) { os.Exit(runMain(m)) }

func runMain(m *testing.M) int {
	dir, err := os.MkdirTemp("", "reactor-worker-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	// versitygw changes the working directory: absolute paths only.
	if dir, err = filepath.Abs(dir); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	sharedNATS, err = embedded.StartNATS(embedded.NATSOptions{StoreDir: filepath.Join(dir, "nats")})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer sharedNATS.Shutdown()
	sharedGatewayRoot = filepath.Join(dir, "s3")
	sharedGateway, err = s3gateway.Start(context.Background(), s3gateway.Options{
		RootDir: sharedGatewayRoot,
		NATSURL: sharedNATS.URL(),
		Subject: gatewaySubject,
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer sharedGateway.Close()
	return m.Run()
}
