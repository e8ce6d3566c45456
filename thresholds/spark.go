package thresholds

import (
	"fmt"
	"net/url"
	"path"
	"slices"
	"strings"
	"time"

	"github.com/icereactor/reactor/jobkind"
	"github.com/icereactor/reactor/redact"
)

// Spark offload defaults.
const (
	DefaultSparkConcurrency      = 1
	DefaultSparkTimeout          = 2 * time.Hour
	DefaultSparkInterruptGrace   = time.Minute
	DefaultSparkConnectTimeout   = 30 * time.Second
	SparkOnFailureRetry          = "retry"
	SparkOnFailureLocal          = "local"
	DefaultSparkOnFailure        = SparkOnFailureRetry
	sparkEndpointScheme          = "sc"
	sparkTokenParameter          = "token"
	sparkEndpointReservedWarning = "put the token in token_file or token_env, not in the endpoint (a ConfigMap is not a secret)"
)

// sparkKindNames are the values spark.rules[].kinds accepts: the kinds a
// Spark procedure can run (jobkind.Spark). delete_expired_files has no
// Spark form: Spark's expire_snapshots deletes at once.
func sparkKindNames() []string {
	var out []string
	for _, k := range jobkind.Spark() {
		out = append(out, k.String())
	}
	return out
}

// Spark is the spark section: which jobs reactor hands to a Spark cluster
// through Spark Connect, and how it reaches it. Absent, or with no rules,
// every job runs in reactor.
type Spark struct {
	// Endpoint is the Spark Connect connection string,
	// sc://host[:port][/;user_id=NAME;use_ssl=true]. Required with rules.
	// It must not carry a token: see TokenFile and TokenEnv.
	Endpoint *string `yaml:"endpoint"`
	// TokenFile is a file holding the bearer token (a mounted Kubernetes
	// secret), read at every connection so a rotated token is used.
	TokenFile *string `yaml:"token_file"`
	// TokenEnv names an environment variable holding the bearer token.
	TokenEnv *string `yaml:"token_env"`
	// Catalog is the Spark catalog name of reactor's catalog
	// (spark.sql.catalog.<name> on the Spark side). Default: the name
	// reactor's own catalog has (--catalog-name).
	Catalog *string `yaml:"catalog"`
	// Concurrency bounds the Spark jobs running at once; they do not take
	// reactor's own job slots. Default 1; >= 1.
	Concurrency *int `yaml:"concurrency"`
	// Timeout bounds one Spark job; a job still running then is
	// interrupted through Spark Connect before its table is given to any
	// other job. Default 2h; > 0.
	Timeout *Duration `yaml:"timeout"`
	// InterruptGrace is how long reactor waits, after interrupting, for
	// Spark to confirm the operation ended. Default 1m; > 0.
	InterruptGrace *Duration `yaml:"interrupt_grace"`
	// ConnectTimeout bounds reaching the server before a statement is
	// sent. Default 30s; > 0.
	ConnectTimeout *Duration `yaml:"connect_timeout"`
	// OnFailure is what happens to a job Spark could not run (unreachable
	// before the statement was sent, or the statement failed there):
	// retry (the default: the job fails and is retried on Spark after the
	// usual cool-down) or local (reactor runs it itself at once, when it is
	// no larger than LocalMaxInputBytes and LocalMaxInputFiles; larger ones
	// are retried). A job whose end on Spark is not confirmed (connection
	// lost mid-statement, timeout) is never run locally: it is retried.
	OnFailure *string `yaml:"on_failure"`
	// LocalMaxInputBytes and LocalMaxInputFiles are the largest job
	// reactor may run itself when on_failure is local (0: no bound on that
	// measure). on_failure local needs at least one.
	LocalMaxInputBytes *Size `yaml:"local_max_input_bytes"`
	LocalMaxInputFiles *int  `yaml:"local_max_input_files"`
	// Rules say which jobs go to Spark: a job goes when any rule matches
	// it. No rule (the default): none.
	Rules []SparkRule `yaml:"rules"`
}

// SparkRule selects jobs for Spark. Every condition it sets must hold.
type SparkRule struct {
	// Match is a "namespace.table" name or glob as in tables[].match;
	// empty matches every table.
	Match string `yaml:"match"`
	// Kinds are job kinds a Spark procedure can run (jobkind.Spark);
	// empty: every kind Spark can run.
	Kinds []string `yaml:"kinds"`
	// MinInputBytes and MinInputFiles: the job's input (the data and
	// delete files of its partitions as the planner counts them; for
	// table-wide kinds, the whole table's) reaches this many bytes, files.
	MinInputBytes *Size `yaml:"min_input_bytes"`
	MinInputFiles *int  `yaml:"min_input_files"`
}

// SparkSettings is the spark section resolved: every default applied.
type SparkSettings struct {
	Enabled            bool          `json:"enabled"`
	Endpoint           string        `json:"endpoint,omitempty"`
	TokenFile          string        `json:"token_file,omitempty"`
	TokenEnv           string        `json:"token_env,omitempty"`
	Catalog            string        `json:"catalog,omitempty"`
	Concurrency        int           `json:"concurrency"`
	Timeout            time.Duration `json:"timeout"`
	InterruptGrace     time.Duration `json:"interrupt_grace"`
	ConnectTimeout     time.Duration `json:"connect_timeout"`
	OnFailure          string        `json:"on_failure"`
	LocalMaxInputBytes int64         `json:"local_max_input_bytes,omitempty"`
	LocalMaxInputFiles int           `json:"local_max_input_files,omitempty"`
	Rules              []SparkRule   `json:"rules,omitempty"`
}

// SparkSettings resolves the spark section. Enabled is true when it has at
// least one rule. Catalog is "" when the document leaves it to the caller.
func (c *Config) SparkSettings() SparkSettings {
	s := SparkSettings{
		Concurrency:    DefaultSparkConcurrency,
		Timeout:        DefaultSparkTimeout,
		InterruptGrace: DefaultSparkInterruptGrace,
		ConnectTimeout: DefaultSparkConnectTimeout,
		OnFailure:      DefaultSparkOnFailure,
	}
	if c == nil || c.Spark == nil {
		return s
	}
	sp := c.Spark
	s.Enabled = len(sp.Rules) > 0
	s.Rules = slices.Clone(sp.Rules)
	set(&s.Endpoint, sp.Endpoint)
	set(&s.TokenFile, sp.TokenFile)
	set(&s.TokenEnv, sp.TokenEnv)
	set(&s.Catalog, sp.Catalog)
	set(&s.Concurrency, sp.Concurrency)
	set(&s.OnFailure, sp.OnFailure)
	set(&s.LocalMaxInputFiles, sp.LocalMaxInputFiles)
	if sp.LocalMaxInputBytes != nil {
		s.LocalMaxInputBytes = int64(*sp.LocalMaxInputBytes)
	}
	for _, d := range []struct {
		dst *time.Duration
		src *Duration
	}{{&s.Timeout, sp.Timeout}, {&s.InterruptGrace, sp.InterruptGrace}, {&s.ConnectTimeout, sp.ConnectTimeout}} {
		if d.src != nil {
			*d.dst = time.Duration(*d.src)
		}
	}
	return s
}

func set[T any](dst *T, src *T) {
	if src != nil {
		*dst = *src
	}
}

// SparkMatch is the rule a job matched, or why none did.
type SparkMatch struct {
	// Rule is the index of the first matching rule, -1 for none.
	Rule int
	// Why explains the decision in one line.
	Why string
}

// Match returns the first rule selecting a job of kind on table with the
// given input, and why; Rule is -1 when the job stays in reactor.
func (s SparkSettings) Match(table string, kind jobkind.Kind, inputBytes int64, inputFiles int) SparkMatch {
	if !s.Enabled {
		return SparkMatch{Rule: -1, Why: "no spark rules"}
	}
	if !kind.Spark() {
		return SparkMatch{Rule: -1, Why: fmt.Sprintf("%s has no Spark procedure", kind)}
	}
	var misses []string
	for i, r := range s.Rules {
		if miss := r.miss(table, kind, inputBytes, inputFiles); miss != "" {
			misses = append(misses, fmt.Sprintf("rules[%d]: %s", i, miss))
			continue
		}
		return SparkMatch{Rule: i, Why: fmt.Sprintf("rules[%d] matches: %s", i, r.describe(inputBytes, inputFiles))}
	}
	return SparkMatch{Rule: -1, Why: "no rule matches (" + strings.Join(misses, "; ") + ")"}
}

// miss says which condition of r the job fails, or "" when r selects it.
func (r SparkRule) miss(table string, kind jobkind.Kind, inputBytes int64, inputFiles int) string {
	if r.Match != "" {
		if ok, err := path.Match(r.Match, table); err != nil || !ok {
			return fmt.Sprintf("table %s does not match %q", table, r.Match)
		}
	}
	if len(r.Kinds) > 0 && !slices.Contains(r.Kinds, kind.String()) {
		return fmt.Sprintf("kind %s not in %v", kind, r.Kinds)
	}
	if r.MinInputBytes != nil && inputBytes < int64(*r.MinInputBytes) {
		return fmt.Sprintf("input %s < min_input_bytes %s", Size(inputBytes), *r.MinInputBytes)
	}
	if r.MinInputFiles != nil && inputFiles < *r.MinInputFiles {
		return fmt.Sprintf("input %d files < min_input_files %d", inputFiles, *r.MinInputFiles)
	}
	return ""
}

func (r SparkRule) describe(inputBytes int64, inputFiles int) string {
	var parts []string
	if r.Match != "" {
		parts = append(parts, fmt.Sprintf("table matches %q", r.Match))
	}
	if len(r.Kinds) > 0 {
		parts = append(parts, fmt.Sprintf("kind in %v", r.Kinds))
	}
	if r.MinInputBytes != nil {
		parts = append(parts, fmt.Sprintf("input %s >= %s", Size(inputBytes), *r.MinInputBytes))
	}
	if r.MinInputFiles != nil {
		parts = append(parts, fmt.Sprintf("input %d files >= %d", inputFiles, *r.MinInputFiles))
	}
	if len(parts) == 0 {
		return "every job"
	}
	return strings.Join(parts, ", ")
}

// AllowedLocally reports whether a job of this input may run in reactor
// after Spark failed it (on_failure local), and why.
func (s SparkSettings) AllowedLocally(inputBytes int64, inputFiles int) (bool, string) {
	if s.OnFailure != SparkOnFailureLocal {
		return false, "on_failure is " + s.OnFailure
	}
	if s.LocalMaxInputBytes > 0 && inputBytes > s.LocalMaxInputBytes {
		return false, fmt.Sprintf("input %s > local_max_input_bytes %s", Size(inputBytes), Size(s.LocalMaxInputBytes))
	}
	if s.LocalMaxInputFiles > 0 && inputFiles > s.LocalMaxInputFiles {
		return false, fmt.Sprintf("input %d files > local_max_input_files %d", inputFiles, s.LocalMaxInputFiles)
	}
	return true, "on_failure local and the job is within local_max_input_bytes/local_max_input_files"
}

// validateSpark checks the spark section.
func (c *Config) validateSpark(add func(path string, value any, reason string, args ...any)) {
	sp := c.Spark
	if sp == nil {
		return
	}
	const p = "spark"
	switch {
	case sp.Endpoint == nil || *sp.Endpoint == "":
		if len(sp.Rules) > 0 {
			add(p+".endpoint", nil, "is required when spark.rules are set (sc://host:port)")
		}
	default:
		if msg := checkSparkEndpoint(*sp.Endpoint); msg != "" {
			// The value may hold a credential: never echo it unmasked.
			add(p+".endpoint", redact.String(*sp.Endpoint), "%s", msg)
		}
	}
	if sp.TokenFile != nil && sp.TokenEnv != nil {
		add(p+".token_env", *sp.TokenEnv, "set token_file or token_env, not both")
	}
	if v := sp.TokenFile; v != nil && *v == "" {
		add(p+".token_file", *v, "must not be empty")
	}
	if v := sp.TokenEnv; v != nil && (*v == "" || strings.ContainsAny(*v, "= \t")) {
		add(p+".token_env", *v, "must be an environment variable name")
	}
	if v := sp.Catalog; v != nil && strings.TrimSpace(*v) == "" {
		add(p+".catalog", *v, "must not be empty (omit it to use reactor's catalog name)")
	}
	if v := sp.Concurrency; v != nil && *v < 1 {
		add(p+".concurrency", *v, "must be >= 1")
	}
	for _, d := range []struct {
		name string
		v    *Duration
	}{{"timeout", sp.Timeout}, {"interrupt_grace", sp.InterruptGrace}, {"connect_timeout", sp.ConnectTimeout}} {
		if d.v != nil && *d.v <= 0 {
			add(p+"."+d.name, *d.v, "must be > 0")
		}
	}
	if v := sp.LocalMaxInputBytes; v != nil && *v < 0 {
		add(p+".local_max_input_bytes", *v, "must not be negative")
	}
	if v := sp.LocalMaxInputFiles; v != nil && *v < 0 {
		add(p+".local_max_input_files", *v, "must not be negative")
	}
	if v := sp.OnFailure; v != nil {
		switch *v {
		case SparkOnFailureRetry:
		case SparkOnFailureLocal:
			positive := func(s *Size, n *int) bool { return (s != nil && *s > 0) || (n != nil && *n > 0) }
			if !positive(sp.LocalMaxInputBytes, sp.LocalMaxInputFiles) {
				add(p+".on_failure", *v, "local needs local_max_input_bytes or local_max_input_files: the largest job reactor may run itself")
			}
		default:
			add(p+".on_failure", *v, "must be retry or local")
		}
	}
	kinds := sparkKindNames()
	for i, r := range sp.Rules {
		rp := fmt.Sprintf("%s.rules[%d]", p, i)
		if r.Match != "" && !validPattern(r.Match) {
			add(rp+".match", r.Match, "invalid glob pattern (see Go's path.Match)")
		}
		for j, k := range r.Kinds {
			if !slices.Contains(kinds, k) {
				add(fmt.Sprintf("%s.kinds[%d]", rp, j), k, "must be one of %s (delete_expired_files has no Spark procedure)", strings.Join(kinds, ", "))
			}
		}
		if v := r.MinInputBytes; v != nil && *v < 0 {
			add(rp+".min_input_bytes", *v, "must not be negative")
		}
		if v := r.MinInputFiles; v != nil && *v < 0 {
			add(rp+".min_input_files", *v, "must not be negative")
		}
	}
}

// checkSparkEndpoint returns what is wrong with a Spark Connect
// connection string, or "".
func checkSparkEndpoint(s string) string {
	u, err := url.Parse(s)
	if err != nil {
		return "must be a Spark Connect URL sc://host[:port][/;param=value...]"
	}
	switch {
	case u.Scheme != sparkEndpointScheme:
		return "must be a Spark Connect URL sc://host[:port][/;param=value...] (scheme sc)"
	case u.Hostname() == "":
		return "must name a host (sc://host:port)"
	case u.User != nil:
		return "must not carry user information; " + sparkEndpointReservedWarning
	case u.Path != "" && !strings.HasPrefix(u.Path, "/;"):
		return "parameters follow the host as /;name=value;name=value"
	case u.RawQuery != "":
		return "parameters follow the host as /;name=value, not a query string"
	}
	if u.Port() != "" {
		var port int
		if _, err := fmt.Sscanf(u.Port(), "%d", &port); err != nil || port < 1 || port > 65535 {
			return "port must be between 1 and 65535"
		}
	}
	for _, kv := range strings.Split(strings.TrimPrefix(u.Path, "/"), ";") {
		if kv == "" {
			continue
		}
		name, _, ok := strings.Cut(kv, "=")
		if !ok {
			return fmt.Sprintf("parameter %q must be name=value", name)
		}
		if name == sparkTokenParameter || redact.SecretName(name) {
			return "must not carry a token; " + sparkEndpointReservedWarning
		}
	}
	return ""
}
