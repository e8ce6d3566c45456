package main

// Tests of deploy/nats/nats-server.conf, the example subject permissions:
// its subjects are reactor's defaults, only the pipeline may publish commit
// events and only MinIO notifications, and a real server running it lets
// reactor do all it needs while refusing what each user must not do.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/icereactor/reactor/embedded/embeddedtest"
	"github.com/icereactor/reactor/events"
	"github.com/icereactor/reactor/lease"
	"github.com/icereactor/reactor/triggers"
	"github.com/icereactor/reactor/worker"
)

const (
	natsExample = "../../deploy/nats/nats-server.conf"
	// natsTLSExample is natsExample over TLS, what production runs.
	natsTLSExample = "../../deploy/nats/nats-server-tls.conf"
)

// natsExamplePasswords sets the environment the example reads its
// passwords from and returns them by user.
func natsExamplePasswords(t *testing.T) map[string]string {
	t.Helper()
	pw := map[string]string{}
	for _, user := range []string{"reactor", "pipeline", "minio", "monitor"} {
		pw[user] = user + "-pw-" + fmt.Sprint(time.Now().UnixNano()%100000)
		t.Setenv(strings.ToUpper(user)+"_NATS_PASSWORD", pw[user])
	}
	return pw
}

func loadNATSExample(t *testing.T) (*server.Options, map[string]*server.User) {
	t.Helper()
	opts, err := server.ProcessConfigFile(natsExample)
	if err != nil {
		t.Fatal(err)
	}
	users := map[string]*server.User{}
	for _, u := range opts.Users {
		users[u.Username] = u
	}
	return opts, users
}

// allowed reports whether perm lets a client use subject.
func allowed(perm *server.SubjectPermission, subject string) bool {
	if perm == nil {
		return true
	}
	ok := len(perm.Allow) == 0
	for _, p := range perm.Allow {
		ok = ok || server.SubjectMatchesFilter(subject, p)
	}
	for _, p := range perm.Deny {
		ok = ok && !server.SubjectMatchesFilter(subject, p)
	}
	return ok
}

func TestNATSPermissionsExampleMatchesReactorsSubjects(t *testing.T) {
	pw := natsExamplePasswords(t)
	_, users := loadNATSExample(t)
	for name, want := range pw {
		if u := users[name]; u == nil || u.Password != want || u.Permissions == nil {
			t.Fatalf("user %s missing, without its password from the environment, or without permissions", name)
		}
	}
	commitSubject := strings.TrimSuffix(triggers.DefaultCommitSubject, ">") + "db.events"
	leaseStream := "KV_" + lease.DefaultBucket
	streams := []string{triggers.DefaultCommitStream, triggers.DefaultNotificationStream, triggers.DefaultDeadLetterStream,
		leaseStream, triggers.DefaultShardStream}
	consumers := map[string]string{triggers.DefaultCommitStream: triggers.DefaultDurable,
		triggers.DefaultNotificationStream: triggers.DefaultNotificationDurable}
	var reactorPub []string
	for _, s := range streams {
		if s == leaseStream || s == triggers.DefaultShardStream {
			continue // below
		}
		for _, op := range []string{"CREATE", "UPDATE", "INFO"} {
			reactorPub = append(reactorPub, "$JS.API.STREAM."+op+"."+s)
		}
	}
	for s, d := range consumers {
		reactorPub = append(reactorPub, "$JS.API.CONSUMER.CREATE."+s+"."+d, "$JS.API.CONSUMER.MSG.NEXT."+s+"."+d,
			"$JS.ACK."+s+"."+d+".1.1.1.1700000000000000000.0")
	}
	// Replicas: the lease bucket and the shard stream.
	shardDurable := "reactor-shard-3"
	for _, s := range []string{leaseStream, triggers.DefaultShardStream} {
		for _, op := range []string{"CREATE", "UPDATE", "INFO"} {
			reactorPub = append(reactorPub, "$JS.API.STREAM."+op+"."+s)
		}
	}
	reactorPub = append(reactorPub, "$JS.API.INFO", "$KV."+lease.DefaultBucket+".shard.3",
		"$JS.API.CONSUMER.CREATE."+leaseStream+".abc.$KV."+lease.DefaultBucket+".>",
		"$JS.API.DIRECT.GET."+leaseStream+".$KV."+lease.DefaultBucket+".shard.3",
		triggers.ShardSubjectPrefix+"3",
		"$JS.API.CONSUMER.CREATE."+triggers.DefaultShardStream+"."+shardDurable+"."+triggers.ShardSubjectPrefix+"3",
		"$JS.API.CONSUMER.INFO."+triggers.DefaultShardStream+"."+shardDurable,
		"$JS.API.CONSUMER.MSG.NEXT."+triggers.DefaultShardStream+"."+shardDurable,
		"$JS.ACK."+triggers.DefaultShardStream+"."+shardDurable+".1.1.1.1700000000000000000.0")
	reactorPub = append(reactorPub, triggers.DefaultDeadLetterSubject,
		events.JobSubject(events.DefaultJobSubjectPrefix, events.JobSucceeded, "db.events"),
		worker.DefaultHealthSubjectPrefix+".db.events", worker.DefaultOrphanSubjectPrefix+".db.events")
	for _, s := range reactorPub {
		if !allowed(users["reactor"].Permissions.Publish, s) {
			t.Errorf("reactor may not publish %s", s)
		}
	}
	// A restarted replica asks its predecessor's incarnation whether it is
	// alive; the asked one answers to the asker's inbox.
	aliveSubject := lease.AliveSubjectPrefix + "." + lease.DefaultBucket + ".pod-0.0123456789ab"
	if !allowed(users["reactor"].Permissions.Publish, aliveSubject) || !allowed(users["reactor"].Permissions.Subscribe, aliveSubject) ||
		!allowed(users["reactor"].Permissions.Publish, worker.InboxPrefix+".x.y") {
		t.Errorf("reactor may not ask (%s) or answer (%s.>) liveness questions", aliveSubject, worker.InboxPrefix)
	}
	if !allowed(users["reactor"].Permissions.Subscribe, worker.InboxPrefix+".x.y") {
		t.Errorf("reactor may not subscribe to its inbox %s.>", worker.InboxPrefix)
	}
	// A hot table's fast lane reads its commit subject (triggers.fastLane).
	if !allowed(users["reactor"].Permissions.Subscribe, commitSubject) {
		t.Errorf("reactor may not subscribe to %s (the fast lane of a hot table)", commitSubject)
	}
	// Who may do what: exactly one user publishes each input, and nobody
	// can delete or purge reactor's streams or read its inbox.
	exclusive := []struct {
		what, subject string
		subscribe     bool
		only          string // "" : nobody
	}{
		{"publish commit events", commitSubject, false, "pipeline"},
		{"publish notifications", triggers.DefaultNotificationSubject, false, "minio"},
		{"publish dead letters", triggers.DefaultDeadLetterSubject, false, "reactor"},
		{"publish job events", events.JobSubject(events.DefaultJobSubjectPrefix, events.JobStarted, "db.events"), false, "reactor"},
		{"read reactor's inbox", worker.InboxPrefix + ".abc", true, "reactor"},
		{"read job events", events.JobSubject(events.DefaultJobSubjectPrefix, events.JobStarted, "db.events"), true, "monitor"},
		{"delete the commit stream", "$JS.API.STREAM.DELETE." + triggers.DefaultCommitStream, false, ""},
		{"purge the dead letters", "$JS.API.STREAM.PURGE." + triggers.DefaultDeadLetterStream, false, ""},
		{"delete a commit event", "$JS.API.STREAM.MSG.DELETE." + triggers.DefaultCommitStream, false, ""},
		{"take a table lease", "$KV." + lease.DefaultBucket + ".shard.3", false, "reactor"},
		{"forward an event to a shard", triggers.ShardSubjectPrefix + "3", false, "reactor"},
		{"ask a replica whether it is alive", aliveSubject, false, "reactor"},
		{"answer as a replica", aliveSubject, true, "reactor"},
		{"delete the lease bucket", "$JS.API.STREAM.DELETE." + leaseStream, false, ""},
		{"acknowledge for reactor", "$JS.ACK." + triggers.DefaultCommitStream + "." + triggers.DefaultDurable + ".1.1.1.1.0", false, "reactor"},
	}
	for _, e := range exclusive {
		var who []string
		for name, u := range users {
			perm := u.Permissions.Publish
			if e.subscribe {
				perm = u.Permissions.Subscribe
			}
			if allowed(perm, e.subject) {
				who = append(who, name)
			}
		}
		slices.Sort(who)
		want := []string{}
		if e.only != "" {
			want = []string{e.only}
		}
		if !slices.Equal(who, want) && !(len(who) == 0 && len(want) == 0) {
			t.Errorf("%s (%s): allowed for %v, want %v", e.what, e.subject, who, want)
		}
	}
	// Every stream and consumer the file names is one of reactor's.
	data, err := os.ReadFile(natsExample)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range regexp.MustCompile(`\$JS\.(?:API\.STREAM\.(?:CREATE|UPDATE|INFO|DELETE|PURGE|MSG\.GET|MSG\.DELETE)|API\.CONSUMER\.(?:CREATE|DURABLE\.CREATE|INFO|DELETE|MSG\.NEXT)|ACK)\.([A-Za-z0-9_]+)(?:\.([A-Za-z0-9_-]+))?`).FindAllStringSubmatch(string(data), -1) {
		if !slices.Contains(streams, m[1]) {
			t.Errorf("%s names stream %s, not one of reactor's %v", m[0], m[1], streams)
		}
		if m[2] != "" && consumers[m[1]] != m[2] {
			t.Errorf("%s names consumer %s of %s; reactor's is %q", m[0], m[2], m[1], consumers[m[1]])
		}
	}
}

// serverLog collects what the NATS server logs (permission violations are
// errors there).
type serverLog struct {
	mu    sync.Mutex
	lines []string
}

func (l *serverLog) add(level, format string, v ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lines = append(l.lines, level+" "+fmt.Sprintf(format, v...))
}
func (l *serverLog) Noticef(f string, v ...any) { l.add("INF", f, v...) }
func (l *serverLog) Warnf(f string, v ...any)   { l.add("WRN", f, v...) }
func (l *serverLog) Fatalf(f string, v ...any)  { l.add("FTL", f, v...) }
func (l *serverLog) Errorf(f string, v ...any)  { l.add("ERR", f, v...) }
func (l *serverLog) Debugf(f string, v ...any)  {}
func (l *serverLog) Tracef(f string, v ...any)  {}

func (l *serverLog) violations() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for _, s := range l.lines {
		if strings.Contains(s, "Violation") {
			out = append(out, s)
		}
	}
	return out
}

// A real server running the example: reactor starts, consumes the
// pipeline's commit events, compacts, publishes job events (read by the
// monitor user) and dead-letters a malformed event, without one permission
// violation; then each user's forbidden publishes are refused.
func TestNATSPermissionsExampleOnARealServer(t *testing.T) {
	pw := natsExamplePasswords(t)
	// Over TLS, as deploy/nats/nats-server-tls.conf serves it: every
	// client below checks the server's certificate against the CA.
	certs := embeddedtest.NewCertificates(t, "")
	t.Setenv("NATS_TLS_CERT", certs.ServerCert)
	t.Setenv("NATS_TLS_KEY", certs.ServerKey)
	t.Setenv("NATS_TLS_CA", certs.CA)
	opts, err := server.ProcessConfigFile(natsTLSExample)
	if err != nil {
		t.Fatal(err)
	}
	if opts.TLSConfig == nil {
		t.Fatalf("%s serves no TLS", natsTLSExample)
	}
	dir := t.TempDir()
	opts.Host, opts.Port, opts.HTTPPort = "127.0.0.1", server.RANDOM_PORT, 0
	opts.StoreDir, opts.NoSigs = filepath.Join(dir, "jetstream"), true
	opts.JetStreamMaxMemory, opts.JetStreamMaxStore = 64<<20, 1<<30
	srv, err := server.NewServer(opts)
	if err != nil {
		t.Fatal(err)
	}
	tlsCA := []string{"--nats-tls-ca", certs.CA}
	logs := &serverLog{}
	srv.SetLoggerV2(logs, false, false, false)
	go srv.Start()
	t.Cleanup(func() { srv.Shutdown(); srv.WaitForShutdown() })
	if !srv.ReadyForConnections(15 * time.Second) {
		t.Fatal("nats-server not ready")
	}
	hostPort := srv.Addr().String()
	nc, err := nats.Connect("nats://" + hostPort)
	if err == nil || !errors.Is(err, nats.ErrTLS) {
		t.Errorf("a client without the CA connected, or not for TLS: %v", err)
	}
	if nc != nil {
		nc.Close()
	}
	urlFor := func(user string) string { return "nats://" + user + ":" + pw[user] + "@" + hostPort }

	thresholdsFile := filepath.Join(dir, "thresholds.yaml")
	if err := os.WriteFile(thresholdsFile, []byte("defaults:\n  small_file_count: 5\n  min_input_files: 5\n  quiet_period: 100ms\n  cooldown: 500ms\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	var runErr syncBuffer
	runDone := make(chan int, 1)
	go func() {
		runDone <- execute(ctx, append([]string{"run", "--nats-url", urlFor("reactor"), "--data-dir", dir, "--thresholds", thresholdsFile,
			"--http-addr", "", "--status-addr", ""}, tlsCA...), &syncBuffer{}, &runErr)
	}()
	defer func() { cancel(); within(t, runDone, time.Minute, "reactor run to return after its context ended") }()
	waitFor(t, "reactor running", func() bool { return strings.Contains(runErr.String(), "reactor running") }, &runErr)

	monitor := connectAs(t, urlFor("monitor"), certs.CA)
	jobs, err := monitor.nc.SubscribeSync(events.DefaultJobSubjectPrefix + ".>")
	if err != nil {
		t.Fatal(err)
	}
	if err := monitor.nc.Flush(); err != nil {
		t.Fatal(err)
	}

	// The pipeline: reactor write publishes six commit events.
	var wOut, wErr syncBuffer
	if code := execute(ctx, append([]string{"write", "db.events", "--nats-url", urlFor("pipeline"), "--data-dir", dir,
		"--commits", "6", "--interval", "20ms", "--partitions", "1", "--rows", "10"}, tlsCA...), &wOut, &wErr); code != 0 {
		t.Fatalf("write exit %d:\n%s", code, wErr.String())
	}
	var succeeded events.JobEvent
	for succeeded.Phase != events.JobSucceeded {
		msg, err := jobs.NextMsg(2 * time.Minute)
		if err != nil {
			t.Fatalf("no job event for the monitor: %v\nreactor:\n%s", err, runErr.String())
		}
		if err := json.Unmarshal(msg.Data, &succeeded); err != nil {
			t.Fatal(err)
		}
	}

	// A malformed commit event from the pipeline is dead-lettered, and the
	// monitor can read the dead letter.
	pipeline := connectAs(t, urlFor("pipeline"), certs.CA)
	pjs, err := jetstream.New(pipeline.nc)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := pjs.Publish(ctx, "iceberg.commits.db.events", []byte(`{"namespace":"db"`)); err != nil {
		t.Fatal(err)
	}
	mjs, err := jetstream.New(monitor.nc)
	if err != nil {
		t.Fatal(err)
	}
	var dl events.DeadLetter
	waitFor(t, "the dead letter", func() bool {
		stream, err := mjs.Stream(ctx, triggers.DefaultDeadLetterStream)
		if err != nil {
			return false
		}
		msg, err := stream.GetMsg(ctx, 1)
		if err != nil {
			return false
		}
		dl, err = events.DecodeDeadLetter(msg.Header, msg.Data)
		return err == nil
	}, &runErr)
	if dl.Reason != events.ReasonMalformed || string(dl.Payload) != `{"namespace":"db"` {
		t.Errorf("dead letter %+v", dl)
	}
	// A second reactor started by mistake under the first one's replica
	// name (both default to the host name) asks it whether it is alive,
	// gets its answer, and takes no table.
	dupCtx, dupCancel := context.WithCancel(ctx)
	var dupErr syncBuffer
	dupDone := make(chan int, 1)
	go func() {
		dupDone <- execute(dupCtx, append([]string{"run", "--nats-url", urlFor("reactor"), "--data-dir", dir, "--thresholds", thresholdsFile,
			"--http-addr", "", "--status-addr", ""}, tlsCA...), &syncBuffer{}, &dupErr)
	}()
	waitFor(t, "the duplicate refusing the name in use", func() bool {
		return strings.Contains(dupErr.String(), "its replica name is in use")
	}, &dupErr)
	dupCancel()
	within(t, dupDone, time.Minute, "the duplicate reactor to return")

	if v := logs.violations(); len(v) > 0 {
		t.Fatalf("permission violations while reactor, the pipeline and the monitor did their work:\n%s", strings.Join(v, "\n"))
	}
	if strings.Contains(runErr.String(), pw["reactor"]) || strings.Contains(wErr.String(), pw["pipeline"]) {
		t.Error("a password is in the logs")
	}

	// What each user must not do.
	minio := connectAs(t, urlFor("minio"), certs.CA)
	forbidden := []struct {
		who     *natsClient
		subject string
	}{
		{pipeline, triggers.DefaultNotificationSubject},
		{pipeline, triggers.DefaultDeadLetterSubject},
		{pipeline, "$JS.API.STREAM.DELETE." + triggers.DefaultCommitStream},
		{pipeline, "$JS.API.STREAM.PURGE." + triggers.DefaultNotificationStream},
		{minio, "iceberg.commits.db.events"},
		{minio, "reactor.jobs.succeeded.db.events"},
		{monitor, "iceberg.commits.db.events"},
		{monitor, triggers.DefaultNotificationSubject},
	}
	for _, f := range forbidden {
		if err := f.who.nc.Publish(f.subject, []byte(`{}`)); err != nil {
			t.Fatal(err)
		}
		if err := f.who.expectViolation(t); !strings.Contains(err.Error(), f.subject) {
			t.Errorf("%s publishing %s: %v", f.who.user, f.subject, err)
		}
	}
	if _, err := pipeline.nc.SubscribeSync(worker.InboxPrefix + ".>"); err != nil {
		t.Fatal(err)
	}
	if err := pipeline.expectViolation(t); !strings.Contains(err.Error(), worker.InboxPrefix) {
		t.Errorf("pipeline reading reactor's inbox: %v", err)
	}
	// The server logged each refusal (so the check above that it logged
	// none while reactor worked was not vacuous).
	if v := logs.violations(); len(v) < len(forbidden)+1 {
		t.Errorf("the server logged %d violations for %d refused operations", len(v), len(forbidden)+1)
	}
}

type natsClient struct {
	user string
	nc   *nats.Conn
	errs chan error
}

func connectAs(t *testing.T, url, caFile string) *natsClient {
	t.Helper()
	c := &natsClient{errs: make(chan error, 16)}
	c.user = strings.SplitN(strings.TrimPrefix(url, "nats://"), ":", 2)[0]
	nc, err := nats.Connect(url, nats.Name("test-"+c.user), nats.RootCAs(caFile), nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) {
		c.errs <- err
	}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	c.nc = nc
	return c
}

// expectViolation waits for the server's refusal of the client's last
// operation.
func (c *natsClient) expectViolation(t *testing.T) error {
	t.Helper()
	if err := c.nc.Flush(); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-c.errs:
		if !errors.Is(err, nats.ErrPermissionViolation) {
			t.Fatalf("%s: %v, want a permission violation", c.user, err)
		}
		return err
	case <-time.After(time.Minute):
		t.Fatalf("%s: the server did not refuse", c.user)
		return nil
	}
}

func waitFor(t *testing.T, what string, cond func() bool, logs *syncBuffer) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("gave up waiting for %s; reactor:\n%s", what, logs.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}
