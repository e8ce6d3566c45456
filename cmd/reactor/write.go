package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/icereactor/reactor/catalogs"
	"github.com/icereactor/reactor/redact"
	"github.com/icereactor/reactor/streamwriter"
	"github.com/icereactor/reactor/tablename"
	"github.com/icereactor/reactor/triggers"
	"github.com/icereactor/reactor/worker"
)

const writeDescription = `Appends small batches of rows to TABLE, one Iceberg commit per batch, and
publishes a commit event for each on NATS JetStream: a stand-in for a streaming
job, to watch reactor compact what it writes.

The table is created (with its namespace) if it does not exist, with the schema
reactor demo uses: id long, category string, payload string, partitioned by
identity(category). Each commit goes to the next of --partitions categories
(p0, p1, ...) in turn. Row ids start at 1 on every run.

The event is published on --commit-subject, the subject reactor run consumes:
a trailing '>' is replaced by namespace.table. When no JetStream stream stores
that subject yet, write creates the streams reactor run would create; if it may
not, it waits for reactor run to do so.

TABLE is namespace.table; flags may also follow TABLE. The catalog flags are
those of reactor run. Every flag can also be set through the environment
variable shown.`

// writeConfig is `reactor write`'s command line, validated.
type writeConfig struct {
	natsURL       string
	natsAuth      worker.NATSSecurity
	catalog       catalogs.Config
	ident         table.Identifier
	name          string // namespace.table
	commitSubject string // as reactor run takes it; may end in '>'
	publishTo     string // the concrete subject events go to
	interval      time.Duration
	rows          int
	partitions    int
	commits       int
	logLevel      slog.Level
}

func parseWriteConfig(args []string, getenv func(string) string, stdout io.Writer) (writeConfig, error) {
	fs := newFlagSet("write", "write [flags] TABLE", writeDescription)
	natsURL := fs.String("nats-url", "", "NATS server `URL` (required)")
	natsAuth := addNATSFlags(fs)
	cat := addCatalogFlags(fs, "`directory` of the embedded catalog")
	commitSubject := fs.String("commit-subject", triggers.DefaultCommitSubject,
		"NATS `subject` of commit events, as given to reactor run; a trailing '>' becomes namespace.table")
	interval := fs.Duration("interval", 2*time.Second, "time between two commits")
	rows := fs.Int("rows", 100, "rows per commit")
	partitions := fs.Int("partitions", 4, "number of categories (partitions) written in turn")
	commits := fs.Int("commits", 0, "stop after `n` commits; 0 writes until interrupted")
	logLevel := fs.String("log-level", "info", "log `level`: debug, info, warn or error")
	annotateEnv(fs)

	positional, err := parseFlagsAndArgs(fs, args, stdout)
	if err != nil {
		return writeConfig{}, err
	}
	name, err := oneArg(positional, "TABLE (namespace.table)")
	if err != nil {
		return writeConfig{}, err
	}
	if err := applyEnv(fs, getenv); err != nil {
		return writeConfig{}, &usageError{err: err}
	}
	ident, err := parseTableName(name)
	if err != nil {
		return writeConfig{}, err
	}
	cfg := writeConfig{
		natsURL:       strings.TrimSpace(*natsURL),
		ident:         ident,
		name:          name,
		commitSubject: strings.TrimSpace(*commitSubject),
		interval:      *interval,
		rows:          *rows,
		partitions:    *partitions,
		commits:       *commits,
	}
	if cfg.logLevel, err = parseLogLevel(*logLevel); err != nil {
		return writeConfig{}, err
	}
	switch {
	case cfg.natsURL == "":
		// An embedded server would be useless: reactor could not hear it.
		return writeConfig{}, usageErrorf("--nats-url is required: the commit events are for a reactor run elsewhere")
	case cfg.interval <= 0:
		return writeConfig{}, usageErrorf("--interval must be positive, got %v", cfg.interval)
	case cfg.rows < 1 || cfg.rows > 1_000_000:
		return writeConfig{}, usageErrorf("--rows must be between 1 and 1000000, got %d", cfg.rows)
	case cfg.partitions < 1 || cfg.partitions > 100:
		return writeConfig{}, usageErrorf("--partitions must be between 1 and 100, got %d", cfg.partitions)
	case cfg.commits < 0:
		return writeConfig{}, usageErrorf("--commits must not be negative, got %d", cfg.commits)
	}
	if err := checkNATSURL(cfg.natsURL); err != nil {
		return writeConfig{}, err
	}
	if cfg.natsAuth, err = natsAuth.resolve(cfg.natsURL); err != nil {
		return writeConfig{}, err
	}
	if cfg.publishTo, err = commitPublishSubject(cfg.commitSubject, ident); err != nil {
		return writeConfig{}, err
	}
	if cfg.catalog, err = cat.config(false); err != nil {
		return writeConfig{}, err
	}
	if cfg.catalog.Props == nil && *cat.dataDir == "" {
		return writeConfig{}, usageErrorf("--data-dir is required for the embedded catalog")
	}
	return cfg, nil
}

// parseTableName splits namespace.table (the namespace may be nested:
// a.b.table) into an identifier.
func parseTableName(name string) (table.Identifier, error) {
	ident, err := tablename.Parse(name)
	if err != nil {
		return nil, usageErrorf("want one TABLE as namespace.table, got %q", name)
	}
	return ident, nil
}

// commitPublishSubject turns the subject reactor run consumes into the one
// to publish on. reactor reads the table from the event, not the subject,
// so any subject the stream stores will do; namespace.table under the
// wildcard keeps the events of one table apart for anyone watching.
func commitPublishSubject(subject string, ident table.Identifier) (string, error) {
	if subject == "" {
		return "", usageErrorf("--commit-subject must not be empty")
	}
	tokens := strings.Split(subject, ".")
	for i, tok := range tokens {
		switch {
		case tok == "":
			return "", usageErrorf("--commit-subject %q has an empty token", subject)
		case tok == ">" && i == len(tokens)-1:
			return strings.Join(append(tokens[:i:i], ident...), "."), nil
		case tok == ">" || tok == "*":
			return "", usageErrorf("--commit-subject %q: only a trailing '>' can be filled in; give a concrete subject", subject)
		}
	}
	return subject, nil
}

// writeCmd is `reactor write TABLE`.
func writeCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	cfg, err := parseWriteConfig(args, os.Getenv, stdout)
	if err != nil {
		return err
	}
	log := slog.New(redact.Handler(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: cfg.logLevel})))

	opts := []nats.Option{nats.Name("reactor-write"), nats.MaxReconnects(-1)}
	secOpts, err := cfg.natsAuth.Options()
	if err != nil {
		return err
	}
	conn, err := nats.Connect(cfg.natsURL, append(opts, secOpts...)...)
	if err != nil {
		return fmt.Errorf("connect to NATS at %s: %w", redact.String(cfg.natsURL), redact.Error(worker.ExplainNATSError(err, cfg.natsAuth)))
	}
	defer conn.Close()
	js, err := jetstream.New(conn)
	if err != nil {
		return fmt.Errorf("jetstream: %w", err)
	}

	cfg.catalog.Logger = log
	cat, err := catalogs.Open(ctx, cfg.catalog)
	if err != nil {
		return catalogUsage(fmt.Errorf("open catalog: %w", err))
	}
	defer cat.Close()
	if err := ensureWriteTable(ctx, cat, cfg.ident, log); err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return err
	}
	if err := ensureCommitStream(ctx, js, cfg.commitSubject, cfg.publishTo, log); err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return err
	}

	w := streamwriter.AppendOnly(cat, cfg.ident, streamwriter.JetStreamPublisher(js, cfg.publishTo, log))
	log.Info("writing", "table", cfg.name, "subject", cfg.publishTo, "interval", cfg.interval,
		"rows", cfg.rows, "partitions", cfg.partitions, "commits", cfg.commits)

	tick := time.NewTicker(cfg.interval)
	defer tick.Stop()
	rows := 0
	for i := 0; cfg.commits == 0 || i < cfg.commits; i++ {
		if i > 0 {
			select {
			case <-ctx.Done():
				log.Info("stopped", "table", cfg.name, "commits", i, "rows", rows)
				return nil
			case <-tick.C:
			}
		}
		part := fmt.Sprintf("p%d", i%cfg.partitions)
		id, err := w.Commit(ctx, part, cfg.rows)
		if err != nil {
			if ctx.Err() != nil {
				// The commit may or may not have landed; the table says which.
				log.Info("stopped during a commit", "table", cfg.name, "commits", i, "rows", rows)
				return nil
			}
			return fmt.Errorf("commit %d to %s: %w", i+1, cfg.name, err)
		}
		rows += cfg.rows
		log.Info("committed", "table", cfg.name, "partition", "category="+part, "rows", cfg.rows,
			"snapshot_id", id, "commit", i+1)
	}
	log.Info("done", "table", cfg.name, "commits", cfg.commits, "rows", rows)
	return nil
}

// ensureWriteTable creates the table (and namespace) if it is missing, and
// refuses an existing table whose columns the writer cannot fill.
func ensureWriteTable(ctx context.Context, cat catalog.Catalog, ident table.Identifier, log *slog.Logger) error {
	tbl, err := cat.LoadTable(ctx, ident)
	switch {
	case err == nil:
		return checkWriteSchema(tbl)
	case !errors.Is(err, catalog.ErrNoSuchTable) && !errors.Is(err, catalog.ErrNoSuchNamespace):
		return fmt.Errorf("load %v: %w", ident, err)
	}
	if _, err := streamwriter.CreateTable(ctx, cat, ident, nil); err != nil {
		if !errors.Is(err, catalog.ErrTableAlreadyExists) {
			return err
		}
		// Another writer created it first: use theirs if it fits.
		if tbl, err = cat.LoadTable(ctx, ident); err != nil {
			return fmt.Errorf("load %v: %w", ident, err)
		}
		return checkWriteSchema(tbl)
	}
	log.Info("created table", "table", tablename.Format(ident), "partitioned_by", "identity(category)")
	return nil
}

// checkWriteSchema makes sure the writer's rows fit tbl: streamwriter builds
// its batches by column position and would fail on any other layout.
func checkWriteSchema(tbl *table.Table) error {
	want := streamwriter.Schema().Fields()
	got := tbl.Schema().Fields()
	ok := len(got) == len(want)
	for i := 0; ok && i < len(want); i++ {
		ok = got[i].Name == want[i].Name && got[i].Type.Equals(want[i].Type)
	}
	if !ok {
		return usageErrorf("table %v exists with schema %s; write needs %s (give another TABLE)",
			tbl.Identifier(), tbl.Schema(), streamwriter.Schema())
	}
	return nil
}

// streamWaitInterval is how often write checks again for a commit stream it
// could not create.
const streamWaitInterval = 2 * time.Second

// ensureCommitStream makes sure a JetStream stream stores what write
// publishes: a publish no stream stores is refused, and an event published
// before reactor's stream existed would be lost. With no such stream, it
// creates the streams reactor run creates (same function, same settings), so
// the writer may start first. An existing REACTOR_COMMITS stream is never
// changed: it belongs to reactor run.
func ensureCommitStream(ctx context.Context, js jetstream.JetStream, filter, subject string, log *slog.Logger) error {
	for waiting := false; ; {
		name, err := js.StreamNameBySubject(ctx, subject)
		if err == nil {
			if waiting {
				log.Info("commit-event stream found", "stream", name, "subject", subject)
			}
			return nil
		}
		if !errors.Is(err, jetstream.ErrStreamNotFound) {
			return fmt.Errorf("look up the stream for %q: %w", subject, err)
		}
		if _, serr := js.Stream(ctx, triggers.DefaultCommitStream); serr == nil {
			return usageErrorf("stream %s exists but does not store subject %q: give write the --commit-subject reactor run uses",
				triggers.DefaultCommitStream, subject)
		}
		cerr := triggers.EnsureStreams(ctx, js, triggers.CommitOptions{Subject: filter})
		if cerr == nil {
			log.Info("created the commit-event streams reactor run uses", "stream", triggers.DefaultCommitStream, "subject", filter)
			return nil
		}
		if !waiting {
			log.Warn("no JetStream stream stores commit events and write could not create one; waiting for reactor run to create it",
				"subject", subject, "stream", triggers.DefaultCommitStream, "error", cerr)
			waiting = true
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(streamWaitInterval):
		}
	}
}
