package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"strings"
	"testing"
)

func TestReadBuildInfo(t *testing.T) {
	checkout := &debug.BuildInfo{
		Main: debug.Module{Path: "github.com/icereactor/reactor", Version: "(devel)"},
		Deps: []*debug.Module{{Path: icebergModule, Version: "v0.7.0"}},
		Settings: []debug.BuildSetting{{Key: "vcs", Value: "git"}, {Key: "vcs.revision", Value: "0d143cd6750dfae0418ad216dcb28a55629862ac"},
			{Key: "vcs.time", Value: "2026-12-02T22:19:43Z"}, {Key: "vcs.modified", Value: "true"}},
	}
	installed := &debug.BuildInfo{Main: debug.Module{Path: "github.com/icereactor/reactor", Version: "v0.3.1"}}
	for _, tc := range []struct {
		name      string
		info      *debug.BuildInfo
		ldVersion string
		want      buildInfo
		short     string
	}{
		{"a build from a checkout", checkout, "", buildInfo{Version: "dev", Revision: "0d143cd6750dfae0418ad216dcb28a55629862ac",
			Time: "2026-12-02T22:19:43Z", Modified: true, Iceberg: "v0.7.0"}, "dev (0d143cd6750d, modified)"},
		{"-X main.version wins", checkout, "v1.2.3", buildInfo{Version: "v1.2.3", Revision: "0d143cd6750dfae0418ad216dcb28a55629862ac",
			Time: "2026-12-02T22:19:43Z", Modified: true, Iceberg: "v0.7.0"}, "v1.2.3 (0d143cd6750d, modified)"},
		{"go install module@version", installed, "", buildInfo{Version: "v0.3.1", Iceberg: "unknown"}, "v0.3.1"},
		{"no build information", nil, "", buildInfo{Version: "dev", Iceberg: "unknown"}, "dev"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := readBuildInfo(tc.info, tc.ldVersion)
			got.Go = ""
			if got != tc.want || got.short() != tc.short {
				t.Errorf("got %+v (%q), want %+v (%q)", got, got.short(), tc.want, tc.short)
			}
		})
	}
}

// A binary built from a checkout names the commit it was built from, and
// says when the checkout had uncommitted changes. go build stamps the
// revision only in a checkout whose .git is a directory (not in a git
// worktree, where it is a file) and not under go test, so the test builds
// the binary itself.
func TestVersionNamesTheCommitOfACheckout(t *testing.T) {
	if testing.Short() {
		t.Skip("builds reactor")
	}
	git := func(args ...string) string {
		out, err := exec.Command("git", args...).Output()
		if err != nil {
			t.Skipf("git %v: %v (not a git checkout?)", args, err)
		}
		return strings.TrimSpace(string(out))
	}
	root := git("rev-parse", "--show-toplevel")
	if st, err := os.Stat(filepath.Join(root, ".git")); err != nil || !st.IsDir() {
		t.Skipf("%s is a git worktree: go build stamps no revision there", root)
	}
	bin := filepath.Join(t.TempDir(), "reactor")
	build := exec.CommandContext(t.Context(), "go", "build", "-buildvcs=true", "-o", bin, ".")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	head, dirty := git("rev-parse", "HEAD"), git("status", "--porcelain") != ""
	var out bytes.Buffer
	cmd := exec.CommandContext(t.Context(), bin, "version")
	cmd.Stdout = &out
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "commit      "+head+" (") || strings.Contains(out.String(), "uncommitted changes") != dirty {
		t.Errorf("HEAD %s (uncommitted changes: %v); reactor version says:\n%s", head, dirty, out.String())
	}
}
