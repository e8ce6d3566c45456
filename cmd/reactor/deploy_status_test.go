package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// deploy/status-pages serves the status pages behind a token: its patches
// set flags reactor knows, mount the Secret where REACTOR_STATUS_TOKEN_FILE
// points, name the port the Service and the NetworkPolicy open, and every
// file it lists exists. The base opens the metrics port only.
func TestStatusPagesOverlay(t *testing.T) {
	root := repoRoot(t)
	dir := filepath.Join(root, "deploy", "status-pages")
	kust := ymap(yamlDocs(t, filepath.Join(dir, "kustomization.yaml"))[0])
	var files []string
	for _, p := range ylist(kust["patches"]) {
		files = append(files, ystr(ymap(p)["path"]))
	}
	if res := ystrings(kust["resources"]); len(res) != 1 || res[0] != "../kustomize" {
		t.Errorf("resources %v, want the base ../kustomize", res)
	}
	kinds := map[string]map[string]any{}
	for _, f := range files {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Fatalf("kustomization.yaml lists %s: %v", f, err)
		}
		doc := ymap(yamlDocs(t, filepath.Join(dir, f))[0])
		kinds[ystr(doc["kind"])] = doc
	}
	pod := ymap(ymap(ymap(kinds["Deployment"]["spec"])["template"])["spec"])
	c := ymap(ylist(pod["containers"])[0])
	env := map[string]string{}
	var names []string
	for _, e := range ylist(c["env"]) {
		env[ystr(ymap(e)["name"])] = ystr(ymap(e)["value"])
		names = append(names, ystr(ymap(e)["name"]))
	}
	checkEnv(t, "deploy/status-pages", "run", names, knownEnv(t, "run"))
	tokenFile := env["REACTOR_STATUS_TOKEN_FILE"]
	if env["REACTOR_STATUS_ADDR"] != ":9095" || tokenFile == "" {
		t.Fatalf("env %v", env)
	}
	mounted := false
	for _, m := range ylist(c["volumeMounts"]) {
		if strings.HasPrefix(tokenFile, ystr(ymap(m)["mountPath"])+"/") {
			for _, v := range ylist(pod["volumes"]) {
				if ystr(ymap(v)["name"]) == ystr(ymap(m)["name"]) && ystr(ymap(ymap(v)["secret"])["secretName"]) == "reactor-status" {
					mounted = true
				}
			}
		}
	}
	if !mounted {
		t.Errorf("REACTOR_STATUS_TOKEN_FILE=%s is not in the mounted Secret reactor-status", tokenFile)
	}
	if p := ymap(ylist(c["ports"])[0]); ystr(p["name"]) != "status" || ystr(p["containerPort"]) != "9095" {
		t.Errorf("container port %v", p)
	}
	if p := ymap(ylist(ymap(kinds["Service"]["spec"])["ports"])[0]); ystr(p["targetPort"]) != "status" {
		t.Errorf("service port %v", p)
	}
	opened := func(np map[string]any) []string {
		var ports []string
		for _, rule := range ylist(ymap(np["spec"])["ingress"]) {
			for _, p := range ylist(ymap(rule)["ports"]) {
				ports = append(ports, ystr(ymap(p)["port"]))
			}
		}
		return ports
	}
	if got := strings.Join(opened(kinds["NetworkPolicy"]), ","); got != "metrics,status" {
		t.Errorf("the overlay's NetworkPolicy opens %s, want metrics,status", got)
	}
	base := ymap(yamlDocs(t, filepath.Join(root, "deploy", "kustomize", "networkpolicy.yaml"))[0])
	if got := strings.Join(opened(base), ","); got != "metrics" {
		t.Errorf("the base NetworkPolicy opens %s, want metrics", got)
	}
}
