// Package promrules owns reactor's Prometheus rules: rules.yml (the one
// source, a plain rules file) and prometheusrule.yaml, the same rules as a
// PrometheusRule for the kube-prometheus operator, which Generate writes
// and the tests keep in step. It holds no reactor code and must not: the
// rules read only what reactor exports (package metrics).
package promrules

import (
	"bytes"
	"errors"
	"strings"
)

// RegenerateCommand rewrites prometheusrule.yaml from rules.yml.
const RegenerateCommand = "go test ./deploy/prometheus -run TestPrometheusRuleIsGenerated -update"

const header = `# Generated from rules.yml; do not edit: edit rules.yml and run
#   ` + RegenerateCommand + `
# kubectl apply -f deploy/prometheus/prometheusrule.yaml (in the namespace
# the Prometheus resource's ruleNamespaceSelector covers). The labels are
# the ones kube-prometheus's default ruleSelector and the prometheus-operator
# chart's match; add yours if your Prometheus selects on others.
apiVersion: monitoring.coreos.com/v1
kind: PrometheusRule
metadata:
  name: reactor
  labels:
    app.kubernetes.io/name: reactor
    app.kubernetes.io/component: alerting
    prometheus: k8s
    role: alert-rules
spec:
`

// Generate returns the PrometheusRule for a rules file: its groups, text
// and comments kept, under spec (a PrometheusRule's spec is a rules file's
// top level). The rules file's own header comment, before groups:, is
// dropped.
func Generate(rules []byte) ([]byte, error) {
	i := bytes.Index(rules, []byte("\ngroups:"))
	if i < 0 {
		return nil, errors.New("rules file has no top-level groups:")
	}
	var out strings.Builder
	out.WriteString(header)
	for _, line := range strings.Split(strings.TrimRight(string(rules[i+1:]), "\n"), "\n") {
		if line != "" {
			out.WriteString("  ")
		}
		out.WriteString(line)
		out.WriteString("\n")
	}
	return []byte(out.String()), nil
}
