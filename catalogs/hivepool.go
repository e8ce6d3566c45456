package catalogs

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"sync"

	"github.com/apache/iceberg-go/catalog/hive"
	"github.com/apache/thrift/lib/go/thrift"
	"github.com/beltran/gohive/hive_metastore"
)

// hmsPool is reactor's Hive Metastore client: iceberg-go's hive catalog
// calls it as its hive.HiveClient. iceberg-go's own client is one thrift
// connection with no lock and no reconnect, and a thrift connection
// carries one call at a time: two goroutines calling at once interleave
// their messages ("wrong method name"), after which every call on it
// hangs, and a broken connection stays broken. Here each call takes a
// connection of its own from a small pool (at most size open), the
// connection's socket deadline is the call's, a call whose context ends
// closes its connection (which unblocks a read the Metastore never
// answers), and a connection that saw anything but a clean answer is
// closed: the next call dials a new one.
type hmsPool struct {
	addr  string
	slots chan struct{} // a token per connection in use

	mu     sync.Mutex
	idle   []*hmsConn
	closed bool
}

// hmsConn is one thrift connection to the Metastore.
type hmsConn struct {
	conn   net.Conn
	client *hive_metastore.ThriftHiveMetastoreClient
}

var _ hive.HiveClient = (*hmsPool)(nil)

func newHMSPool(addr string, size int) *hmsPool {
	return &hmsPool{addr: addr, slots: make(chan struct{}, max(size, 1))}
}

// ErrHiveMetastoreVersion marks a Metastore that lacks a call iceberg-go's
// hive catalog makes: Hive Metastore 4 removed get_table.
var ErrHiveMetastoreVersion = errors.New("unsupported Hive Metastore version")

// call runs f on a connection of its own. idempotent calls (reads) that
// fail on a connection taken from the pool are tried once more on a new
// one: a pooled connection may have been closed by the Metastore (a
// restart, an idle timeout) since its last use.
func (p *hmsPool) call(ctx context.Context, method string, idempotent bool, f func(context.Context, *hive_metastore.ThriftHiveMetastoreClient) error) error {
	select {
	case p.slots <- struct{}{}:
	case <-ctx.Done():
		return fmt.Errorf("hive metastore %s: waiting for a connection: %w", method, context.Cause(ctx))
	}
	defer func() { <-p.slots }()
	for attempt := 0; ; attempt++ {
		c, reused, err := p.get(ctx)
		if err != nil {
			return fmt.Errorf("hive metastore at %s: connect for %s: %w", p.addr, method, err)
		}
		err, broken := c.run(ctx, f)
		if !broken {
			p.put(c)
			return p.explain(method, err)
		}
		c.close()
		if reused && idempotent && attempt == 0 && ctx.Err() == nil {
			continue
		}
		return p.explain(method, err)
	}
}

// get takes an idle connection (reused) or dials a new one.
func (p *hmsPool) get(ctx context.Context) (c *hmsConn, reused bool, err error) {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil, false, errors.New("client closed")
	}
	if n := len(p.idle); n > 0 {
		c = p.idle[n-1]
		p.idle = p.idle[:n-1]
		p.mu.Unlock()
		return c, true, nil
	}
	p.mu.Unlock()
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", p.addr)
	if err != nil {
		return nil, false, err
	}
	// The thrift transport sits on the connection itself: thrift's
	// TSocket would reset the deadline set per call before every read.
	trans := thrift.NewStreamTransportRW(conn)
	conf := &thrift.TConfiguration{}
	client := thrift.NewTStandardClient(thrift.NewTBinaryProtocolConf(trans, conf), thrift.NewTBinaryProtocolConf(trans, conf))
	return &hmsConn{conn: conn, client: hive_metastore.NewThriftHiveMetastoreClient(client)}, false, nil
}

// put returns a healthy connection to the pool.
func (p *hmsPool) put(c *hmsConn) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		c.close()
		return
	}
	p.idle = append(p.idle, c)
}

// run makes one call on the connection within ctx. broken reports that the
// connection must not be used again: the call did not end with an answer
// the Metastore sent in full (a transport or protocol error, a
// client-side sequence check, or the context ending, which closed it).
func (c *hmsConn) run(ctx context.Context, f func(context.Context, *hive_metastore.ThriftHiveMetastoreClient) error) (err error, broken bool) {
	deadline, _ := ctx.Deadline() // zero: none
	if err := c.conn.SetDeadline(deadline); err != nil {
		return err, true
	}
	stop := context.AfterFunc(ctx, func() { _ = c.conn.Close() })
	err = f(ctx, c.client)
	if !stop() {
		// The context ended during the call and closed the connection.
		if err != nil {
			err = fmt.Errorf("%w (the connection was closed: %w)", err, context.Cause(ctx))
		}
		return err, true
	}
	return err, !answered(err)
}

func (c *hmsConn) close() { _ = c.conn.Close() }

// answered reports whether err (nil included) is a complete answer of the
// Metastore: nothing, or an exception its interface declares
// (NoSuchObjectException, ...) or one it raised (an unknown method).
func answered(err error) bool {
	if err == nil {
		return true
	}
	var te thrift.TException
	if !errors.As(err, &te) {
		return false
	}
	switch te.TExceptionType() {
	case thrift.TExceptionTypeCompiled:
		return true
	case thrift.TExceptionTypeApplication:
		var ae thrift.TApplicationException
		return errors.As(err, &ae) && (ae.TypeId() == thrift.UNKNOWN_METHOD || ae.TypeId() == thrift.INTERNAL_ERROR)
	}
	return false
}

// explain names what went wrong beyond the Metastore's own exceptions,
// which iceberg-go recognises and are returned as they are.
func (p *hmsPool) explain(method string, err error) error {
	if err == nil {
		return nil
	}
	var te thrift.TException
	if errors.As(err, &te) && te.TExceptionType() == thrift.TExceptionTypeCompiled {
		return err
	}
	var ae thrift.TApplicationException
	if errors.As(err, &ae) && ae.TypeId() == thrift.UNKNOWN_METHOD {
		return fmt.Errorf("%w: the Hive Metastore at %s does not know the call %s (%w): Hive Metastore 4 removed calls "+
			"iceberg-go's hive catalog makes; reactor works with Hive Metastore 2.3 and 3.x (proven against 3.1.3)",
			ErrHiveMetastoreVersion, p.addr, method, err)
	}
	return fmt.Errorf("hive metastore at %s: %s: %w", p.addr, method, err)
}

// Close closes the idle connections; those in use close when their call
// returns.
func (p *hmsPool) Close() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.closed = true
	for _, c := range p.idle {
		c.close()
	}
	p.idle = nil
	return nil
}

// The hive.HiveClient calls. Reads are idempotent; a lock, an unlock or a
// change is made once (its outcome is the caller's to judge).

func (p *hmsPool) GetDatabase(ctx context.Context, name string) (db *hive_metastore.Database, err error) {
	err = p.call(ctx, "get_database", true, func(ctx context.Context, c *hive_metastore.ThriftHiveMetastoreClient) error {
		db, err = c.GetDatabase(ctx, name)
		return err
	})
	return db, err
}

func (p *hmsPool) CreateDatabase(ctx context.Context, db *hive_metastore.Database) error {
	return p.call(ctx, "create_database", false, func(ctx context.Context, c *hive_metastore.ThriftHiveMetastoreClient) error {
		return c.CreateDatabase(ctx, db)
	})
}

func (p *hmsPool) AlterDatabase(ctx context.Context, name string, db *hive_metastore.Database) error {
	return p.call(ctx, "alter_database", false, func(ctx context.Context, c *hive_metastore.ThriftHiveMetastoreClient) error {
		return c.AlterDatabase(ctx, name, db)
	})
}

func (p *hmsPool) DropDatabase(ctx context.Context, name string, deleteData, cascade bool) error {
	return p.call(ctx, "drop_database", false, func(ctx context.Context, c *hive_metastore.ThriftHiveMetastoreClient) error {
		return c.DropDatabase(ctx, name, deleteData, cascade)
	})
}

func (p *hmsPool) GetAllDatabases(ctx context.Context) (names []string, err error) {
	err = p.call(ctx, "get_all_databases", true, func(ctx context.Context, c *hive_metastore.ThriftHiveMetastoreClient) error {
		names, err = c.GetAllDatabases(ctx)
		return err
	})
	return names, err
}

func (p *hmsPool) GetTable(ctx context.Context, dbName, tableName string) (tbl *hive_metastore.Table, err error) {
	err = p.call(ctx, "get_table", true, func(ctx context.Context, c *hive_metastore.ThriftHiveMetastoreClient) error {
		tbl, err = c.GetTable(ctx, dbName, tableName)
		return err
	})
	return tbl, err
}

func (p *hmsPool) CreateTable(ctx context.Context, tbl *hive_metastore.Table) error {
	return p.call(ctx, "create_table", false, func(ctx context.Context, c *hive_metastore.ThriftHiveMetastoreClient) error {
		return c.CreateTable(ctx, tbl)
	})
}

func (p *hmsPool) AlterTable(ctx context.Context, dbName, tableName string, tbl *hive_metastore.Table) error {
	return p.call(ctx, "alter_table", false, func(ctx context.Context, c *hive_metastore.ThriftHiveMetastoreClient) error {
		return c.AlterTable(ctx, dbName, tableName, tbl)
	})
}

func (p *hmsPool) DropTable(ctx context.Context, dbName, tableName string, deleteData bool) error {
	return p.call(ctx, "drop_table", false, func(ctx context.Context, c *hive_metastore.ThriftHiveMetastoreClient) error {
		return c.DropTable(ctx, dbName, tableName, deleteData)
	})
}

func (p *hmsPool) GetTables(ctx context.Context, dbName, pattern string) (names []string, err error) {
	err = p.call(ctx, "get_tables", true, func(ctx context.Context, c *hive_metastore.ThriftHiveMetastoreClient) error {
		names, err = c.GetTables(ctx, dbName, pattern)
		return err
	})
	return names, err
}

func (p *hmsPool) Lock(ctx context.Context, req *hive_metastore.LockRequest) (resp *hive_metastore.LockResponse, err error) {
	err = p.call(ctx, "lock", false, func(ctx context.Context, c *hive_metastore.ThriftHiveMetastoreClient) error {
		resp, err = c.Lock(ctx, lockRequest(req))
		return err
	})
	return resp, err
}

func (p *hmsPool) CheckLock(ctx context.Context, lockID int64) (resp *hive_metastore.LockResponse, err error) {
	err = p.call(ctx, "check_lock", true, func(ctx context.Context, c *hive_metastore.ThriftHiveMetastoreClient) error {
		resp, err = c.CheckLock(ctx, &hive_metastore.CheckLockRequest{Lockid: lockID})
		return err
	})
	return resp, err
}

func (p *hmsPool) Unlock(ctx context.Context, lockID int64) error {
	return p.call(ctx, "unlock", false, func(ctx context.Context, c *hive_metastore.ThriftHiveMetastoreClient) error {
		return c.Unlock(ctx, &hive_metastore.UnlockRequest{Lockid: lockID})
	})
}

// lockRequest names reactor as the lock's holder: the Metastore's
// SHOW LOCKS and its logs then say who holds a table (iceberg-go sends an
// empty user and host).
func lockRequest(req *hive_metastore.LockRequest) *hive_metastore.LockRequest {
	if req == nil || req.User != "" {
		return req
	}
	r := *req
	r.User = "reactor"
	r.AgentInfo = "reactor"
	if host, err := os.Hostname(); err == nil {
		r.Hostname = host
	}
	return &r
}
