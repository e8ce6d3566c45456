package main

import (
	"flag"
	"net"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/icereactor/reactor/sizelimit"
	"github.com/icereactor/reactor/thresholds"
	"github.com/icereactor/reactor/triggers"
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

// natsFlags are the NATS credentials and TLS flags `reactor run` and
// `reactor write` share.
type natsFlags struct {
	creds, nkey, ca, cert, key *string
}

func addNATSFlags(fs *flag.FlagSet) *natsFlags {
	return &natsFlags{
		creds: fs.String("nats-creds", "", "NATS credentials `file` (JWT and NKey seed), for a server that requires them"),
		nkey:  fs.String("nats-nkey", "", "`file` holding an nkey seed (SU...) the NATS server knows this user's public key by; not with --nats-creds"),
		ca:    fs.String("nats-tls-ca", "", "PEM `file` of the CA the NATS server's certificate must chain to (instead of the system's roots); turns TLS on"),
		cert:  fs.String("nats-tls-cert", "", "PEM client certificate `file` for a NATS server that verifies its clients (with --nats-tls-key); turns TLS on"),
		key:   fs.String("nats-tls-key", "", "PEM `file` of the client certificate's key"),
	}
}

// resolve checks the files and returns the settings; natsURL is the
// --nats-url (empty: the embedded server, which takes none of them).
func (n *natsFlags) resolve(natsURL string) (worker.NATSSecurity, error) {
	sec := worker.NATSSecurity{CredsFile: strings.TrimSpace(*n.creds), NKeyFile: strings.TrimSpace(*n.nkey),
		CAFile: strings.TrimSpace(*n.ca), CertFile: strings.TrimSpace(*n.cert), KeyFile: strings.TrimSpace(*n.key)}
	if sec == (worker.NATSSecurity{}) {
		return sec, nil
	}
	if natsURL == "" {
		return sec, usageErrorf("--nats-creds, --nats-nkey and --nats-tls-* need --nats-url: the embedded server takes none of them")
	}
	if err := sec.Check(); err != nil {
		return sec, usageErrorf("NATS credentials or TLS: %w", err)
	}
	return sec, nil
}

// streamFlags are `reactor run`'s limits on the NATS streams it creates,
// and how long an unknown table name is remembered.
type streamFlags struct {
	maxBytes, dlMaxBytes *string
	maxMsgs              *int64
	maxAge, dlMaxAge     *time.Duration
	discard              *string
	unknownTTL           *time.Duration
}

func addStreamFlags(fs *flag.FlagSet) *streamFlags {
	ev, dl := triggers.DefaultEventLimits, triggers.DefaultDeadLetterLimits
	return &streamFlags{
		maxBytes: fs.String("stream-max-bytes", thresholds.Size(ev.MaxBytes).String(),
			"the most each event stream (commits, notifications, shards) stores (`size`: 512MiB, 2GiB)"),
		maxMsgs: fs.Int64("stream-max-messages", ev.MaxMsgs, "the most `messages` each event stream stores"),
		maxAge:  fs.Duration("stream-max-age", ev.MaxAge, "events older than this are dropped from the event streams"),
		discard: fs.String("stream-discard", "new",
			"what a full event stream does: new (NATS refuses what is published; nothing stored is lost) or old (drops its oldest events)"),
		dlMaxBytes: fs.String("dead-letter-max-bytes", thresholds.Size(dl.MaxBytes).String(),
			"the most the dead-letter stream stores (`size`); its oldest dead letters go first"),
		dlMaxAge: fs.Duration("dead-letter-max-age", dl.MaxAge, "dead letters older than this are dropped"),
		unknownTTL: fs.Duration("unknown-table-ttl", triggers.DefaultUnknownTableTTL,
			"how long a table name the catalog did not know is answered from memory (its events dead-lettered without asking again); 0 always asks"),
	}
}

// resolve sets the limits on the commit and notification options.
func (s *streamFlags) resolve(commits *triggers.CommitOptions, notifications *triggers.NotificationOptions) error {
	size := func(flagName, v string) (int64, error) {
		n, err := thresholds.ParseSize(v)
		if err != nil || n <= 0 {
			return 0, usageErrorf("--%s must be a positive size such as 512MiB, got %q", flagName, v)
		}
		return n.Bytes(), nil
	}
	maxBytes, err := size("stream-max-bytes", *s.maxBytes)
	if err != nil {
		return err
	}
	dlBytes, err := size("dead-letter-max-bytes", *s.dlMaxBytes)
	if err != nil {
		return err
	}
	switch {
	case *s.maxMsgs <= 0:
		return usageErrorf("--stream-max-messages must be positive, got %d", *s.maxMsgs)
	case *s.maxAge <= 0 || *s.dlMaxAge <= 0:
		return usageErrorf("--stream-max-age and --dead-letter-max-age must be positive")
	case *s.unknownTTL < 0:
		return usageErrorf("--unknown-table-ttl must not be negative, got %s", *s.unknownTTL)
	}
	var discard jetstream.DiscardPolicy
	switch strings.ToLower(strings.TrimSpace(*s.discard)) {
	case "new":
		discard = jetstream.DiscardNew
	case "old":
		discard = jetstream.DiscardOld
	default:
		return usageErrorf("--stream-discard must be new or old, got %q", *s.discard)
	}
	ev := triggers.StreamLimits{MaxBytes: maxBytes, MaxMsgs: *s.maxMsgs, MaxAge: *s.maxAge}.WithDiscard(discard)
	commits.Limits, notifications.Limits = ev, ev
	commits.DeadLetterLimits = triggers.StreamLimits{MaxBytes: dlBytes, MaxAge: *s.dlMaxAge}
	commits.UnknownTableTTL = *s.unknownTTL
	if commits.UnknownTableTTL == 0 {
		commits.UnknownTableTTL = -1 // always ask
	}
	return nil
}

// sizeLimitFlags are the limits on a table file read, shared by every
// command that opens a catalog (catalogFlags): they become catalog
// properties the FileIOs read (package sizelimit).
type sizeLimitFlags struct {
	metadata, manifestList, manifest, footer *string
}

func addSizeLimitFlags(fs *flag.FlagSet) *sizeLimitFlags {
	size := func(n int64) string { return thresholds.Size(n).String() }
	return &sizeLimitFlags{
		metadata: fs.String("max-metadata-bytes", size(sizelimit.DefaultMetadataJSON),
			"the largest metadata.json reactor reads (`size`; compressed ones by what they decompress to); a larger one fails its read, naming the file; 0: no limit"),
		manifestList: fs.String("max-manifest-list-bytes", size(sizelimit.DefaultManifestList), "the largest manifest list reactor reads (`size`; 0: no limit)"),
		manifest:     fs.String("max-manifest-bytes", size(sizelimit.DefaultManifest), "the largest manifest reactor reads (`size`; 0: no limit)"),
		footer:       fs.String("max-parquet-footer-bytes", size(sizelimit.DefaultParquetFooter), "the largest Parquet footer reactor reads (`size`; 0: no limit)"),
	}
}

// apply sets the limits as catalog properties; one given with
// --catalog-prop is kept.
func (s *sizeLimitFlags) apply(props map[string]string) error {
	for _, f := range []struct {
		flag, prop string
		v          *string
	}{{"max-metadata-bytes", sizelimit.MetadataJSONProperty, s.metadata}, {"max-manifest-list-bytes", sizelimit.ManifestListProperty, s.manifestList},
		{"max-manifest-bytes", sizelimit.ManifestProperty, s.manifest}, {"max-parquet-footer-bytes", sizelimit.ParquetFooterProperty, s.footer}} {
		n, err := thresholds.ParseSize(*f.v)
		if err != nil {
			return usageErrorf("--%s must be a size such as 256MiB (0: no limit), got %q", f.flag, *f.v)
		}
		if _, set := props[f.prop]; !set {
			props[f.prop] = strconv.FormatInt(n.Bytes(), 10)
		}
	}
	return nil
}
