package promrules

import (
	"bytes"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"github.com/goccy/go-yaml"
)

var update = flag.Bool("update", false, "rewrite prometheusrule.yaml from rules.yml")

// needTool returns the path of a command-line tool, skipping the test when
// it is missing unless REACTOR_REQUIRE_TOOLS=1 (CI), which fails it.
func needTool(t *testing.T, name string) string {
	t.Helper()
	path, err := exec.LookPath(name)
	if err != nil {
		if os.Getenv("REACTOR_REQUIRE_TOOLS") == "1" {
			t.Fatalf("%s is required (REACTOR_REQUIRE_TOOLS=1) but not installed: %v", name, err)
		}
		t.Skipf("%s not installed (Debian: apt-get install prometheus); skipping", name)
	}
	return path
}

func run(t *testing.T, dir, name string, args ...string) {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", filepath.Base(name), strings.Join(args, " "), err, out)
	}
}

func read(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestPrometheusRuleIsGenerated(t *testing.T) {
	want, err := Generate(read(t, "rules.yml"))
	if err != nil {
		t.Fatal(err)
	}
	if *update {
		if err := os.WriteFile("prometheusrule.yaml", want, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if got := read(t, "prometheusrule.yaml"); !bytes.Equal(got, want) {
		t.Fatalf("prometheusrule.yaml differs from what rules.yml generates; run\n  %s", RegenerateCommand)
	}
}

// The generator moves text; this checks the YAML it moved means the same.
func TestPrometheusRuleSpecIsTheRules(t *testing.T) {
	var cr struct {
		Kind string `yaml:"kind"`
		Spec any    `yaml:"spec"`
	}
	var plain map[string]any
	if err := yaml.Unmarshal(read(t, "rules.yml"), &plain); err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(read(t, "prometheusrule.yaml"), &cr); err != nil {
		t.Fatal(err)
	}
	if cr.Kind != "PrometheusRule" {
		t.Errorf("kind = %q", cr.Kind)
	}
	if !reflect.DeepEqual(cr.Spec, any(plain)) {
		t.Errorf("prometheusrule.yaml's spec is not rules.yml's content")
	}
}

func TestRulesPassPromtoolCheck(t *testing.T) {
	promtool := needTool(t, "promtool")
	run(t, ".", promtool, "check", "rules", "rules.yml")
	// promtool reads plain rules files: the PrometheusRule's spec is one.
	var cr struct {
		Spec map[string]any `yaml:"spec"`
	}
	if err := yaml.Unmarshal(read(t, "prometheusrule.yaml"), &cr); err != nil {
		t.Fatal(err)
	}
	spec, err := yaml.Marshal(cr.Spec)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "spec.yml")
	if err := os.WriteFile(path, spec, 0o644); err != nil {
		t.Fatal(err)
	}
	run(t, ".", promtool, "check", "rules", path)
}

func TestRulesPassTheirUnitTests(t *testing.T) {
	run(t, ".", needTool(t, "promtool"), "test", "rules", "tests.yml")
}

type ruleFile struct {
	Groups []struct {
		Name  string `yaml:"name"`
		Rules []struct {
			Alert       string            `yaml:"alert"`
			Record      string            `yaml:"record"`
			Expr        string            `yaml:"expr"`
			Annotations map[string]string `yaml:"annotations"`
		} `yaml:"rules"`
	} `yaml:"groups"`
}

func alerts(t *testing.T) map[string]map[string]string {
	t.Helper()
	var rf ruleFile
	if err := yaml.Unmarshal(read(t, "rules.yml"), &rf); err != nil {
		t.Fatal(err)
	}
	out := map[string]map[string]string{}
	for _, g := range rf.Groups {
		for _, r := range g.Rules {
			if r.Alert != "" {
				out[r.Alert] = r.Annotations
			}
		}
	}
	if len(out) == 0 {
		t.Fatal("no alerts in rules.yml")
	}
	return out
}

// Every alert has a runbook heading in docs/alerts.md, named like it, that
// its runbook_url points at, and a summary and description.
func TestEveryAlertHasARunbook(t *testing.T) {
	doc := string(read(t, "../../docs/alerts.md"))
	headings := map[string]bool{}
	for _, m := range regexp.MustCompile(`(?m)^## (\w+)$`).FindAllStringSubmatch(doc, -1) {
		headings[m[1]] = true
	}
	const base = "https://github.com/icereactor/reactor/blob/main/docs/alerts.md#"
	for name, ann := range alerts(t) {
		if !headings[name] {
			t.Errorf("%s: no heading \"## %s\" in docs/alerts.md", name, name)
		}
		if want := base + strings.ToLower(name); ann["runbook_url"] != want {
			t.Errorf("%s: runbook_url = %q, want %q", name, ann["runbook_url"], want)
		}
		if ann["summary"] == "" || ann["description"] == "" {
			t.Errorf("%s: summary or description missing", name)
		}
	}
	defined := alerts(t)
	for h := range headings {
		if _, ok := defined[h]; !ok && strings.HasPrefix(h, "Reactor") {
			t.Errorf("docs/alerts.md has a runbook for %s, which rules.yml does not define", h)
		}
	}
}

// Every alert has a unit-test case where it fires and one where it stays
// silent.
func TestEveryAlertIsTestedBothWays(t *testing.T) {
	var tf struct {
		Tests []struct {
			AlertRuleTest []struct {
				Alertname string `yaml:"alertname"`
				ExpAlerts []any  `yaml:"exp_alerts"`
			} `yaml:"alert_rule_test"`
		} `yaml:"tests"`
	}
	if err := yaml.Unmarshal(read(t, "tests.yml"), &tf); err != nil {
		t.Fatal(err)
	}
	fires, silent := map[string]bool{}, map[string]bool{}
	for _, tc := range tf.Tests {
		for _, a := range tc.AlertRuleTest {
			if len(a.ExpAlerts) > 0 {
				fires[a.Alertname] = true
			} else {
				silent[a.Alertname] = true
			}
		}
	}
	for name := range alerts(t) {
		if !fires[name] {
			t.Errorf("%s: no case in tests.yml where it fires", name)
		}
		if !silent[name] {
			t.Errorf("%s: no case in tests.yml where it stays silent", name)
		}
	}
}

// The compose stack's Prometheus configuration is valid with rules.yml
// where docker-compose.yml mounts it.
func TestComposeConfigPassesPromtoolCheck(t *testing.T) {
	promtool := needTool(t, "promtool")
	rules, err := filepath.Abs("rules.yml")
	if err != nil {
		t.Fatal(err)
	}
	const mounted = "/etc/prometheus/reactor/rules.yml"
	cfg := string(read(t, "compose.yml"))
	if !strings.Contains(cfg, mounted) {
		t.Fatalf("compose.yml does not load %s", mounted)
	}
	if compose := string(read(t, "../../docker-compose.yml")); !strings.Contains(compose, "./deploy/prometheus:/etc/prometheus/reactor:ro") {
		t.Fatalf("docker-compose.yml does not mount deploy/prometheus at /etc/prometheus/reactor")
	}
	path := filepath.Join(t.TempDir(), "prometheus.yml")
	if err := os.WriteFile(path, []byte(strings.ReplaceAll(cfg, mounted, rules)), 0o644); err != nil {
		t.Fatal(err)
	}
	run(t, ".", promtool, "check", "config", path)
}

// The ServiceMonitor scrapes the port the kustomize Service names, and the
// Service's name is the job label the alerts read.
func TestServiceMonitorMatchesTheService(t *testing.T) {
	var sm struct {
		Spec struct {
			Selector struct {
				MatchLabels map[string]string `yaml:"matchLabels"`
			} `yaml:"selector"`
			Endpoints []struct {
				Port string `yaml:"port"`
			} `yaml:"endpoints"`
		} `yaml:"spec"`
	}
	var svc struct {
		Metadata struct {
			Name   string            `yaml:"name"`
			Labels map[string]string `yaml:"labels"`
		} `yaml:"metadata"`
		Spec struct {
			Ports []struct {
				Name string `yaml:"name"`
			} `yaml:"ports"`
		} `yaml:"spec"`
	}
	if err := yaml.Unmarshal(read(t, "servicemonitor.yaml"), &sm); err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(read(t, "../kustomize/service.yaml"), &svc); err != nil {
		t.Fatal(err)
	}
	if svc.Metadata.Name != "reactor" || !strings.Contains(string(read(t, "rules.yml")), `up{job="reactor"}`) {
		t.Errorf("the Service is %q; the alerts read up{job=\"reactor\"}, the job label a ServiceMonitor gives it", svc.Metadata.Name)
	}
	// kustomization.yaml adds app.kubernetes.io/name: reactor to everything.
	for k, v := range sm.Spec.Selector.MatchLabels {
		if k != "app.kubernetes.io/name" || v != "reactor" {
			if svc.Metadata.Labels[k] != v {
				t.Errorf("ServiceMonitor selects %s=%s, which the Service does not carry", k, v)
			}
		}
	}
	if len(sm.Spec.Endpoints) != 1 || len(svc.Spec.Ports) == 0 || sm.Spec.Endpoints[0].Port != svc.Spec.Ports[0].Name {
		t.Errorf("ServiceMonitor endpoints %+v, Service ports %+v: want the Service's port by name", sm.Spec.Endpoints, svc.Spec.Ports)
	}
}
