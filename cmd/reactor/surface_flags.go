package main

import (
	"flag"
	"net"
	"os"
	"strings"

	"github.com/icereactor/reactor/worker"
)

// defaultStatusAddr keeps the status pages on the pod's loopback: they
// show partition values (data), pending-deletion paths and lease owners,
// so only who may port-forward to the pod sees them unless the operator
// chooses otherwise.
const defaultStatusAddr = "127.0.0.1:9095"

// statusFlags are `reactor run`'s flags for the status pages' listener and
// credential.
type statusFlags struct {
	addr, tokenFile *string
	anonymous       *bool
}

func addStatusFlags(fs *flag.FlagSet) *statusFlags {
	return &statusFlags{
		addr: fs.String("status-addr", defaultStatusAddr,
			"`address` of the status pages (/, /tables/..., /jobs), a listener of their own: loopback by default (kubectl port-forward); the same as --http-addr serves them beside /metrics; empty disables them"),
		tokenFile: fs.String("status-token-file", "",
			"`file` holding a token (at least 16 characters) every status page request must carry, as a Bearer token or as the basic auth password; required when --status-addr is not a loopback address"),
		anonymous: fs.Bool("status-allow-anonymous", false,
			"serve the status pages on a non-loopback --status-addr without a token (they show partition values, file paths and lease owners)"),
	}
}

// resolve checks the flags and returns worker.Config's StatusAddr and
// StatusTokenFile.
func (s *statusFlags) resolve(httpAddr string) (addr, tokenFile string, err error) {
	addr, tokenFile = strings.TrimSpace(*s.addr), strings.TrimSpace(*s.tokenFile)
	switch {
	case addr == "":
		return worker.StatusOff, "", nil
	case addr == httpAddr:
		addr = "" // beside /metrics
	}
	if tokenFile != "" {
		if _, err := os.Stat(tokenFile); err != nil {
			return "", "", usageErrorf("--status-token-file: %w", err)
		}
		return addr, tokenFile, nil
	}
	listen := addr
	if listen == "" {
		listen = httpAddr
	}
	if !loopback(listen) && !*s.anonymous {
		return "", "", usageErrorf("--status-addr %s is not a loopback address: the status pages show partition values, file paths and lease owners; "+
			"set --status-token-file, or --status-allow-anonymous to serve them without a credential", listen)
	}
	return addr, "", nil
}

// loopback reports whether addr listens on the loopback interface only.
func loopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
