package sparkrun

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"maps"
	"os"
	"strings"
	"sync"

	"github.com/apache/spark-connect-go/spark/client/channel"
	"github.com/apache/spark-connect-go/spark/sql"
	"github.com/apache/spark-connect-go/spark/sql/types"
	"golang.org/x/oauth2"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/credentials/oauth"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"

	"github.com/icereactor/reactor/redact"
	"github.com/icereactor/reactor/thresholds"
)

// Session is one Spark Connect session, used for one job.
type Session interface {
	// Exec runs one statement and returns its result columns and rows.
	Exec(ctx context.Context, statement string) (columns []string, rows [][]any, err error)
	// Interrupt asks the server to stop every operation of the job
	// (through Spark Connect's Interrupt, by the job's operation tag). gone
	// reports that the server no longer has the session the job ran in (it
	// restarted): nothing of the job can still be running there.
	Interrupt(ctx context.Context) (interrupted []string, gone bool, err error)
	// Close releases the session on the server (best effort).
	Close()
}

// Dialer opens a session for the job tagged tag, checking that the server
// answers and has catalog. The real one is [Dial]; tests pass their own.
type Dialer func(ctx context.Context, set thresholds.SparkSettings, catalog, tag string) (Session, error)

// The Spark Connect service and messages reactor uses beyond what the Go
// client exposes (Interrupt, ReleaseSession, operation tags). The client
// links their descriptors; they are looked up by name, so no generated
// code of the client's internal package is imported.
const (
	serviceInterrupt      = "/spark.connect.SparkConnectService/Interrupt"
	serviceReleaseSession = "/spark.connect.SparkConnectService/ReleaseSession"
	msgExecutePlanRequest = "spark.connect.ExecutePlanRequest"
	msgInterruptRequest   = "spark.connect.InterruptRequest"
	msgInterruptResponse  = "spark.connect.InterruptResponse"
	msgReleaseRequest     = "spark.connect.ReleaseSessionRequest"
	msgReleaseResponse    = "spark.connect.ReleaseSessionResponse"
	interruptByTag        = 2 // InterruptRequest.InterruptType INTERRUPT_TYPE_TAG
)

// errNoCatalog: the server answers but has no catalog of that name.
var errNoCatalog = errors.New("the Spark server has no such catalog")

// Dial connects to the Spark Connect server set names. The token comes
// from set.TokenFile (read now, so a rotated secret is used) or
// set.TokenEnv; with a token, or use_ssl=true in the endpoint, the
// connection uses TLS. Errors never quote the token.
func Dial(ctx context.Context, set thresholds.SparkSettings, catalog, tag string) (Session, error) {
	token, err := readToken(set)
	if err != nil {
		return nil, err
	}
	base, err := channel.NewBuilder(set.Endpoint)
	if err != nil {
		return nil, fmt.Errorf("spark endpoint %s: %w", redact.String(set.Endpoint), err)
	}
	b := &builder{base: base, token: token, tag: tag, headers: maps.Clone(base.Headers())}
	if v, ok := b.headers["use_ssl"]; ok {
		b.tls = strings.EqualFold(v, "true")
		delete(b.headers, "use_ssl")
	}
	spark, err := sql.NewSessionBuilder().WithChannelBuilder(b).Build(ctx)
	if err != nil {
		return nil, redact.Error(err)
	}
	s := &session{spark: spark, b: b}
	// One cheap round trip: the server answers, and knows the catalog
	// the statements name (a typo would fail every job the same way).
	if _, err := spark.Config().Get(ctx, "spark.sql.catalog."+catalog); err != nil {
		s.Close()
		if isTransport(err) {
			return nil, fmt.Errorf("reach Spark Connect at %s: %w", redact.String(set.Endpoint), redact.Error(err))
		}
		return nil, fmt.Errorf("%w: spark.sql.catalog.%s is not set on %s (%v)", errNoCatalog, catalog, redact.String(set.Endpoint), redact.Error(err))
	}
	return s, nil
}

func readToken(set thresholds.SparkSettings) (string, error) {
	switch {
	case set.TokenFile != "":
		data, err := os.ReadFile(set.TokenFile)
		if err != nil {
			return "", fmt.Errorf("spark token_file: %w", err)
		}
		return strings.TrimSpace(string(data)), nil
	case set.TokenEnv != "":
		v, ok := os.LookupEnv(set.TokenEnv)
		if !ok || v == "" {
			return "", fmt.Errorf("spark token_env: environment variable %s is not set", set.TokenEnv)
		}
		return strings.TrimSpace(v), nil
	}
	return "", nil
}

// builder is the Spark Connect client's channel.Builder with the token
// from reactor's settings, TLS on use_ssl, and an interceptor that tags
// the job's operations and remembers the session ids an Interrupt needs.
type builder struct {
	base    *channel.BaseBuilder
	token   string
	tls     bool
	tag     string
	headers map[string]string

	mu              sync.Mutex
	conn            *grpc.ClientConn
	sessionID       string
	serverSessionID string
}

func (b *builder) User() string               { return b.base.User() }
func (b *builder) Headers() map[string]string { return b.headers }
func (b *builder) SessionId() string          { return b.base.SessionId() }
func (b *builder) UserAgent() string          { return b.base.UserAgent() + " reactor" }

func (b *builder) Build(context.Context) (*grpc.ClientConn, error) {
	opts := []grpc.DialOption{
		grpc.WithAuthority(b.base.Host()),
		grpc.WithChainStreamInterceptor(b.stream),
		grpc.WithChainUnaryInterceptor(b.unary),
	}
	if b.tls || b.token != "" {
		roots, err := x509.SystemCertPool()
		if err != nil {
			return nil, fmt.Errorf("system certificates: %w", err)
		}
		opts = append(opts, grpc.WithTransportCredentials(credentials.NewTLS(&tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12})))
	} else {
		opts = append(opts, grpc.WithTransportCredentials(insecure.NewCredentials()))
	}
	if b.token != "" {
		ts := oauth2.StaticTokenSource(&oauth2.Token{AccessToken: b.token, TokenType: "bearer"})
		opts = append(opts, grpc.WithPerRPCCredentials(oauth.TokenSource{TokenSource: ts}))
	}
	conn, err := grpc.NewClient(fmt.Sprintf("%s:%d", b.base.Host(), b.base.Port()), opts...)
	if err != nil {
		return nil, fmt.Errorf("spark connect client: %w", err)
	}
	b.mu.Lock()
	b.conn = conn
	b.mu.Unlock()
	return conn, nil
}

// observe remembers the session id a request carries, and tags every
// ExecutePlanRequest with the job's tag.
func (b *builder) observe(m any) {
	msg, ok := m.(proto.Message)
	if !ok {
		return
	}
	r := msg.ProtoReflect()
	fields := r.Descriptor().Fields()
	if fd := fields.ByName("session_id"); fd != nil && fd.Kind() == protoreflect.StringKind {
		if id := r.Get(fd).String(); id != "" {
			b.mu.Lock()
			b.sessionID = id
			b.mu.Unlock()
		}
	}
	if r.Descriptor().FullName() == msgExecutePlanRequest && b.tag != "" {
		if fd := fields.ByName("tags"); fd != nil && fd.IsList() {
			r.Mutable(fd).List().Append(protoreflect.ValueOfString(b.tag))
		}
	}
}

// seen remembers the server-side session id a response carries.
func (b *builder) seen(m any) {
	msg, ok := m.(proto.Message)
	if !ok {
		return
	}
	r := msg.ProtoReflect()
	if fd := r.Descriptor().Fields().ByName("server_side_session_id"); fd != nil && fd.Kind() == protoreflect.StringKind {
		if id := r.Get(fd).String(); id != "" {
			b.mu.Lock()
			b.serverSessionID = id
			b.mu.Unlock()
		}
	}
}

func (b *builder) unary(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
	b.observe(req)
	err := invoker(ctx, method, req, reply, cc, opts...)
	if err == nil {
		b.seen(reply)
	}
	return err
}

func (b *builder) stream(ctx context.Context, desc *grpc.StreamDesc, cc *grpc.ClientConn, method string, streamer grpc.Streamer, opts ...grpc.CallOption) (grpc.ClientStream, error) {
	cs, err := streamer(ctx, desc, cc, method, opts...)
	if err != nil {
		return nil, err
	}
	return &observedStream{ClientStream: cs, b: b}, nil
}

type observedStream struct {
	grpc.ClientStream
	b *builder
}

func (s *observedStream) SendMsg(m any) error {
	s.b.observe(m)
	return s.ClientStream.SendMsg(m)
}

func (s *observedStream) RecvMsg(m any) error {
	err := s.ClientStream.RecvMsg(m)
	if err == nil {
		s.b.seen(m)
	}
	return err
}

// session is a Session on a real Spark Connect server.
type session struct {
	spark sql.SparkSession
	b     *builder
}

func (s *session) Exec(ctx context.Context, statement string) ([]string, [][]any, error) {
	df, err := s.spark.Sql(ctx, statement)
	if err != nil {
		return nil, nil, err
	}
	rows, err := df.Collect(ctx)
	if err != nil {
		return nil, nil, err
	}
	return rowsOf(rows)
}

func rowsOf(rows []types.Row) ([]string, [][]any, error) {
	if len(rows) == 0 {
		return nil, nil, nil
	}
	out := make([][]any, len(rows))
	for i, r := range rows {
		out[i] = r.Values()
	}
	return rows[0].FieldNames(), out, nil
}

// newMessage returns an empty message of the Spark Connect type name.
func newMessage(name string) (protoreflect.Message, error) {
	mt, err := protoregistry.GlobalTypes.FindMessageByName(protoreflect.FullName(name))
	if err != nil {
		return nil, fmt.Errorf("spark connect client lacks %s: %w", name, err)
	}
	return mt.New(), nil
}

// setField sets a scalar field of m by name.
func setField(m protoreflect.Message, name string, v protoreflect.Value) {
	if fd := m.Descriptor().Fields().ByName(protoreflect.Name(name)); fd != nil {
		m.Set(fd, v)
	}
}

// request returns a request message naming the session, the user and the
// client.
func (s *session) request(name string) (protoreflect.Message, error) {
	m, err := newMessage(name)
	if err != nil {
		return nil, err
	}
	s.b.mu.Lock()
	sessionID, serverID := s.b.sessionID, s.b.serverSessionID
	s.b.mu.Unlock()
	if sessionID == "" {
		return nil, errors.New("no Spark Connect session yet")
	}
	setField(m, "session_id", protoreflect.ValueOfString(sessionID))
	if serverID != "" {
		setField(m, "client_observed_server_side_session_id", protoreflect.ValueOfString(serverID))
	}
	setField(m, "client_type", protoreflect.ValueOfString(s.b.UserAgent()))
	if fd := m.Descriptor().Fields().ByName("user_context"); fd != nil {
		uc := m.Mutable(fd).Message()
		setField(uc, "user_id", protoreflect.ValueOfString(s.b.User()))
	}
	return m, nil
}

func (s *session) Interrupt(ctx context.Context) ([]string, bool, error) {
	req, err := s.request(msgInterruptRequest)
	if err != nil {
		return nil, false, err
	}
	setField(req, "interrupt_type", protoreflect.ValueOfEnum(interruptByTag))
	setField(req, "operation_tag", protoreflect.ValueOfString(s.b.tag))
	resp, err := newMessage(msgInterruptResponse)
	if err != nil {
		return nil, false, err
	}
	s.b.mu.Lock()
	conn := s.b.conn
	s.b.mu.Unlock()
	if err := conn.Invoke(ctx, serviceInterrupt, req.Interface(), resp.Interface()); err != nil {
		if sessionGone(err) {
			return nil, true, nil
		}
		return nil, false, redact.Error(err)
	}
	var ids []string
	if fd := resp.Descriptor().Fields().ByName("interrupted_ids"); fd != nil {
		l := resp.Get(fd).List()
		for i := range l.Len() {
			ids = append(ids, l.Get(i).String())
		}
	}
	// A restarted server creates a new session for the id: a server-side
	// session id other than the one the job ran in means it is gone.
	gone := false
	if fd := resp.Descriptor().Fields().ByName("server_side_session_id"); fd != nil {
		s.b.mu.Lock()
		before := s.b.serverSessionID
		s.b.mu.Unlock()
		if now := resp.Get(fd).String(); before != "" && now != "" && now != before {
			gone = true
		}
	}
	return ids, gone, nil
}

func (s *session) Close() {
	s.b.mu.Lock()
	conn := s.b.conn
	s.b.mu.Unlock()
	if conn == nil {
		return
	}
	defer conn.Close()
	req, err := s.request(msgReleaseRequest)
	if err != nil {
		return
	}
	resp, err := newMessage(msgReleaseResponse)
	if err != nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), releaseTimeout)
	defer cancel()
	_ = conn.Invoke(ctx, serviceReleaseSession, req.Interface(), resp.Interface())
}
