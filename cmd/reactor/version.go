package main

import (
	"context"
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
)

// version is the release version, set at build time with
// -ldflags "-X main.version=v1.2.3". It is a var only because -X needs one;
// without it the version comes from the build information (the module
// version of `go install ...@v1.2.3`, and the VCS revision of a build from
// a checkout).
var version = ""

const icebergModule = "github.com/apache/iceberg-go"

// buildInfo is what `reactor version` says about the binary.
type buildInfo struct {
	Version  string // -X main.version, else the module version, else "dev"
	Revision string // the VCS revision it was built from ("" when unknown)
	Time     string // the revision's commit time (RFC 3339)
	Modified bool   // the checkout had uncommitted changes
	Go       string
	Iceberg  string
}

// buildVersion reads this binary's build information.
func buildVersion() buildInfo {
	info, _ := debug.ReadBuildInfo()
	return readBuildInfo(info, version)
}

// readBuildInfo is buildVersion for given build information (nil when
// the binary carries none) and -X version.
func readBuildInfo(info *debug.BuildInfo, ldVersion string) buildInfo {
	b := buildInfo{Version: ldVersion, Go: runtime.Version(), Iceberg: "unknown"}
	if info == nil {
		if b.Version == "" {
			b.Version = "dev"
		}
		return b
	}
	if b.Version == "" {
		// "(devel)" is go build's word for a build from a checkout.
		if v := info.Main.Version; v != "" && v != "(devel)" {
			b.Version = v
		} else {
			b.Version = "dev"
		}
	}
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			b.Revision = s.Value
		case "vcs.time":
			b.Time = s.Value
		case "vcs.modified":
			b.Modified = s.Value == "true"
		}
	}
	for _, m := range info.Deps {
		if m.Path != icebergModule {
			continue
		}
		b.Iceberg = m.Version
		if m.Replace != nil {
			b.Iceberg = fmt.Sprintf("%s (replaced by %s %s)", m.Version, m.Replace.Path, m.Replace.Version)
		}
	}
	return b
}

// short is the version for a log line: "dev (3f2a9c1d0e4b, modified)".
func (b buildInfo) short() string {
	if b.Revision == "" {
		return b.Version
	}
	rev := b.Revision[:min(len(b.Revision), 12)]
	if b.Modified {
		rev += ", modified"
	}
	return b.Version + " (" + rev + ")"
}

// versionCmd is `reactor version`.
func versionCmd(_ context.Context, args []string, stdout, _ io.Writer) error {
	fs := newFlagSet("version", "version", "Prints reactor's version, the commit it was built from (and whether the checkout had\n"+
		"uncommitted changes), the Go version it was built with and the iceberg-go version it uses.")
	if err := parseFlags(fs, args, stdout); err != nil {
		return err
	}
	b := buildVersion()
	fmt.Fprintf(stdout, "reactor     %s\n", b.Version)
	if b.Revision != "" {
		commit := b.Revision
		if b.Time != "" {
			commit += " (" + b.Time + ")"
		}
		if b.Modified {
			commit += ", with uncommitted changes"
		}
		fmt.Fprintf(stdout, "commit      %s\n", commit)
	} else {
		fmt.Fprintf(stdout, "commit      unknown (%s)\n", noRevisionWhy)
	}
	fmt.Fprintf(stdout, "go          %s %s/%s\n", b.Go, runtime.GOOS, runtime.GOARCH)
	fmt.Fprintf(stdout, "iceberg-go  %s\n", b.Iceberg)
	return nil
}

// noRevisionWhy explains a missing commit: go build stamps it only in a
// checkout with git at hand (and not with -buildvcs=false), go test never.
const noRevisionWhy = "built outside a git checkout, with -buildvcs=false, or by go test"
