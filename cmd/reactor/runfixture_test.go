package main

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/icereactor/reactor/embedded"
	"github.com/icereactor/reactor/embedded/embeddedtest"
	"github.com/icereactor/reactor/events"
	"github.com/icereactor/reactor/streamwriter"
	"github.com/icereactor/reactor/triggers"
)

// runFixture is what the tests that run `reactor run` as a child process
// share: an embedded NATS with reactor's streams, the embedded catalog
// under dir (the child opens the same one with --data-dir dir) holding
// db.events, and a writer that publishes a commit event per commit.
type runFixture struct {
	srv    *embedded.NATS
	nc     *nats.Conn
	js     jetstream.JetStream
	cat    catalog.Catalog
	ident  table.Identifier
	writer *streamwriter.Writer
}

func newRunFixture(t *testing.T, ctx context.Context, dir string) runFixture {
	t.Helper()
	f := runFixture{ident: table.Identifier{"db", "events"}}
	f.srv, f.nc, f.js = embeddedtest.JetStream(t, filepath.Join(dir, "nats"))
	if err := triggers.EnsureStreams(ctx, f.js, triggers.CommitOptions{}); err != nil {
		t.Fatal(err)
	}
	cat, err := embedded.OpenCatalog(ctx, filepath.Join(dir, "catalog"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cat.(interface{ Close() error }).Close() })
	f.cat = cat
	if _, err := streamwriter.CreateTable(ctx, cat, f.ident, nil); err != nil {
		t.Fatal(err)
	}
	f.writer = streamwriter.New(cat, f.ident, func(ctx context.Context, ev events.CommitEvent) error {
		data, err := ev.Encode()
		if err != nil {
			return err
		}
		_, err = f.js.Publish(ctx, "iceberg.commits.db.events", data)
		return err
	})
	return f
}
