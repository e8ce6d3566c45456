package main

// The compose file's MinIO, REST catalog and reactor settings must be the
// ones the realparts suite runs the real servers with (realparts/settings.yaml,
// which realparts/scenarios reads too): settings nobody ran are how a
// compose stack ends up with an ARN MinIO refuses or a queue directory
// missing.

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/icereactor/reactor/triggers"
)

// realpartsSettings is realparts/settings.yaml.
type realpartsSettings struct {
	minioEnv, restEnv, reactorEnv, runEnv map[string]string
	bucket, arn                           string
	events                                []string
}

func loadRealpartsSettings(t *testing.T, root string) realpartsSettings {
	t.Helper()
	doc := ymap(yamlDocs(t, filepath.Join(root, "realparts", "settings.yaml"))[0])
	env := func(section, key string) map[string]string {
		m := map[string]string{}
		for k, v := range ymap(ymap(doc[section])[key]) {
			m[k] = ystr(v)
		}
		return m
	}
	minio := ymap(doc["minio"])
	s := realpartsSettings{
		minioEnv: env("minio", "env"), restEnv: env("rest", "env"),
		reactorEnv: env("reactor", "env"), runEnv: env("reactor", "run_env"),
		bucket: ystr(minio["bucket"]), arn: ystr(ymap(minio["notification"])["arn"]),
		events: ystrings(ymap(minio["notification"])["events"]),
	}
	if len(s.minioEnv) == 0 || len(s.restEnv) == 0 || len(s.reactorEnv) == 0 || s.bucket == "" || s.arn == "" || len(s.events) == 0 {
		t.Fatalf("realparts/settings.yaml lacks a section: %+v", s)
	}
	return s
}

// setupPin reads a VAR=value pin from realparts/setup.sh.
func setupPin(t *testing.T, root, name string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(root, "realparts", "setup.sh"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^` + name + `=(\S+)$`).FindSubmatch(data)
	if m == nil {
		t.Fatalf("realparts/setup.sh does not pin %s", name)
	}
	return string(m[1])
}

var settingPlaceholder = regexp.MustCompile(`\{([^{}]+)\}`)

// placeholders binds each placeholder of realparts/settings.yaml to the
// one value the compose file gives it.
type placeholders map[string]string

// match checks value against the settings' template: literal text equal,
// each {name} standing for the same value everywhere in the file.
func (b placeholders) match(template, value string) error {
	names := settingPlaceholder.FindAllStringSubmatch(template, -1)
	parts := settingPlaceholder.Split(template, -1)
	var pattern strings.Builder
	pattern.WriteString("^")
	for i, lit := range parts {
		pattern.WriteString(regexp.QuoteMeta(lit))
		if i < len(names) {
			pattern.WriteString("(.+?)")
		}
	}
	pattern.WriteString("$")
	m := regexp.MustCompile(pattern.String()).FindStringSubmatch(value)
	if m == nil {
		return fmt.Errorf("%q does not have the form %q", value, template)
	}
	for i, n := range names {
		name, got := n[1], m[i+1]
		if prev, ok := b[name]; ok && prev != got {
			return fmt.Errorf("%q gives {%s} the value %q, elsewhere it is %q", value, name, got, prev)
		}
		b[name] = got
	}
	return nil
}

// checkEnvAgainst compares a service's environment with the settings:
// every setting present and of the proven form; with prefixes, no other
// variable with one of them (a setting the suite never ran).
func checkEnvAgainst(t *testing.T, bind placeholders, service string, env, want map[string]string, prefixes ...string) {
	t.Helper()
	for _, k := range slices.Sorted(maps.Keys(want)) {
		v, ok := env[k]
		if !ok {
			t.Errorf("service %s does not set %s (realparts/settings.yaml: %q)", service, k, want[k])
			continue
		}
		if err := bind.match(want[k], v); err != nil {
			t.Errorf("service %s: %s: %v", service, k, err)
		}
	}
	for _, k := range slices.Sorted(maps.Keys(env)) {
		if _, proven := want[k]; proven {
			continue
		}
		for _, p := range prefixes {
			if strings.HasPrefix(k, p) {
				t.Errorf("service %s sets %s=%q, which realparts/settings.yaml does not have: the suite never ran with it", service, k, env[k])
			}
		}
	}
}

// mcEvents maps `mc event add --event` names to the S3 event types mc
// configures for them (mc's cmd/client-s3.go, AddNotificationConfig).
var mcEvents = map[string]string{"put": "s3:ObjectCreated:*", "delete": "s3:ObjectRemoved:*", "get": "s3:ObjectAccessed:*"}

func TestComposeUsesTheRealpartsSettings(t *testing.T) {
	root := repoRoot(t)
	want := loadRealpartsSettings(t, root)
	raw, err := os.ReadFile(filepath.Join(root, "docker-compose.yml"))
	if err != nil {
		t.Fatal(err)
	}
	services := ymap(ymap(yamlDocs(t, filepath.Join(root, "docker-compose.yml"))[0])["services"])
	byImage := func(prefix string) (string, map[string]any) {
		t.Helper()
		for name, v := range services {
			if strings.HasPrefix(ystr(ymap(v)["image"]), prefix) {
				return name, ymap(v)
			}
		}
		t.Fatalf("docker-compose.yml has no service with an image %s...", prefix)
		return "", nil
	}
	bind := placeholders{}

	minioName, minio := byImage("minio/minio:")
	checkEnvAgainst(t, bind, minioName, composeEnv(minio["environment"]), want.minioEnv, "MINIO_NOTIFY_")
	if tag, wantTag := strings.TrimPrefix(ystr(minio["image"]), "minio/minio:"), setupPin(t, root, "REALPARTS_MINIO_IMAGE"); tag != wantTag {
		t.Errorf("service %s runs MinIO %s; realparts/setup.sh vouches for %s (see the comment there before changing either)", minioName, tag, wantTag)
	}

	restName, rest := byImage("apache/iceberg-rest-fixture:")
	checkEnvAgainst(t, bind, restName, composeEnv(rest["environment"]), want.restEnv, "CATALOG_", "AWS_")
	if tag, wantTag := strings.TrimPrefix(ystr(rest["image"]), "apache/iceberg-rest-fixture:"), setupPin(t, root, "REALPARTS_CATALOG_VERSION"); tag != wantTag {
		t.Errorf("service %s runs the REST catalog %s; the suite runs iceberg-open-api %s", restName, tag, wantTag)
	}

	var runs, writes int
	for name, v := range services {
		svc := ymap(v)
		if ystr(ymap(svc["build"])["dockerfile"]) == "" && !strings.HasPrefix(ystr(svc["image"]), "reactor") {
			continue
		}
		env := composeEnv(svc["environment"])
		args := ystrings(svc["command"])
		switch {
		case len(args) > 0 && args[0] == "run":
			runs++
			all := maps.Clone(want.reactorEnv)
			maps.Copy(all, want.runEnv)
			checkEnvAgainst(t, bind, name, env, all, "AWS_", "REACTOR_CATALOG_", "REACTOR_NOTIFICATION_")
		case len(args) > 0 && args[0] == "write":
			writes++
			checkEnvAgainst(t, bind, name, env, want.reactorEnv, "AWS_", "REACTOR_CATALOG_")
		}
	}
	if runs != 1 || writes != 1 {
		t.Errorf("want one reactor run and one reactor write service, found %d and %d", runs, writes)
	}

	// The bucket rule: minio-init's `mc event add` with the proven ARN and
	// events, and no other spelling of the ARN anywhere.
	var rule string
	for name, v := range services {
		for _, line := range strings.Split(strings.Join(ystrings(ymap(v)["command"]), " "), "\n") {
			if strings.Contains(line, "mc event add") {
				rule = line
				t.Logf("bucket rule set by %s: %s", name, strings.TrimSpace(line))
			}
		}
	}
	fields := strings.Fields(rule)
	i := slices.Index(fields, "add")
	if rule == "" || i < 0 || i+2 >= len(fields) {
		t.Fatalf("no `mc event add ALIAS/BUCKET ARN --event ...` in docker-compose.yml")
	}
	target := slices.DeleteFunc(slices.Clone(fields[i+1:]), func(f string) bool { return strings.HasPrefix(f, "-") })
	if len(target) < 2 || !strings.HasSuffix(target[0], "/"+want.bucket) || target[1] != want.arn {
		t.Errorf("bucket rule %q: want BUCKET .../%s and ARN %s", rule, want.bucket, want.arn)
	}
	ev := slices.Index(fields, "--event")
	if ev < 0 || ev+1 >= len(fields) {
		t.Fatalf("bucket rule %q has no --event", rule)
	}
	var got []string
	for _, e := range strings.Split(fields[ev+1], ",") {
		got = append(got, mcEvents[e])
	}
	slices.Sort(got)
	if !slices.Equal(got, slices.Sorted(slices.Values(want.events))) {
		t.Errorf("bucket rule --event %s configures %v; the suite proves %v", fields[ev+1], got, want.events)
	}
	for _, arn := range regexp.MustCompile(`arn:minio:sqs::[A-Za-z0-9_]+:nats`).FindAllString(string(raw), -1) {
		if arn != want.arn {
			t.Errorf("docker-compose.yml mentions %s; MinIO accepts only %s (the case is MinIO's)", arn, want.arn)
		}
	}
	if bind["s3_endpoint"] == "" {
		t.Error("no S3 endpoint bound: the catalog and reactor settings were not found")
	}
	t.Logf("placeholders in docker-compose.yml: %v", bind)
}

// The Kubernetes deployment talks to a MinIO and a REST catalog run
// elsewhere: its catalog properties must be ones the suite runs with, and
// the notification source it relies on by default must be the one MinIO
// publishes on in the suite.
func TestKustomizeUsesTheRealpartsSettings(t *testing.T) {
	root := repoRoot(t)
	want := loadRealpartsSettings(t, root)
	proven := map[string]bool{}
	for part := range strings.SplitSeq(want.reactorEnv["REACTOR_CATALOG_PROP"], ",") {
		k, _, _ := strings.Cut(part, "=")
		proven[k] = true
	}
	found := false
	for _, doc := range yamlDocs(t, filepath.Join(root, "deploy", "kustomize", "deployment.yaml")) {
		spec := ymap(ymap(ymap(ymap(doc)["spec"])["template"])["spec"])
		for _, c := range ylist(spec["containers"]) {
			for _, e := range ylist(ymap(c)["env"]) {
				env := ymap(e)
				name, value := ystr(env["name"]), ystr(env["value"])
				switch name {
				case "REACTOR_CATALOG_PROP":
					found = true
					for part := range strings.SplitSeq(value, ",") {
						if k, _, _ := strings.Cut(part, "="); !proven[k] {
							t.Errorf("deployment.yaml sets catalog property %s, which the realparts suite never runs with", k)
						}
					}
				case "REACTOR_NOTIFICATION_SUBJECT", "REACTOR_NOTIFICATION_KEY_ENCODING":
					if value != want.runEnv[name] {
						t.Errorf("deployment.yaml sets %s=%q; MinIO publishes as %q in the suite", name, value, want.runEnv[name])
					}
				}
			}
		}
	}
	if !found {
		t.Error("deployment.yaml sets no REACTOR_CATALOG_PROP")
	}
	// Unset there, so reactor's defaults must be what MinIO does.
	if got := want.runEnv["REACTOR_NOTIFICATION_SUBJECT"]; got != triggers.DefaultNotificationSubject {
		t.Errorf("the suite's MinIO publishes on %q; reactor's default subject is %q", got, triggers.DefaultNotificationSubject)
	}
	if got := want.runEnv["REACTOR_NOTIFICATION_KEY_ENCODING"]; got != "url" {
		t.Errorf("the suite's MinIO needs key encoding %q; reactor's default is url", got)
	}
	if got := want.minioEnv["MINIO_NOTIFY_NATS_SUBJECT_PRIMARY"]; got != want.runEnv["REACTOR_NOTIFICATION_SUBJECT"] {
		t.Errorf("settings: MinIO publishes on %q, reactor consumes %q", got, want.runEnv["REACTOR_NOTIFICATION_SUBJECT"])
	}
}
