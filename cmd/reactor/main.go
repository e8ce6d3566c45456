package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/icereactor/reactor/redact"
)

// command is one subcommand. run returns nil on success, flag.ErrHelp after
// printing help (flag.ErrHelp), a *usageError for bad arguments (exit 2,
// with a hint to -h), an *inputError for bad input they point at (exit 2:
// a thresholds file that does not parse, an unknown table), and any other
// error for a failure at run time (exit 1).
type command struct {
	name    string
	summary string
	run     func(ctx context.Context, args []string, stdout, stderr io.Writer) error
}

// commands is built per call rather than held in a package variable so that
// nothing global is mutable (help refers back to the list).
func commands() []command {
	return []command{
		{"run", "run the worker until SIGINT or SIGTERM", runCmd},
		{"demo", "run a streaming writer against an embedded reactor and check the result", demoCmd},
		{"health", "check one table's health now (exit 1 if unhealthy)", healthCmd},
		{"plan", "show what would be scheduled for a table now, and why", planCmd},
		{"compact", "compact a table's small files now (Spark's rewrite_data_files)", compactCmd},
		{"rewrite-deletes", "merge position-delete files now (Spark's rewrite_position_delete_files)", rewriteDeletesCmd},
		{"convert-equality-deletes", "turn equality deletes into position deletes now, rewriting no data file", convertDeletesCmd},
		{"expire", "expire old snapshots now (Spark's expire_snapshots)", expireCmd},
		{"orphans", "find, and optionally delete, orphan files (Spark's remove_orphan_files)", orphansCmd},
		{"rewrite-manifests", "merge a table's manifests now (Spark's rewrite_manifests)", rewriteManifestsCmd},
		{"validate-config", "check a thresholds file and show a table's effective settings", validateConfigCmd},
		{"write", "append small batches to a table and publish commit events (for trying reactor out)", writeCmd},
		{"version", "print version information", versionCmd},
		{"help", "show help for reactor or one of its commands", helpCmd},
	}
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	go func() {
		// After the first signal, stop capturing: a second Ctrl-C kills the
		// process at once instead of waiting for a slow shutdown.
		<-ctx.Done()
		stop()
	}()
	code := execute(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// execute dispatches args to a subcommand and maps its result to an exit
// code. It is main without the process: tests call it directly.
func execute(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		printUsage(stderr)
		return 2
	}
	name := args[0]
	switch name {
	case "-h", "-help", "--help":
		printUsage(stdout)
		return 0
	case "-v", "-version", "--version":
		name = "version"
	}
	for _, c := range commands() {
		if c.name == name {
			return exitCode(c.name, c.run(ctx, args[1:], stdout, stderr), stderr)
		}
	}
	fmt.Fprintf(stderr, "reactor: unknown command %q\n\n", name)
	printUsage(stderr)
	return 2
}

func exitCode(name string, err error, stderr io.Writer) int {
	var uerr *usageError
	switch {
	case err == nil, errors.Is(err, flag.ErrHelp):
		return 0
	case errors.As(err, &uerr):
		fmt.Fprintf(stderr, "reactor %s: %s\n", name, redact.String(uerr.err.Error()))
		fmt.Fprintf(stderr, "Run 'reactor %s -h' for usage.\n", name)
		return 2
	case errors.As(err, new(*inputError)):
		fmt.Fprintf(stderr, "reactor %s: %s\n", name, redact.String(err.Error()))
		return 2
	default:
		// Whatever the error wraps (a NATS or catalog URL in a library's
		// message), its credentials do not reach the terminal.
		fmt.Fprintf(stderr, "reactor %s: %s\n", name, redact.String(err.Error()))
		return 1
	}
}

func printUsage(w io.Writer) {
	fmt.Fprint(w, "reactor keeps Apache Iceberg tables healthy: it reacts to commit events by\n"+
		"compacting the partitions that collected too many small files.\n\n"+
		"Usage:\n\n\treactor <command> [flags]\n\nCommands:\n\n")
	for _, c := range commands() {
		fmt.Fprintf(w, "\t%-17s %s\n", c.name, c.summary)
	}
	fmt.Fprint(w, "\nRun 'reactor <command> -h' for the flags of a command.\n")
}

func helpCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		printUsage(stdout)
		return nil
	}
	if len(args) > 1 {
		return usageErrorf("help takes at most one command, got %d arguments", len(args))
	}
	for _, c := range commands() {
		if c.name == args[0] && c.name != "help" {
			return c.run(ctx, []string{"-h"}, stdout, stderr)
		}
	}
	if args[0] == "help" {
		printUsage(stdout)
		return nil
	}
	return usageErrorf("unknown command %q", args[0])
}

// usageError marks bad arguments or configuration: the user has to change
// the command line, so the exit code is 2 and the hint points to -h.
type usageError struct{ err error }

func (e *usageError) Error() string { return e.err.Error() }
func (e *usageError) Unwrap() error { return e.err }

func usageErrorf(format string, args ...any) error {
	return &usageError{err: fmt.Errorf(format, args...)}
}

// inputError marks bad input the command line points at: a thresholds
// file that does not parse, a table or partition that does not exist. The
// exit code is 2 as for a usage error, but the flags are right, so there is
// no hint to -h.
type inputError struct{ err error }

func (e *inputError) Error() string { return e.err.Error() }
func (e *inputError) Unwrap() error { return e.err }

func inputErrorf(format string, args ...any) error {
	return &inputError{err: fmt.Errorf(format, args...)}
}

// newFlagSet returns a flag set that prints nothing by itself: parseFlags
// decides where help and errors go.
func newFlagSet(name, synopsis, description string) *flag.FlagSet {
	fs := flag.NewFlagSet("reactor "+name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {
		w := fs.Output()
		fmt.Fprintf(w, "Usage: reactor %s\n\n%s\n\nFlags:\n", synopsis, description)
		fs.PrintDefaults()
	}
	return fs
}

// parseFlags parses args into fs and refuses positional arguments. Help
// goes to stdout (it was asked for); errors come back as *usageError and are
// reported by exitCode.
func parseFlags(fs *flag.FlagSet, args []string, stdout io.Writer) error {
	rest, err := parseFlagsAndArgs(fs, args, stdout)
	if err != nil {
		return err
	}
	if len(rest) > 0 {
		return usageErrorf("unexpected arguments: %s", strings.Join(rest, " "))
	}
	return nil
}

// oneArg is the single positional argument a command takes (what names
// it in the message: TABLE, FILE).
func oneArg(positional []string, what string) (string, error) {
	switch len(positional) {
	case 0:
		return "", usageErrorf("missing %s", what)
	case 1:
		return positional[0], nil
	}
	return "", usageErrorf("want one %s, got %d arguments: %s", what, len(positional), strings.Join(positional, " "))
}

// parseFlagsAndArgs is parseFlags for commands that take positional
// arguments: flags may come before, between and after them (validate-config
// FILE --table db.events), as every command of reactor takes them; an
// argument after "--" is positional whatever it looks like. It returns the
// positional arguments in order.
func parseFlagsAndArgs(fs *flag.FlagSet, args []string, stdout io.Writer) ([]string, error) {
	var positional []string
	for {
		err := fs.Parse(args)
		if errors.Is(err, flag.ErrHelp) {
			fs.SetOutput(stdout)
			fs.Usage()
			fs.SetOutput(io.Discard)
			return nil, flag.ErrHelp
		}
		if err != nil {
			return nil, &usageError{err: err}
		}
		rest := fs.Args()
		if len(rest) == 0 {
			return positional, nil
		}
		if consumed := len(args) - len(rest); consumed > 0 && args[consumed-1] == "--" {
			return append(positional, rest...), nil
		}
		positional = append(positional, rest[0])
		args = rest[1:]
	}
}
