package triggers_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/iceberg-go/table"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/icereactor/reactor/embedded/embeddedtest"
	"github.com/icereactor/reactor/events"
	"github.com/icereactor/reactor/metrics"
	"github.com/icereactor/reactor/planner"
	"github.com/icereactor/reactor/tablename"
	"github.com/icereactor/reactor/triggers"
)

// catalogErrors stands in for a catalog whose errors quote its URL with
// credentials and run long (the one thing here that is not real: no catalog
// in this repository fails that way on demand). Table "gone" is unknown,
// table "flaky" fails once as a transient fault.
type catalogErrors struct{ flaky atomic.Int32 }

const leakedURL = "http://admin:CATPASS-x1@rest:8181/v1/namespaces/db/tables/t?token=CATTOKEN-y2"

func (c *catalogErrors) CheckCommit(events.CommitEvent) error  { return nil }
func (c *catalogErrors) CommitCovered(events.CommitEvent) bool { return false }

func (c *catalogErrors) Refresh(_ context.Context, t tablename.Name) (*table.Table, error) {
	ident := t.Ident()
	switch ident[len(ident)-1] {
	case "gone":
		return nil, fmt.Errorf("%w: GET %s: %s", planner.ErrUnknownTable, leakedURL, strings.Repeat("detail ", 100_000))
	case "flaky":
		if c.flaky.Add(1) == 1 {
			return nil, fmt.Errorf("GET %s: connection refused", leakedURL)
		}
	}
	return nil, nil
}

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// A dead letter's error and the log lines of a rejection and of a retry
// carry the cause with its credentials masked and cut to a few KiB,
// whatever the applier's error quoted.
func TestDeadLetterAndRetryLogsAreRedactedAndBounded(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	_, _, js := embeddedtest.JetStream(t, "")
	var logs lockedBuffer
	log := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	cons, err := triggers.StartCommits(ctx, js, triggers.CommitOptions{RetryBase: time.Millisecond, RetryMax: 10 * time.Millisecond},
		&catalogErrors{}, log, metrics.New())
	if err != nil {
		t.Fatal(err)
	}
	defer cons.Stop()
	for _, name := range []string{"gone", "flaky"} {
		if _, err := js.Publish(ctx, "iceberg.commits.db."+name, fmt.Appendf(nil, `{"namespace":"db","table":%q,"snapshot_id":1}`, name)); err != nil {
			t.Fatal(err)
		}
	}
	stream, err := js.Stream(ctx, triggers.DefaultDeadLetterStream)
	if err != nil {
		t.Fatal(err)
	}
	var dl events.DeadLetter
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("no dead letter; logs:\n%.3000s", logs.String())
		}
		msg, err := stream.GetMsg(ctx, 1)
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		if dl, err = events.DecodeDeadLetter(msg.Header, msg.Data); err != nil {
			t.Fatal(err)
		}
		if strings.Contains(logs.String(), "catalog reachable again") {
			break
		}
	}
	if dl.Reason != events.ReasonUnknownTable || !strings.Contains(dl.Error, "http://***@rest:8181") || len(dl.Error) > 4<<10 {
		t.Errorf("dead letter error (%d bytes): %.300s", len(dl.Error), dl.Error)
	}
	for where, text := range map[string]string{"dead letter": dl.Error, "logs": logs.String()} {
		for _, secret := range []string{"CATPASS", "CATTOKEN"} {
			if strings.Contains(text, secret) {
				t.Errorf("%s contains %s", where, secret)
			}
		}
	}
	if n := len(logs.String()); n > 32<<10 {
		t.Errorf("%d bytes of logs for two events", n)
	}
}
