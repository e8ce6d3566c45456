package scenarios

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"time"
)

// sparkServer is realcatalogs/spark/server.py: one Spark session with
// Iceberg 1.12 and a catalog per real server, driven through JSON lines.
type sparkServer struct {
	proc  *process
	stdin io.WriteCloser

	mu      sync.Mutex
	nextID  int
	waiting map[int]chan map[string]any
	// subs get the events (commits, writer_done) of their table, by
	// catalog.namespace.table.
	subs map[string]chan map[string]any
	dead error
}

// sparkCatalogs are the Spark catalogs of the session, by name: the same
// names reactor's --catalog-name takes (for the JDBC ones it must be).
func (s *suite) sparkCatalogs() map[string]map[string]string {
	wh := func(name string) string { return "file://" + filepath.Join(s.work, "warehouse-"+name) }
	jdbc := func(url, name string) map[string]string {
		return map[string]string{"type": "jdbc", "uri": url, "jdbc.user": dbUser, "jdbc.password": dbPassword,
			"jdbc.schema-version": "V1", "warehouse": wh(name)}
	}
	return map[string]map[string]string{
		"hms":    {"type": "hive", "uri": "thrift://" + s.hmsAddr, "warehouse": wh("hms")},
		"pg":     jdbc("jdbc:postgresql://"+s.pgAddr+"/"+dbName, "pg"),
		"maria":  jdbc("jdbc:mariadb://"+s.mariaAddr+"/"+dbName, "maria"),
		"hadoop": {"type": "hadoop", "warehouse": wh("hadoop")},
	}
}

// startSpark starts the Spark session. Its catalogs connect on first use,
// so it starts beside the servers it is configured with.
func (s *suite) startSpark(ctx context.Context) (*sparkServer, error) {
	dir := filepath.Join(s.work, "spark")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	log4j := filepath.Join(dir, "log4j2.properties")
	if err := os.WriteFile(log4j, []byte(`rootLogger.level = warn
rootLogger.appenderRef.file.ref = file
appender.file.type = File
appender.file.name = file
appender.file.fileName = `+filepath.Join(dir, "spark.log")+`
appender.file.layout.type = PatternLayout
appender.file.layout.pattern = %d{HH:mm:ss.SSS} %p %c{1}: %m%n
`), 0o644); err != nil {
		return nil, err
	}
	cfg, err := json.Marshal(map[string]any{"jars": os.Getenv(envSparkJars), "log4j": log4j, "catalogs": s.sparkCatalogs()})
	if err != nil {
		return nil, err
	}
	cfgPath := filepath.Join(dir, "config.json")
	if err := os.WriteFile(cfgPath, cfg, 0o644); err != nil {
		return nil, err
	}
	sp := &sparkServer{waiting: map[int]chan map[string]any{}, subs: map[string]chan map[string]any{}}
	ready := make(chan map[string]any, 1)
	var stdout io.ReadCloser
	env := append(baseEnv(), "PYSPARK_PYTHON="+os.Getenv(envPython))
	sp.proc, err = s.procs.startAs("spark", []string{os.Getenv(envPython), os.Getenv(envSparkServer), cfgPath}, env,
		filepath.Join(dir, "server.log"), nil, func(cmd *exec.Cmd) (err error) {
			if sp.stdin, err = cmd.StdinPipe(); err != nil {
				return err
			}
			stdout, err = cmd.StdoutPipe()
			return err
		})
	if err != nil {
		return nil, err
	}
	go sp.read(stdout, ready)
	select {
	case ev := <-ready:
		_ = ev
		return sp, nil
	case <-sp.proc.done:
		return nil, fmt.Errorf("the Spark server exited before its session was up: %v\n%s", sp.proc.waitErr, sp.proc.tail(40))
	case <-time.After(readyTimeout):
		return nil, fmt.Errorf("the Spark session was not up after %s\n%s", readyTimeout, sp.proc.tail(40))
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// read dispatches the server's lines: answers to their command, events
// to their catalog's subscriber.
func (sp *sparkServer) read(r io.Reader, ready chan<- map[string]any) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		var msg map[string]any
		if err := json.Unmarshal(sc.Bytes(), &msg); err != nil {
			continue // a library's stray print
		}
		ev, _ := msg["event"].(string)
		switch {
		case ev == "ready":
			ready <- msg
		case ev != "":
			cat, _ := msg["catalog"].(string)
			tbl, _ := msg["table"].(string)
			sp.mu.Lock()
			ch := sp.subs[cat+"."+tbl]
			sp.mu.Unlock()
			if ch != nil {
				ch <- msg
			}
		default:
			id, _ := msg["id"].(float64)
			sp.mu.Lock()
			ch := sp.waiting[int(id)]
			delete(sp.waiting, int(id))
			sp.mu.Unlock()
			if ch != nil {
				ch <- msg
			}
		}
	}
	sp.mu.Lock()
	sp.dead = fmt.Errorf("the Spark server's output ended: %v", sc.Err())
	for id, ch := range sp.waiting {
		close(ch)
		delete(sp.waiting, id)
	}
	sp.mu.Unlock()
}

// subscribe returns the channel of a table's events (buffered: a writer at
// 5 commits/s for minutes); table is namespace.table.
func (sp *sparkServer) subscribe(catalog, table string) <-chan map[string]any {
	sp.mu.Lock()
	defer sp.mu.Unlock()
	ch := make(chan map[string]any, 10000)
	sp.subs[catalog+"."+table] = ch
	return ch
}

// call sends a command and waits up to limit for its answer.
func (sp *sparkServer) call(cmd map[string]any, limit time.Duration) (map[string]any, error) {
	sp.mu.Lock()
	if sp.dead != nil {
		sp.mu.Unlock()
		return nil, sp.dead
	}
	sp.nextID++
	id := sp.nextID
	ch := make(chan map[string]any, 1)
	sp.waiting[id] = ch
	cmd["id"] = id
	line, err := json.Marshal(cmd)
	if err == nil {
		_, err = sp.stdin.Write(append(line, '\n'))
	}
	sp.mu.Unlock()
	if err != nil {
		return nil, fmt.Errorf("send %v to Spark: %w", cmd["cmd"], err)
	}
	select {
	case ans, ok := <-ch:
		if !ok {
			return nil, fmt.Errorf("spark %v: the server ended\n%s", cmd["cmd"], sp.proc.tail(40))
		}
		if ok, _ := ans["ok"].(bool); !ok {
			return ans, fmt.Errorf("spark %v %v.%v: %v\n%v", cmd["cmd"], cmd["catalog"], cmd["table"], ans["error"], ans["trace"])
		}
		return ans, nil
	case <-time.After(limit):
		return nil, fmt.Errorf("spark %v %v.%v: no answer within %s\n%s", cmd["cmd"], cmd["catalog"], cmd["table"], limit, sp.proc.tail(20))
	}
}

func (sp *sparkServer) quit() {
	sp.mu.Lock()
	_, _ = sp.stdin.Write([]byte(`{"cmd": "quit"}` + "\n"))
	sp.mu.Unlock()
	select {
	case <-sp.proc.done:
	case <-time.After(30 * time.Second):
		sp.proc.stop(10 * time.Second)
	}
}
