package catalogs

import (
	"context"
	"errors"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/apache/thrift/lib/go/thrift"
	"github.com/beltran/gohive/hive_metastore"
)

// fakeHMS is a FAKE Hive Metastore for unit tests: a real thrift server
// (gohive's generated processor, the binary protocol the Metastore speaks)
// over an in-memory store of databases, tables and table locks, with the
// handful of calls iceberg-go's hive catalog makes. It lets the tests
// hold a call, count calls and drop a call from the interface (as Hive
// Metastore 4 dropped get_table). The real Hive Metastore 3.1.3 is proven
// in the real-catalogs suite (realcatalogs/).
type fakeHMS struct {
	hive_metastore.ThriftHiveMetastore // nil: a call the fake lacks panics the test

	mu        sync.Mutex
	dbs       map[string]*hive_metastore.Database
	tables    map[string]*hive_metastore.Table // "db.table"
	lockOwner map[string]int64                 // "db.table" -> lock id holding it
	lockWants map[int64][]string               // lock id -> tables it wants
	nextLock  int64
	calls     map[string]int
	// holds are where a method waits before answering (until the channel
	// closes); each waiting call is announced on waiting.
	holds   map[string]chan struct{}
	waiting chan string

	processor *hive_metastore.ThriftHiveMetastoreProcessor
	ln        net.Listener
	addr      string
	conns     map[net.Conn]bool
	wg        sync.WaitGroup
}

// startFakeHMS serves a fake Metastore on addr ("127.0.0.1:0" for any
// port); the methods in lacks are unknown to it. It stops with the test.
func startFakeHMS(t *testing.T, addr string, lacks ...string) *fakeHMS {
	t.Helper()
	f := &fakeHMS{dbs: map[string]*hive_metastore.Database{}, tables: map[string]*hive_metastore.Table{},
		lockOwner: map[string]int64{}, lockWants: map[int64][]string{}, calls: map[string]int{}, conns: map[net.Conn]bool{},
		holds: map[string]chan struct{}{}, waiting: make(chan string, 16)}
	f.processor = hive_metastore.NewThriftHiveMetastoreProcessor(f)
	for _, m := range lacks {
		delete(f.processor.ProcessorMap(), m)
	}
	var err error
	if f.ln, err = net.Listen("tcp", addr); err != nil {
		t.Fatal(err)
	}
	f.addr = f.ln.Addr().String()
	f.wg.Add(1)
	go f.accept()
	t.Cleanup(f.stop)
	return f
}

func (f *fakeHMS) accept() {
	defer f.wg.Done()
	for {
		conn, err := f.ln.Accept()
		if err != nil {
			return
		}
		f.mu.Lock()
		f.conns[conn] = true
		f.mu.Unlock()
		f.wg.Add(1)
		go f.serve(conn)
	}
}

// serve answers one connection's calls, one at a time, until it closes.
func (f *fakeHMS) serve(conn net.Conn) {
	defer f.wg.Done()
	defer func() {
		f.mu.Lock()
		delete(f.conns, conn)
		f.mu.Unlock()
		_ = conn.Close()
	}()
	prot := thrift.NewTBinaryProtocolConf(thrift.NewStreamTransportRW(conn), nil)
	for {
		if _, err := f.processor.Process(context.Background(), prot, prot); err != nil {
			// A declared exception or an unknown method was answered;
			// anything else means the connection is gone or out of step.
			var te thrift.TException
			if !errors.As(err, &te) || (te.TExceptionType() != thrift.TExceptionTypeCompiled &&
				te.TExceptionType() != thrift.TExceptionTypeApplication) {
				return
			}
		}
	}
}

// cut closes every client connection, as a Metastore restart or a network
// fault would.
func (f *fakeHMS) cut() {
	f.mu.Lock()
	defer f.mu.Unlock()
	for c := range f.conns {
		_ = c.Close()
	}
}

func (f *fakeHMS) stop() {
	f.mu.Lock()
	for m, c := range f.holds {
		close(c)
		delete(f.holds, m)
	}
	f.mu.Unlock()
	_ = f.ln.Close()
	f.cut()
	f.wg.Wait()
}

// hold makes method wait until release.
func (f *fakeHMS) hold(method string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.holds[method] = make(chan struct{})
}

// release lets the held calls of method answer, and later ones at once.
func (f *fakeHMS) release(method string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if c, ok := f.holds[method]; ok {
		close(c)
		delete(f.holds, method)
	}
}

// count records a call and waits while its method is held.
func (f *fakeHMS) count(ctx context.Context, method string) error {
	f.mu.Lock()
	f.calls[method]++
	hold := f.holds[method]
	f.mu.Unlock()
	if hold == nil {
		return nil
	}
	select {
	case f.waiting <- method:
	default:
	}
	select {
	case <-hold:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (f *fakeHMS) callsOf(method string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls[method]
}

func noSuch(what string) error {
	return &hive_metastore.NoSuchObjectException{Message: what + " not found"}
}

func (f *fakeHMS) GetAllDatabases(ctx context.Context) ([]string, error) {
	if err := f.count(ctx, "get_all_databases"); err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	names := []string{}
	for n := range f.dbs {
		names = append(names, n)
	}
	return names, nil
}

func (f *fakeHMS) GetDatabase(ctx context.Context, name string) (*hive_metastore.Database, error) {
	if err := f.count(ctx, "get_database"); err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if db, ok := f.dbs[name]; ok {
		return db, nil
	}
	return nil, noSuch("database " + name)
}

func (f *fakeHMS) CreateDatabase(ctx context.Context, db *hive_metastore.Database) error {
	if err := f.count(ctx, "create_database"); err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, ok := f.dbs[db.Name]; ok {
		return &hive_metastore.AlreadyExistsException{Message: "database " + db.Name + " already exists"}
	}
	f.dbs[db.Name] = db
	return nil
}

func (f *fakeHMS) GetTables(ctx context.Context, db, _ string) ([]string, error) {
	if err := f.count(ctx, "get_tables"); err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	names := []string{}
	for _, t := range f.tables {
		if t.DbName == db {
			names = append(names, t.TableName)
		}
	}
	return names, nil
}

func (f *fakeHMS) GetTable(ctx context.Context, db, name string) (*hive_metastore.Table, error) {
	if err := f.count(ctx, "get_table"); err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if t, ok := f.tables[db+"."+name]; ok {
		return t, nil
	}
	return nil, noSuch("table " + db + "." + name)
}

func (f *fakeHMS) CreateTable(ctx context.Context, t *hive_metastore.Table) error {
	if err := f.count(ctx, "create_table"); err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	key := t.DbName + "." + t.TableName
	if _, ok := f.tables[key]; ok {
		return &hive_metastore.AlreadyExistsException{Message: "table " + key + " already exists"}
	}
	f.tables[key] = t
	return nil
}

func (f *fakeHMS) AlterTable(ctx context.Context, db, name string, t *hive_metastore.Table) error {
	if err := f.count(ctx, "alter_table"); err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	key := db + "." + name
	if _, ok := f.tables[key]; !ok {
		return &hive_metastore.InvalidOperationException{Message: "table " + key + " does not exist"}
	}
	f.tables[key] = t
	return nil
}

// Lock grants a table lock when every table is free, else queues it
// (WAITING), as the Metastore does.
func (f *fakeHMS) Lock(ctx context.Context, req *hive_metastore.LockRequest) (*hive_metastore.LockResponse, error) {
	if err := f.count(ctx, "lock"); err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.nextLock++
	id := f.nextLock
	for _, c := range req.Component {
		f.lockWants[id] = append(f.lockWants[id], c.Dbname+"."+c.GetTablename())
	}
	return &hive_metastore.LockResponse{Lockid: id, State: f.tryLocked(id)}, nil
}

func (f *fakeHMS) tryLocked(id int64) hive_metastore.LockState {
	for _, tbl := range f.lockWants[id] {
		if owner, held := f.lockOwner[tbl]; held && owner != id {
			return hive_metastore.LockState_WAITING
		}
	}
	for _, tbl := range f.lockWants[id] {
		f.lockOwner[tbl] = id
	}
	return hive_metastore.LockState_ACQUIRED
}

func (f *fakeHMS) CheckLock(ctx context.Context, req *hive_metastore.CheckLockRequest) (*hive_metastore.LockResponse, error) {
	if err := f.count(ctx, "check_lock"); err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, ok := f.lockWants[req.Lockid]; !ok {
		return nil, &hive_metastore.NoSuchLockException{Message: "no such lock"}
	}
	return &hive_metastore.LockResponse{Lockid: req.Lockid, State: f.tryLocked(req.Lockid)}, nil
}

func (f *fakeHMS) Unlock(ctx context.Context, req *hive_metastore.UnlockRequest) error {
	if err := f.count(ctx, "unlock"); err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, tbl := range f.lockWants[req.Lockid] {
		if f.lockOwner[tbl] == req.Lockid {
			delete(f.lockOwner, tbl)
		}
	}
	delete(f.lockWants, req.Lockid)
	return nil
}

// hungServer accepts connections and never answers: a catalog that is up
// but stuck.
func hungServer(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var conns []net.Conn
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		_ = ln.Close()
		<-done
		mu.Lock()
		for _, c := range conns {
			_ = c.Close()
		}
		mu.Unlock()
	})
	return ln.Addr().String()
}

// closedPort is a loopback port nothing listens on.
func closedPort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	_ = ln.Close()
	return addr
}

// within runs f and fails the test if it has not returned after limit: a
// hang guard, far above what f should take.
func within[T any](t *testing.T, limit time.Duration, f func() (T, error)) (T, error) {
	t.Helper()
	type result struct {
		v   T
		err error
	}
	done := make(chan result, 1)
	go func() {
		v, err := f()
		done <- result{v, err}
	}()
	select {
	case r := <-done:
		return r.v, r.err
	case <-time.After(limit):
		t.Fatalf("call still running after %s", limit)
	}
	var zero T
	return zero, errors.New("unreachable")
}
