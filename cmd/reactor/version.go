package main

import (
	"context"
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
)

// version is the release version, set at build time with
// -ldflags "-X main.version=v1.2.3". It is a var only because -X needs one.
var version = "dev"

const icebergModule = "github.com/apache/iceberg-go"

// versionCmd is `reactor version`.
func versionCmd(_ context.Context, args []string, stdout, _ io.Writer) error {
	fs := newFlagSet("version", "version", "Prints reactor's version, the Go version it was built with and the iceberg-go version it uses.")
	if err := parseFlags(fs, args, stdout); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "reactor     %s\n", version)
	fmt.Fprintf(stdout, "go          %s %s/%s\n", runtime.Version(), runtime.GOOS, runtime.GOARCH)
	fmt.Fprintf(stdout, "iceberg-go  %s\n", moduleVersion(icebergModule))
	return nil
}

// moduleVersion reports the version of the dependency path compiled into
// this binary (following a replace directive), or "unknown" when the binary
// carries no build information.
func moduleVersion(path string) string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown"
	}
	for _, m := range info.Deps {
		if m.Path != path {
			continue
		}
		if m.Replace != nil {
			return fmt.Sprintf("%s (replaced by %s %s)", m.Version, m.Replace.Path, m.Replace.Version)
		}
		return m.Version
	}
	return "unknown"
}
