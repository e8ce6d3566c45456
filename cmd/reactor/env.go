package main

import (
	"errors"
	"flag"
	"fmt"
	"strings"

	"github.com/icereactor/reactor/redact"
)

// envPrefix starts the environment variable of every `reactor run` flag:
// --nats-url is REACTOR_NATS_URL. Containers and Kubernetes manifests set
// environment variables more easily than arguments.
const envPrefix = "REACTOR_"

// envName is the environment variable that sets the flag name.
func envName(name string) string {
	return envPrefix + strings.ToUpper(strings.ReplaceAll(name, "-", "_"))
}

// listFlag is implemented by repeatable flags. Their environment variable
// holds a comma-separated list, each element applied as if the flag had
// been given once with it.
type listFlag interface {
	flag.Value
	isList()
}

// sensitiveFlag is implemented by flags whose values may carry secrets:
// errors about them must not echo the value.
type sensitiveFlag interface {
	sensitive() bool
}

// annotateEnv appends the environment variable to each flag's help text, so
// -h documents both ways of setting it.
func annotateEnv(fs *flag.FlagSet) {
	fs.VisitAll(func(f *flag.Flag) {
		f.Usage += " (env " + envName(f.Name) + ")"
	})
}

// applyEnv gives every flag of the parsed fs that was not on the command line
// the value of its environment variable, looked up with getenv. Precedence
// is therefore flag, then environment, then the flag's default. An empty
// variable counts as unset, as it does for most container tooling.
func applyEnv(fs *flag.FlagSet, getenv func(string) string) error {
	onCommandLine := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { onCommandLine[f.Name] = true })
	var errs []error
	fs.VisitAll(func(f *flag.Flag) {
		if onCommandLine[f.Name] {
			return
		}
		name := envName(f.Name)
		raw := getenv(name)
		if raw == "" {
			return
		}
		values := []string{raw}
		if _, ok := f.Value.(listFlag); ok {
			values = splitList(raw)
		}
		for _, v := range values {
			if err := fs.Set(f.Name, v); err != nil {
				if s, ok := f.Value.(sensitiveFlag); ok && s.sensitive() {
					errs = append(errs, fmt.Errorf("invalid value in %s: %w", name, err))
				} else {
					errs = append(errs, fmt.Errorf("invalid value %q for %s: %w", v, name, err))
				}
			}
		}
	})
	return errors.Join(errs...)
}

// splitList splits a comma-separated environment value, dropping empty
// elements and surrounding blanks.
func splitList(s string) []string {
	var out []string
	for part := range strings.SplitSeq(s, ",") {
		if part = strings.TrimSpace(part); part != "" {
			out = append(out, part)
		}
	}
	return out
}

// propsFlag is the repeatable --catalog-prop key=value flag. Order is kept
// so that a later value for a key wins, like a later flag does.
type propsFlag struct {
	keys   []string
	values map[string]string
}

func (p *propsFlag) isList()         {}
func (p *propsFlag) sensitive() bool { return true }

func (p *propsFlag) String() string {
	if p == nil || len(p.keys) == 0 {
		return ""
	}
	parts := make([]string, len(p.keys))
	for i, k := range p.keys {
		parts[i] = k + "=" + redact.Value(k, p.values[k])
	}
	return strings.Join(parts, ",")
}

// Set adds one key=value pair. The error never contains the value: it may
// be a credential.
func (p *propsFlag) Set(s string) error {
	k, v, ok := strings.Cut(s, "=")
	k = strings.TrimSpace(k)
	if !ok || k == "" {
		return errors.New("want key=value")
	}
	if p.values == nil {
		p.values = map[string]string{}
	}
	if _, seen := p.values[k]; !seen {
		p.keys = append(p.keys, k)
	}
	p.values[k] = v
	return nil
}
