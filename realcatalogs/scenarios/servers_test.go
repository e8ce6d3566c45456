package scenarios

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/apache/iceberg-go"
	_ "github.com/go-sql-driver/mysql"
	_ "github.com/jackc/pgx/v5/stdlib"
	"golang.org/x/sync/errgroup"

	"github.com/icereactor/reactor/catalogs"
)

// readyTimeout bounds how long a server may take to answer after start: a
// hang guard, far above what each takes on a loaded machine.
const readyTimeout = 4 * time.Minute

// The accounts of the suite's own databases: loopback only, for one run.
const (
	dbUser     = "ice"
	dbPassword = "ice-secret"
	dbName     = "lake"
)

// suite is the shared servers and the Spark session.
type suite struct {
	work  string
	procs *processes

	reactorBin string
	hmsAddr    string // 127.0.0.1:PORT
	pgAddr     string
	mariaAddr  string
	motoURL    string // http://127.0.0.1:PORT
	hms        *process
	spark      *sparkServer
}

func startSuite(ctx context.Context, work string, procs *processes) (_ *suite, err error) {
	s := &suite{work: work, procs: procs, reactorBin: os.Getenv(envReactor)}
	defer func() {
		if err != nil {
			s.close()
			procs.stopAll()
		}
	}()
	if os.Getuid() == 0 {
		// The database servers run as their own users: they must reach
		// their directories under the work directory.
		if err := os.Chmod(work, 0o755); err != nil {
			return nil, err
		}
	}
	// Every address is picked first: the Spark session, which starts
	// beside the servers (it is the slowest), is configured with them.
	ports := make([]int, 4)
	for i := range ports {
		if ports[i], err = freePort(); err != nil {
			return nil, err
		}
	}
	s.hmsAddr = "127.0.0.1:" + strconv.Itoa(ports[0])
	s.pgAddr = "127.0.0.1:" + strconv.Itoa(ports[1])
	s.mariaAddr = "127.0.0.1:" + strconv.Itoa(ports[2])
	s.motoURL = "http://127.0.0.1:" + strconv.Itoa(ports[3])
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() (err error) { s.hms, err = s.startHMS(gctx, "hms", ports[0]); return err })
	g.Go(func() error { _, _, err := s.startPostgresOn(gctx, "postgres", ports[1]); return err })
	g.Go(func() error { return s.startMariaDB(gctx, "mariadb", ports[2]) })
	g.Go(func() error { return s.startMoto(gctx, ports[3]) })
	if os.Getenv(envSkipSparkWriters) != "1" {
		// Spark's catalogs connect on first use: the session comes up
		// beside the servers (it is the slowest to start).
		g.Go(func() (err error) { s.spark, err = s.startSpark(gctx); return err })
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	return s, nil
}

func (s *suite) close() {
	if s.spark != nil {
		s.spark.quit()
	}
}

// baseEnv is what every child inherits from the suite's environment.
func baseEnv() []string {
	var env []string
	for _, k := range []string{"PATH", "HOME", "TMPDIR", "LANG", "JAVA_HOME", "USER"} {
		if v, ok := os.LookupEnv(k); ok {
			env = append(env, k+"="+v)
		}
	}
	return env
}

// freePort asks the kernel for a free loopback port and releases it for a
// server to bind.
func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("pick a free port: %w", err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	return port, ln.Close()
}

// waitFor polls ready every 250 ms until it answers nil, the process exits
// or readyTimeout passes.
func waitFor(ctx context.Context, p *process, what string, ready func(context.Context) error) error {
	deadline := time.Now().Add(readyTimeout)
	var last error
	for time.Now().Before(deadline) {
		if p != nil && p.exited() {
			return fmt.Errorf("%s exited before answering: %v\n%s", what, p.waitErr, p.tail(30))
		}
		if last = ready(ctx); last == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(250 * time.Millisecond):
		}
	}
	msg := fmt.Sprintf("%s did not answer within %s: %v", what, readyTimeout, last)
	if p != nil {
		msg += "\n" + p.tail(30)
	}
	return errors.New(msg)
}

// copyTree copies a template directory (ownership kept: a root suite's
// copy of the postgres user's data directory stays theirs).
func copyTree(from, to string) error {
	if err := os.MkdirAll(filepath.Dir(to), 0o755); err != nil {
		return err
	}
	if out, err := exec.Command("cp", "-a", from, to).CombinedOutput(); err != nil {
		return fmt.Errorf("cp -a %s %s: %w: %s", from, to, err, out)
	}
	return nil
}

// systemUser is the credential to run a database server as when the suite
// runs as root (both refuse root), or nil.
func systemUser(name string) (*syscall.Credential, error) {
	if os.Getuid() != 0 {
		return nil, nil
	}
	u, err := user.Lookup(name)
	if err != nil {
		return nil, fmt.Errorf("the suite runs as root and %s must not: %w", name, err)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}, nil
}

// chownTo gives dir to cred's user (a root suite's working directories of
// a server that runs as another user).
func chownTo(dir string, cred *syscall.Credential) error {
	if cred == nil {
		return nil
	}
	return filepath.Walk(dir, func(path string, _ os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(path, int(cred.Uid), int(cred.Gid))
	})
}

// startHMS starts Hive Metastore 3.1.3 on Derby (the schema copied from the
// cache's template) on port, its files under the work directory's name.
func (s *suite) startHMS(ctx context.Context, name string, port int) (*process, error) {
	home := os.Getenv(envHMSHome)
	dir := filepath.Join(s.work, name)
	if err := copyTree(filepath.Join(home, "derby-template"), filepath.Join(dir, "metastore_db")); err != nil {
		return nil, err
	}
	conf := filepath.Join(dir, "conf")
	if err := os.MkdirAll(conf, 0o755); err != nil {
		return nil, err
	}
	// The lock timeout is the Metastore's transaction timeout: 20 s here
	// (300 s by default) so the scenario with a reactor killed holding a
	// lock waits less; the housekeeping task that expires such locks runs
	// with the always-on tasks.
	site := fmt.Sprintf(`<configuration>
  <property><name>javax.jdo.option.ConnectionURL</name><value>jdbc:derby:;databaseName=%s/metastore_db</value></property>
  <property><name>javax.jdo.option.ConnectionDriverName</name><value>org.apache.derby.jdbc.EmbeddedDriver</value></property>
  <property><name>metastore.thrift.port</name><value>%d</value></property>
  <property><name>metastore.warehouse.dir</name><value>file://%s/warehouse</value></property>
  <property><name>metastore.expression.proxy</name><value>org.apache.hadoop.hive.metastore.DefaultPartitionExpressionProxy</value></property>
  <property><name>metastore.task.threads.always</name><value>org.apache.hadoop.hive.metastore.events.EventCleanerTask,org.apache.hadoop.hive.metastore.txn.AcidHouseKeeperService</value></property>
  <property><name>metastore.txn.timeout</name><value>20s</value></property>
  <property><name>metastore.timedout.txn.reaper.interval</name><value>5s</value></property>
</configuration>
`, dir, port, dir)
	if err := os.WriteFile(filepath.Join(conf, "metastore-site.xml"), []byte(site), 0o644); err != nil {
		return nil, err
	}
	env := append(baseEnv(), "METASTORE_HOME="+home)
	p, err := s.procs.start(name, []string{"java", "-Xmx512m", "-Dderby.stream.error.file=" + filepath.Join(dir, "derby.log"), "-cp", conf + ":" + home + "/lib/*:" + home + "/deps/*",
		"org.apache.hadoop.hive.metastore.HiveMetaStore", "-p", strconv.Itoa(port)}, env, filepath.Join(dir, "hms.log"))
	if err != nil {
		return nil, err
	}
	addr := "127.0.0.1:" + strconv.Itoa(port)
	err = waitFor(ctx, p, "the Hive Metastore", func(ctx context.Context) error {
		cat, err := catalogs.Open(ctx, catalogs.Config{Name: "probe", Timeout: 10 * time.Second, Logger: slog.New(slog.DiscardHandler),
			Props: iceberg.Properties{"type": "hive", "uri": "thrift://" + addr}})
		if err != nil {
			return err
		}
		return cat.Close()
	})
	return p, err
}

// startPostgresOn starts PostgreSQL from the cache's template (its data
// kept under the work directory's name across restarts) on port (trust
// on loopback), and makes the database lake.
func (s *suite) startPostgresOn(ctx context.Context, name string, port int) (string, *process, error) {
	cred, err := systemUser("postgres")
	if err != nil {
		return "", nil, err
	}
	dir := filepath.Join(s.work, name)
	data := filepath.Join(dir, "data")
	if _, err := os.Stat(data); errors.Is(err, os.ErrNotExist) {
		if err := copyTree(os.Getenv(envPGTemplate), data); err != nil {
			return "", nil, err
		}
	}
	if err := chownTo(dir, cred); err != nil {
		return "", nil, err
	}
	p, err := s.procs.startAs(name, []string{filepath.Join(os.Getenv(envPGBin), "postgres"), "-D", data,
		"-p", strconv.Itoa(port), "-h", "127.0.0.1", "-k", dir, "-c", "fsync=off", "-c", "synchronous_commit=off",
		"-c", "full_page_writes=off", "-c", "max_connections=300"}, baseEnv(), filepath.Join(s.work, name+".log"), cred, nil)
	if err != nil {
		return "", nil, err
	}
	p.stopSignal = syscall.SIGINT // a fast shutdown: reactor's pooled connections would hold a smart one
	addr := "127.0.0.1:" + strconv.Itoa(port)
	err = waitFor(ctx, p, "PostgreSQL", func(ctx context.Context) error {
		db, err := sql.Open("pgx", "postgres://"+dbUser+"@"+addr+"/postgres")
		if err != nil {
			return err
		}
		defer db.Close()
		var exists bool
		if err := db.QueryRowContext(ctx, "SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)", dbName).Scan(&exists); err != nil {
			return err
		}
		if !exists {
			_, err = db.ExecContext(ctx, "CREATE DATABASE "+dbName)
		}
		return err
	})
	return addr, p, err
}

// startMariaDB starts MariaDB from the cache's template on port and makes
// the database lake and its user.
func (s *suite) startMariaDB(ctx context.Context, name string, port int) error {
	cred, err := systemUser("mysql")
	if err != nil {
		return err
	}
	dir := filepath.Join(s.work, name)
	data := filepath.Join(dir, "data")
	if err := copyTree(os.Getenv(envMariaDBTemplate), data); err != nil {
		return err
	}
	if err := chownTo(dir, cred); err != nil {
		return err
	}
	sock := filepath.Join(dir, "mysqld.sock")
	p, err := s.procs.startAs(name, []string{os.Getenv(envMariaDBD), "--no-defaults", "--datadir=" + data,
		"--port=" + strconv.Itoa(port), "--bind-address=127.0.0.1", "--socket=" + sock, "--pid-file=" + filepath.Join(dir, "mysqld.pid"),
		"--skip-log-bin", "--innodb-flush-log-at-trx-commit=0", "--innodb-doublewrite=0", "--skip-name-resolve",
		"--max-connections=300"}, baseEnv(), filepath.Join(s.work, name+".log"), cred, nil)
	if err != nil {
		return err
	}
	return waitFor(ctx, p, "MariaDB", func(ctx context.Context) error {
		db, err := sql.Open("mysql", "root@unix("+sock+")/")
		if err != nil {
			return err
		}
		defer db.Close()
		for _, stmt := range []string{
			"CREATE DATABASE IF NOT EXISTS " + dbName,
			"CREATE USER IF NOT EXISTS '" + dbUser + "'@'%' IDENTIFIED BY '" + dbPassword + "'",
			"GRANT ALL ON " + dbName + ".* TO '" + dbUser + "'@'%'",
		} {
			if _, err := db.ExecContext(ctx, stmt); err != nil {
				return fmt.Errorf("%s: %w", strings.Fields(stmt)[0], err)
			}
		}
		return nil
	})
}

// startMoto starts moto's server (the stand-in for AWS Glue) on port.
func (s *suite) startMoto(ctx context.Context, port int) error {
	p, err := s.procs.start("moto", []string{os.Getenv(envMoto), "-H", "127.0.0.1", "-p", strconv.Itoa(port)},
		baseEnv(), filepath.Join(s.work, "moto.log"))
	if err != nil {
		return err
	}
	url := "http://127.0.0.1:" + strconv.Itoa(port)
	return waitFor(ctx, p, "moto", func(ctx context.Context) error {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url+"/moto-api/", nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return err
		}
		resp.Body.Close()
		return nil
	})
}
