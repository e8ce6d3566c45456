// Package catalogs owns building the iceberg-go catalog.Catalog from the
// user's flags and properties, and the wrappers that make one catalog safe to
// share across reactor's concurrent jobs, refreshes, discovery and pages.
// Every command opens its catalog here.
//
// Its parts, and the file implementing each:
//
//   - Config (config.go): the catalog's name, properties, call timeout and
//     the settings that unlock what is unsafe by default; Resolve checks
//     them and fills in what the type implies, so a bad setting is a usage
//     error before anything connects.
//   - JDBC (jdbc.go): SQL catalog URIs as Iceberg Java's JdbcCatalog users
//     write them (jdbc:postgresql://, jdbc:mysql://, jdbc:mariadb://,
//     jdbc:sqlite:) turned into the DSN of the Go driver, and the driver and
//     dialect the URI implies. The PostgreSQL driver (pgx) is linked here.
//   - Types (registry.go): the catalog types iceberg-go registers that
//     reactor links: rest, sql, hive, glue and hadoop.
//   - Opening (open.go): Open for the one-shot commands (fails at once),
//     OpenWaiting for reactor run (a catalog that is down is opened in the
//     background and retried; its calls say why meanwhile).
//   - The shared catalog (catalog.go, deadline.go): every call gets a
//     deadline (Config.Timeout); a call that outlives it returns
//     ErrTimeout. Tables it hands out commit through it.
//   - Flat namespaces (flat.go): Hive and Glue have one level of
//     namespaces; listing a namespace's children answers none instead of
//     iceberg-go's "hierarchical namespace is not supported".
//   - Hive (hive.go, hivepool.go): iceberg-go's hive catalog over reactor's
//     own Metastore client: a small pool of thrift connections, each used by
//     one call at a time, closed on a deadline or a broken stream and
//     redialled by the next call; Hive Metastore 4's missing calls get an
//     error naming the version.
//   - Hadoop (hadoop.go): the Hadoop catalog on a local or mounted file
//     system; on an object store it is refused unless the user accepts the
//     risk, and then its conflicts are reported as unknown outcomes.
//   - REST authentication (rest.go, restauth.go): a bearer token from
//     OAuth2 client credentials (renewed before it expires), a token file
//     (read again when it changes: Kubernetes' projected tokens) or a
//     static token, given to iceberg-go's REST catalog as its
//     AuthManager, and a transport that answers a 401 with one renewal
//     and one resend; SigV4 is left to iceberg-go. No token or secret
//     reaches a log line, an error or the properties tables inherit.
//   - Read only (readonly.go): plan, health and dry runs open the catalog
//     refusing every change.
//   - Metadata cache (metadata_cache.go): each table's last parsed metadata
//     file, kept by its location, off unless Config.MetadataCacheBytes
//     asks for it (measured not to pay: the file says why); the SQL
//     catalog's current location read from its row (MetadataLocation, what
//     the polling safety net asks), so with the cache an unchanged table is
//     answered from memory and a commit's returned metadata is not parsed
//     again (CacheStats).
//   - Many locations at once (locations.go): MetadataLocations reads the
//     current metadata file of many tables in one query per namespace (the
//     polling safety net's tables due in one tick).
//   - Call counts (calls.go): every call to the catalog counted by kind
//     (CallKinds: load, locate, commit, list, other), answered or not
//     (Catalog.CallCounts, exported as reactor_catalog_calls_total).
//   - S3 Tables (s3tables.go): whether the properties reach Amazon S3 Tables
//     (its REST endpoint, or Glue's federated s3tablescatalog), said at
//     start; each table is told by its location's bucket (scope.S3Tables).
//
// It must not touch tables' files: it reads and writes catalog entries only
// through iceberg-go, and decides nothing about jobs (package planner,
// package executor) or commit errors beyond marking what a catalog reports
// (package conflict classifies them).
package catalogs
