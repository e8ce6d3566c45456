package main

// Tests of what can be tested of the deployment files without Docker or
// Kubernetes: they parse, every REACTOR_* variable they set is one the
// command the container runs knows, the thresholds files they mount
// validate, and the settings a deployment needs (probes, non-root,
// directory mounts, static build) are there. Plus `reactor write` against
// embedded NATS and the embedded catalog.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apache/iceberg-go/table"
	"github.com/goccy/go-yaml"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/icereactor/reactor/embedded"
	"github.com/icereactor/reactor/events"
	"github.com/icereactor/reactor/streamwriter"
	"github.com/icereactor/reactor/thresholds"
	"github.com/icereactor/reactor/triggers"
)

// repoRoot is the repository root; go test runs in cmd/reactor.
func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatalf("repository root not found: %v", err)
	}
	return root
}

// yamlDocs parses every document of a YAML file.
func yamlDocs(t *testing.T, file string) []any {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var docs []any
	for {
		var doc any
		err := dec.Decode(&doc)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		if doc != nil {
			docs = append(docs, doc)
		}
	}
	if len(docs) == 0 {
		t.Fatalf("%s: no YAML document", file)
	}
	return docs
}

// Accessors for decoded YAML: a missing key or a value of another type
// gives the zero value, and the assertions then report what is missing.

func ymap(v any) map[string]any {
	m, _ := v.(map[string]any)
	return m
}

func ylist(v any) []any {
	l, _ := v.([]any)
	return l
}

func ystr(v any) string {
	if v == nil {
		return ""
	}
	return fmt.Sprint(v)
}

func ystrings(v any) []string {
	if s, ok := v.(string); ok {
		return strings.Fields(s)
	}
	var out []string
	for _, e := range ylist(v) {
		out = append(out, ystr(e))
	}
	return out
}

// composeEnv normalises a compose environment (a map, or a list of
// KEY=VALUE) to a map.
func composeEnv(v any) map[string]string {
	env := map[string]string{}
	for k, val := range ymap(v) {
		env[k] = ystr(val)
	}
	for _, e := range ylist(v) {
		k, val, _ := strings.Cut(ystr(e), "=")
		env[k] = val
	}
	return env
}

var envAnnotation = regexp.MustCompile(`\(env (REACTOR_[A-Z0-9_]+)\)`)

// knownEnv lists the REACTOR_* variables a subcommand reads, from its help:
// the help is generated from the flag set that applyEnv reads, so the two
// cannot disagree.
func knownEnv(t *testing.T, cmd string) map[string]bool {
	t.Helper()
	ctx := context.Background()
	var out, errOut bytes.Buffer
	if cmd == "write" {
		// Called directly, so the test does not depend on the command table.
		if err := writeCmd(ctx, []string{"-h"}, &out, &errOut); !errors.Is(err, flag.ErrHelp) {
			t.Fatalf("write -h: %v\n%s", err, errOut.String())
		}
	} else if code := execute(ctx, []string{cmd, "-h"}, &out, &errOut); code != 0 {
		t.Fatalf("%s -h: exit %d\n%s", cmd, code, errOut.String())
	}
	known := map[string]bool{}
	for _, m := range envAnnotation.FindAllStringSubmatch(out.String(), -1) {
		known[m[1]] = true
	}
	if len(known) == 0 {
		t.Fatalf("%s -h documents no REACTOR_* variable:\n%s", cmd, out.String())
	}
	return known
}

// checkEnv fails listing the REACTOR_* variables cmd does not know.
func checkEnv(t *testing.T, where, cmd string, env []string, known map[string]bool) {
	t.Helper()
	var unknown []string
	for _, k := range env {
		if strings.HasPrefix(k, envPrefix) && !known[k] {
			unknown = append(unknown, k)
		}
	}
	if len(unknown) > 0 {
		slices.Sort(unknown)
		t.Errorf("%s sets variables `reactor %s` does not read: %s", where, cmd, strings.Join(unknown, ", "))
	}
}

// dockerfile is what the tests need from deploy/Dockerfile.
type dockerfile struct {
	stages [][]string // instructions per stage, continuation lines joined
	cmd    []string   // the final stage's CMD: the default subcommand
}

func parseDockerfile(t *testing.T) dockerfile {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(repoRoot(t), "deploy", "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	var (
		df      dockerfile
		pending string
	)
	for line := range strings.Lines(string(data)) {
		line = strings.TrimSpace(line)
		if pending == "" && (line == "" || strings.HasPrefix(line, "#")) {
			continue
		}
		if cont, ok := strings.CutSuffix(line, `\`); ok {
			pending += cont + " "
			continue
		}
		instr := pending + line
		pending = ""
		if strings.HasPrefix(strings.ToUpper(instr), "FROM ") {
			df.stages = append(df.stages, nil)
		}
		if len(df.stages) == 0 {
			t.Fatalf("Dockerfile: %q before the first FROM", instr)
		}
		df.stages[len(df.stages)-1] = append(df.stages[len(df.stages)-1], instr)
	}
	if len(df.stages) < 2 {
		t.Fatalf("Dockerfile has %d stages, want a build stage and a final one", len(df.stages))
	}
	for _, instr := range df.stages[len(df.stages)-1] {
		if rest, ok := strings.CutPrefix(instr, "CMD "); ok {
			if err := json.Unmarshal([]byte(rest), &df.cmd); err != nil {
				t.Fatalf("Dockerfile CMD %s: want the JSON form: %v", rest, err)
			}
		}
	}
	if len(df.cmd) == 0 {
		t.Fatal("Dockerfile: the final stage has no CMD")
	}
	return df
}

func TestDockerfile(t *testing.T) {
	df := parseDockerfile(t)
	final := df.stages[len(df.stages)-1]

	var user string
	for _, instr := range final {
		if rest, ok := strings.CutPrefix(instr, "USER "); ok {
			user = strings.TrimSpace(rest)
		}
	}
	uid, _, _ := strings.Cut(user, ":")
	if n, err := strconv.Atoi(uid); err != nil || n == 0 {
		// Numeric: Kubernetes' runAsNonRoot cannot check a user name.
		t.Errorf("final stage USER = %q, want a numeric non-root user", user)
	}
	if !slices.Contains(final, `ENTRYPOINT ["/reactor"]`) {
		t.Errorf("final stage has no ENTRYPOINT [\"/reactor\"]: %q", final)
	}
	if !slices.Equal(df.cmd, []string{"run"}) {
		t.Errorf("CMD = %q, want [\"run\"]", df.cmd)
	}
	if !slices.ContainsFunc(final, func(s string) bool { return strings.HasPrefix(s, "EXPOSE") && strings.Contains(s, "9090") }) {
		t.Errorf("final stage does not EXPOSE 9090: %q", final)
	}

	var build string
	for _, stage := range df.stages[:len(df.stages)-1] {
		for _, instr := range stage {
			if strings.HasPrefix(instr, "RUN ") && strings.Contains(instr, "go build") {
				build = instr
			}
		}
	}
	for _, want := range []string{"CGO_ENABLED=0", "-trimpath", "./cmd/reactor"} {
		if !strings.Contains(build, want) {
			t.Errorf("build step %q lacks %s", build, want)
		}
	}
}

// composeService is one service of docker-compose.yml that runs reactor.
type composeService struct {
	name    string
	cmd     string
	env     map[string]string
	volumes []any
}

func TestDockerCompose(t *testing.T) {
	root := repoRoot(t)
	doc := ymap(yamlDocs(t, filepath.Join(root, "docker-compose.yml"))[0])
	services := ymap(doc["services"])
	if len(services) == 0 {
		t.Fatal("docker-compose.yml has no services")
	}
	defaultCmd := parseDockerfile(t).cmd

	var reactors []composeService
	for name, v := range services {
		svc := ymap(v)
		dockerfile := ystr(ymap(svc["build"])["dockerfile"])
		if dockerfile == "" && !strings.HasPrefix(ystr(svc["image"]), "reactor") {
			continue
		}
		if dockerfile != "" && path.Clean(dockerfile) != "deploy/Dockerfile" {
			t.Errorf("service %s builds %s, want deploy/Dockerfile", name, dockerfile)
		}
		args := ystrings(svc["command"])
		if len(args) == 0 {
			args = defaultCmd
		}
		reactors = append(reactors, composeService{name: name, cmd: args[0], env: composeEnv(svc["environment"]),
			volumes: ylist(svc["volumes"])})
	}
	cmds := map[string]bool{}
	for _, s := range reactors {
		cmds[s.cmd] = true
	}
	if !cmds["run"] || !cmds["write"] {
		t.Fatalf("want services running reactor run and reactor write, found %v", reactors)
	}

	known := map[string]map[string]bool{}
	for _, s := range reactors {
		if known[s.cmd] == nil {
			known[s.cmd] = knownEnv(t, s.cmd)
		}
		checkEnv(t, "docker-compose service "+s.name, s.cmd, slices.Collect(maps.Keys(s.env)), known[s.cmd])
		if file := s.env["REACTOR_THRESHOLDS"]; file != "" {
			host := composeHostPath(t, root, s, file)
			if _, err := thresholds.Load(host); err != nil {
				t.Errorf("service %s: thresholds %s (%s): %v", s.name, file, host, err)
			}
		}
		if s.cmd == "run" {
			checkMinIONotifications(t, services, s)
		}
	}

	natsJS := false
	for _, v := range services {
		svc := ymap(v)
		if strings.HasPrefix(ystr(svc["image"]), "nats:") {
			args := ystrings(svc["command"])
			natsJS = slices.Contains(args, "-js") || slices.Contains(args, "--jetstream")
		}
	}
	if !natsJS {
		t.Error("no nats service runs with JetStream (-js); reactor's streams need it")
	}
}

// composeHostPath finds the host file behind a container path through the
// service's bind mounts (short "src:dst[:mode]" or long syntax).
func composeHostPath(t *testing.T, root string, s composeService, file string) string {
	t.Helper()
	for _, v := range s.volumes {
		var src, dst string
		if m := ymap(v); m != nil {
			src, dst = ystr(m["source"]), ystr(m["target"])
		} else {
			parts := strings.Split(ystr(v), ":")
			if len(parts) < 2 {
				continue
			}
			src, dst = parts[0], parts[1]
		}
		if !strings.HasPrefix(src, ".") && !strings.HasPrefix(src, "/") {
			continue // a named volume
		}
		rel, err := filepath.Rel(dst, file)
		if err != nil || strings.HasPrefix(rel, "..") {
			continue
		}
		return filepath.Join(root, src, rel)
	}
	t.Fatalf("service %s: %s is not under any bind mount", s.name, file)
	return ""
}

// checkMinIONotifications checks that MinIO publishes bucket notifications,
// through JetStream, on the subject reactor's notification stream stores.
func checkMinIONotifications(t *testing.T, services map[string]any, reactor composeService) {
	t.Helper()
	want := reactor.env["REACTOR_NOTIFICATION_SUBJECT"]
	if want == "" {
		want = triggers.DefaultNotificationSubject
	}
	found := false
	for name, v := range services {
		env := composeEnv(ymap(v)["environment"])
		for k, subject := range env {
			id, ok := strings.CutPrefix(k, "MINIO_NOTIFY_NATS_SUBJECT")
			if !ok {
				continue
			}
			found = true
			if subject != want {
				t.Errorf("%s publishes notifications on %q, reactor consumes %q", name, subject, want)
			}
			if env["MINIO_NOTIFY_NATS_JETSTREAM"+id] != "on" || env["MINIO_NOTIFY_NATS_ENABLE"+id] != "on" {
				t.Errorf("%s: MINIO_NOTIFY_NATS_ENABLE%s and MINIO_NOTIFY_NATS_JETSTREAM%s must be on", name, id, id)
			}
		}
	}
	if !found {
		t.Error("no service sets MINIO_NOTIFY_NATS_SUBJECT*: MinIO would not notify reactor")
	}
}

func TestKustomize(t *testing.T) {
	root := repoRoot(t)
	dir := filepath.Join(root, "deploy", "kustomize")
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	docs := map[string][]any{}
	for _, e := range entries {
		if ext := filepath.Ext(e.Name()); !e.IsDir() && (ext == ".yaml" || ext == ".yml") {
			docs[e.Name()] = yamlDocs(t, filepath.Join(dir, e.Name()))
		}
	}
	kust := ymap(docs["kustomization.yaml"][0])
	if kust == nil {
		t.Fatal("deploy/kustomize/kustomization.yaml is missing")
	}

	// (d) every manifest is listed, every listed file exists.
	listed := map[string]bool{}
	for _, r := range ystrings(kust["resources"]) {
		listed[r] = true
	}
	generated := map[string]map[string]string{} // ConfigMap name -> key -> file
	for _, g := range ylist(kust["configMapGenerator"]) {
		gm := ymap(g)
		files := map[string]string{}
		for _, f := range ystrings(gm["files"]) {
			key, file, ok := strings.Cut(f, "=")
			if !ok {
				key, file = path.Base(f), f
			}
			files[key] = file
			listed[file] = true
		}
		generated[ystr(gm["name"])] = files
	}
	for _, g := range ylist(kust["secretGenerator"]) {
		for _, f := range ystrings(ymap(g)["files"]) {
			_, file, ok := strings.Cut(f, "=")
			if !ok {
				file = f
			}
			listed[file] = true
		}
	}
	for file := range listed {
		if _, err := os.Stat(filepath.Join(dir, file)); err != nil {
			t.Errorf("kustomization.yaml lists %s: %v", file, err)
		}
	}
	for name := range docs {
		if name != "kustomization.yaml" && !listed[name] {
			t.Errorf("deploy/kustomize/%s is not listed in kustomization.yaml", name)
		}
	}

	// The thresholds file must be one reactor accepts.
	if _, err := thresholds.Load(filepath.Join(dir, "thresholds.yaml")); err != nil {
		t.Errorf("deploy/kustomize/thresholds.yaml: %v", err)
	}

	var deployments []map[string]any
	for _, ds := range docs {
		for _, d := range ds {
			if ystr(ymap(d)["kind"]) == "Deployment" {
				deployments = append(deployments, ymap(d))
			}
		}
	}
	if len(deployments) != 1 {
		t.Fatalf("want one Deployment, found %d", len(deployments))
	}
	checkDeployment(t, dir, deployments[0], generated, parseDockerfile(t).cmd)
}

func checkDeployment(t *testing.T, dir string, d map[string]any, generated map[string]map[string]string, defaultCmd []string) {
	t.Helper()
	spec := ymap(d["spec"])
	// Replicas share the tables through leases: more than one keeps the
	// tables served through a pod's death, and a rollout must not take
	// them all down at once.
	if r := ystr(spec["replicas"]); r == "" || r == "0" || r == "1" {
		t.Errorf("replicas = %q, want at least 2", r)
	}
	if st := ymap(spec["strategy"]); ystr(st["type"]) != "RollingUpdate" || ystr(ymap(st["rollingUpdate"])["maxUnavailable"]) != "0" {
		t.Errorf("strategy = %v, want RollingUpdate with maxUnavailable 0", st)
	}
	pod := ymap(ymap(spec["template"])["spec"])
	containers := ylist(pod["containers"])
	if len(containers) != 1 {
		t.Fatalf("want one container, found %d", len(containers))
	}
	c := ymap(containers[0])

	// (e) non-root, read-only root filesystem.
	podSC, sc := ymap(pod["securityContext"]), ymap(c["securityContext"])
	if podSC["runAsNonRoot"] != true && sc["runAsNonRoot"] != true {
		t.Error("runAsNonRoot is not set")
	}
	for _, s := range []map[string]any{podSC, sc} {
		if u, ok := s["runAsUser"]; ok && ystr(u) == "0" {
			t.Error("runAsUser is 0")
		}
	}
	if sc["readOnlyRootFilesystem"] != true {
		t.Error("readOnlyRootFilesystem is not set")
	}

	// (e) probes on the metrics port.
	ports := map[string]string{}
	for _, p := range ylist(c["ports"]) {
		ports[ystr(ymap(p)["name"])] = ystr(ymap(p)["containerPort"])
	}
	for probe, want := range map[string]string{"livenessProbe": "/healthz", "readinessProbe": "/readyz"} {
		get := ymap(ymap(c[probe])["httpGet"])
		port := ystr(get["port"])
		if named, ok := ports[port]; ok {
			port = named
		}
		if ystr(get["path"]) != want || port != "9090" {
			t.Errorf("%s = %v %v, want GET %s on 9090", probe, get["path"], get["port"], want)
		}
	}

	// (b) environment.
	args := ystrings(c["command"])
	if len(args) == 0 {
		args = ystrings(c["args"])
	}
	if len(args) == 0 {
		args = defaultCmd
	}
	cmd := args[0]
	env := map[string]string{}
	var names []string
	for _, e := range ylist(c["env"]) {
		name := ystr(ymap(e)["name"])
		names = append(names, name)
		env[name] = ystr(ymap(e)["value"])
	}
	checkEnv(t, "the Deployment", cmd, names, knownEnv(t, cmd))

	// (e) the thresholds ConfigMap is mounted as a directory and holds the
	// file REACTOR_THRESHOLDS names.
	volumes := map[string]map[string]any{}
	for _, v := range ylist(pod["volumes"]) {
		volumes[ystr(ymap(v)["name"])] = ymap(v)
	}
	file := env["REACTOR_THRESHOLDS"]
	if file == "" {
		t.Fatal("the Deployment does not set REACTOR_THRESHOLDS")
	}
	found := false
	for _, m := range ylist(c["volumeMounts"]) {
		mount := ymap(m)
		vol := volumes[ystr(mount["name"])]
		cm := ymap(vol["configMap"])
		if cm == nil {
			continue
		}
		if sub := ystr(mount["subPath"]); sub != "" {
			t.Errorf("ConfigMap %s is mounted with subPath %s: updates would never reach reactor", cm["name"], sub)
		}
		rel, err := filepath.Rel(ystr(mount["mountPath"]), file)
		if err != nil || strings.Contains(rel, "/") || strings.HasPrefix(rel, "..") {
			continue
		}
		found = true
		src, ok := generated[ystr(cm["name"])][rel]
		if !ok {
			t.Errorf("REACTOR_THRESHOLDS=%s: ConfigMap %s has no key %s in kustomization.yaml", file, cm["name"], rel)
			continue
		}
		if _, err := thresholds.Load(filepath.Join(dir, src)); err != nil {
			t.Errorf("%s (mounted as %s): %v", src, file, err)
		}
	}
	if !found {
		t.Errorf("REACTOR_THRESHOLDS=%s is not in a mounted ConfigMap", file)
	}
}

func TestCommitPublishSubject(t *testing.T) {
	ident := table.Identifier{"db", "events"}
	tests := []struct {
		subject, want, err string
	}{
		{subject: "iceberg.commits.>", want: "iceberg.commits.db.events"},
		{subject: ">", want: "db.events"},
		{subject: "commits.fixed", want: "commits.fixed"},
		{subject: "iceberg.*.x", err: "only a trailing '>'"},
		{subject: "a.>.b", err: "only a trailing '>'"},
		{subject: "a..b", err: "empty token"},
		{subject: "", err: "must not be empty"},
	}
	for _, tt := range tests {
		got, err := commitPublishSubject(tt.subject, ident)
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("%q: error %v, want %q", tt.subject, err, tt.err)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("%q: got %q, %v; want %q", tt.subject, got, err, tt.want)
		}
	}
	if got, _ := commitPublishSubject("iceberg.commits.>", table.Identifier{"a", "b", "t"}); got != "iceberg.commits.a.b.t" {
		t.Errorf("nested namespace: got %q", got)
	}
}

func TestWriteUsage(t *testing.T) {
	noEnv := func(string) string { return "" }
	tests := []struct {
		name string
		args []string
		env  map[string]string
		err  string
	}{
		{"no table", []string{"--nats-url", "nats://x:4222"}, nil, "missing TABLE"},
		{"no namespace", []string{"--nats-url", "nats://x:4222", "events"}, nil, "want one TABLE"},
		{"no nats", []string{"db.events"}, nil, "--nats-url is required"},
		{"bad rows", []string{"--nats-url", "nats://x:4222", "--rows", "0", "db.events"}, nil, "--rows"},
		{"bad interval", []string{"--nats-url", "nats://x:4222", "db.events", "--interval", "0s"}, nil, "--interval"},
		{"bad env", []string{"--nats-url", "nats://x:4222", "db.events"}, map[string]string{"REACTOR_PARTITIONS": "many"},
			"REACTOR_PARTITIONS"},
		{"two tables", []string{"--nats-url", "nats://x:4222", "db.a", "db.b"}, nil, "want one TABLE (namespace.table), got 2 arguments: db.a db.b"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			getenv := noEnv
			if tt.env != nil {
				getenv = func(k string) string { return tt.env[k] }
			}
			_, err := parseWriteConfig(tt.args, getenv, io.Discard)
			var uerr *usageError
			if !errors.As(err, &uerr) || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("error %v, want a usage error containing %q", err, tt.err)
			}
		})
	}

	// Flags after TABLE and the environment both count.
	cfg, err := parseWriteConfig([]string{"db.events", "--rows", "7"},
		func(k string) string { return map[string]string{"REACTOR_NATS_URL": "nats://env:4222"}[k] }, io.Discard)
	if err != nil || cfg.rows != 7 || cfg.natsURL != "nats://env:4222" || cfg.publishTo != "iceberg.commits.db.events" {
		t.Errorf("got %+v, %v", cfg, err)
	}
}

func TestWriteCommand(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	dir := t.TempDir()
	srv, err := embedded.StartNATS(embedded.NATSOptions{StoreDir: filepath.Join(dir, "nats")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Shutdown)

	const commits, rows = 3, 7
	var out, errOut bytes.Buffer
	args := []string{"--nats-url", srv.URL(), "--data-dir", dir, "--commits", strconv.Itoa(commits),
		"--interval", "10ms", "--rows", strconv.Itoa(rows), "--partitions", "2", "db.events"}
	if err := writeCmd(ctx, args, &out, &errOut); err != nil {
		t.Fatalf("write: %v\n%s", err, errOut.String())
	}
	if n := strings.Count(errOut.String(), "msg=committed"); n != commits {
		t.Errorf("%d progress lines, want %d:\n%s", n, commits, errOut.String())
	}

	cat, err := embedded.OpenCatalog(ctx, filepath.Join(dir, "catalog"))
	if err != nil {
		t.Fatal(err)
	}
	if c, ok := cat.(interface{ Close() error }); ok {
		t.Cleanup(func() { _ = c.Close() })
	}
	tbl, err := cat.LoadTable(ctx, table.Identifier{"db", "events"})
	if err != nil {
		t.Fatal(err)
	}
	snapshots := map[int64]bool{}
	for _, s := range tbl.Metadata().Snapshots() {
		snapshots[s.SnapshotID] = true
	}
	if len(snapshots) != commits {
		t.Errorf("%d snapshots, want %d", len(snapshots), commits)
	}
	contents, err := streamwriter.Read(ctx, tbl)
	if err != nil {
		t.Fatal(err)
	}
	if contents.Total.Rows != commits*rows {
		t.Errorf("table holds %d rows, want %d", contents.Total.Rows, commits*rows)
	}
	// Round-robin over p0, p1: commits 1 and 3 go to p0.
	if p0, p1 := contents.ByPartition["p0"].Rows, contents.ByPartition["p1"].Rows; p0 != 2*rows || p1 != rows {
		t.Errorf("rows per partition p0=%d p1=%d, want %d and %d", p0, p1, 2*rows, rows)
	}

	// The events were stored by the stream reactor run consumes.
	conn, err := nats.Connect(srv.URL())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(conn.Close)
	js, err := jetstream.New(conn)
	if err != nil {
		t.Fatal(err)
	}
	stream, err := js.Stream(ctx, triggers.DefaultCommitStream)
	if err != nil {
		t.Fatalf("stream %s: %v", triggers.DefaultCommitStream, err)
	}
	info, err := stream.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if info.State.Msgs != commits {
		t.Fatalf("stream holds %d events, want %d", info.State.Msgs, commits)
	}
	if !slices.Equal(info.Config.Subjects, []string{triggers.DefaultCommitSubject}) || info.Config.Retention != jetstream.WorkQueuePolicy {
		t.Errorf("stream config %v %v differs from reactor run's", info.Config.Subjects, info.Config.Retention)
	}
	for seq := uint64(1); seq <= commits; seq++ {
		msg, err := stream.GetMsg(ctx, seq)
		if err != nil {
			t.Fatal(err)
		}
		ev, err := events.DecodeCommit(msg.Data)
		if err != nil {
			t.Fatal(err)
		}
		if msg.Subject != "iceberg.commits.db.events" || ev.QualifiedName() != "db.events" || !snapshots[ev.SnapshotID] {
			t.Errorf("event %d on %s: %+v, not one of the table's snapshots", seq, msg.Subject, ev)
		}
		delete(snapshots, ev.SnapshotID) // each snapshot once
	}

	// A second run appends to the existing table through the same stream.
	errOut.Reset()
	if err := writeCmd(ctx, append(args[:len(args)-1:len(args)-1], "--commits", "1", "db.events"), &out, &errOut); err != nil {
		t.Fatalf("second write: %v\n%s", err, errOut.String())
	}
	if info, err = stream.Info(ctx); err != nil || info.State.Msgs != commits+1 {
		t.Errorf("after a second run the stream holds %v events (%v), want %d", info.State.Msgs, err, commits+1)
	}

	// A commit stream reactor run made for another subject is left alone.
	errOut.Reset()
	err = writeCmd(ctx, []string{"--nats-url", srv.URL(), "--data-dir", dir, "--commits", "1",
		"--commit-subject", "other.commits.>", "db.events"}, &out, &errOut)
	var uerr *usageError
	if !errors.As(err, &uerr) || !strings.Contains(err.Error(), "does not store subject") {
		t.Errorf("error %v, want a usage error about the stream's subjects\n%s", err, errOut.String())
	}
	if info, err = stream.Info(ctx); err != nil || !slices.Equal(info.Config.Subjects, []string{triggers.DefaultCommitSubject}) {
		t.Errorf("stream subjects now %v (%v)", info.Config.Subjects, err)
	}
}
