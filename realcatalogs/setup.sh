# Sourced by realcatalogs/run: installs the real catalog servers into a
# cache outside the repository (once per version; later runs reuse them
# after checking them), the Spark side through interop/setup.sh, and builds
# reactor and the scenarios from this tree.
#
#   REACTOR_CATALOGS_CACHE   cache directory (default ~/.cache/reactor-catalogs)
#
# What comes from where, pinned:
#
# * Hive Metastore 3.1.3, standalone, on Derby: the -bin.tar.gz of
#   org.apache.hive:hive-standalone-metastore:3.1.3 from Maven Central
#   (its lib/ and the schema tool's SQL scripts; checked against the sha256
#   below), plus hadoop-common, hadoop-mapreduce-client-core and hadoop-hdfs
#   3.3.6 and derby 10.14.2.0 (the tarball's derby 10.10 is left out),
#   resolved by Maven from a pom generated into the cache. The schema is
#   made once by the schema tool into a template Derby database in the
#   cache (autoCreateAll would not make the lock tables); each run copies
#   it.
# * PostgreSQL and MariaDB: Debian's packages (postgresql, mariadb-server),
#   installed with apt-get when their binaries are missing. A template data
#   directory of each is made once in the cache (initdb,
#   mariadb-install-db); each run copies it and starts the server on a
#   loopback port as its own process.
# * moto (PyPI moto[server]), the stand-in for AWS Glue, in a venv in the
#   cache.
# * Spark 4.1 with Iceberg 1.12's runtime: interop/setup.sh's pyspark and
#   jars (the interop cache), plus the PostgreSQL and MariaDB JDBC drivers
#   from Maven Central (checked against Maven's .sha1).

REALCATALOGS_HMS_VERSION=3.1.3
REALCATALOGS_HMS_SHA256=83ddf76717eeb789091d845c069a631c25cad561c3d31ec0843a1ddf21f29409
REALCATALOGS_HADOOP_VERSION=3.3.6
REALCATALOGS_DERBY_VERSION=10.14.2.0
REALCATALOGS_PG_JDBC_VERSION=42.7.4
REALCATALOGS_MARIADB_JDBC_VERSION=3.5.1
REALCATALOGS_MOTO_VERSION=5.2.6
REALCATALOGS_MAVEN=${REALCATALOGS_MAVEN:-https://repo1.maven.org/maven2}

realcatalogs_die() { echo "realcatalogs: $*" >&2; exit 1; }

# realcatalogs_sudo: sudo when not root and sudo exists.
realcatalogs_sudo() {
  if [ "$(id -u)" != 0 ] && command -v sudo >/dev/null 2>&1; then sudo "$@"; else "$@"; fi
}

# realcatalogs_apt PACKAGE...: installs Debian packages.
realcatalogs_apt() {
  echo "realcatalogs: installing $* from Debian's packages" >&2
  realcatalogs_sudo apt-get update -qq >&2 &&
    DEBIAN_FRONTEND=noninteractive realcatalogs_sudo apt-get install -y -qq --no-install-recommends "$@" >&2 ||
    realcatalogs_die "apt-get install $* failed"
}

# realcatalogs_fetch URL DEST: downloads once, checked against Maven's .sha1.
realcatalogs_fetch() {
  local url=$1 dest=$2
  [ -s "$dest" ] && return 0
  echo "realcatalogs: fetching $url" >&2
  curl -fsSL --retry 3 -o "$dest.part" "$url" || realcatalogs_die "download failed: $url"
  local want got
  want=$(curl -fsSL --retry 3 "$url.sha1" | awk '{print $1}') || realcatalogs_die "no checksum: $url.sha1"
  got=$(sha1sum "$dest.part" | awk '{print $1}')
  [ "$want" = "$got" ] || { rm -f "$dest.part"; realcatalogs_die "checksum mismatch for $url: want $want, got $got"; }
  mv "$dest.part" "$dest"
}

# realcatalogs_hms CACHE: the Hive Metastore's files, its classpath and a
# template Derby database with the schema; prints the install directory.
realcatalogs_hms() {
  local cache=$1 v=$REALCATALOGS_HMS_VERSION
  local dir="$cache/hms-$v"
  if [ -f "$dir/.installed" ]; then
    echo "$dir"
    return 0
  fi
  rm -rf "$dir"
  mkdir -p "$dir"
  local url="$REALCATALOGS_MAVEN/org/apache/hive/hive-standalone-metastore/$v/hive-standalone-metastore-$v-bin.tar.gz"
  local tgz="$cache/hive-standalone-metastore-$v-bin.tar.gz"
  if ! [ -s "$tgz" ] || [ "$(sha256sum "$tgz" | awk '{print $1}')" != "$REALCATALOGS_HMS_SHA256" ]; then
    echo "realcatalogs: fetching $url" >&2
    curl -fsSL --retry 3 -o "$tgz.part" "$url" || realcatalogs_die "download failed: $url"
    [ "$(sha256sum "$tgz.part" | awk '{print $1}')" = "$REALCATALOGS_HMS_SHA256" ] ||
      { rm -f "$tgz.part"; realcatalogs_die "checksum mismatch for $url"; }
    mv "$tgz.part" "$tgz"
  fi
  tar xzf "$tgz" -C "$dir" --strip-components=1 || realcatalogs_die "cannot unpack $tgz"
  rm -f "$dir"/lib/derby-*.jar
  cat >"$dir/deps-pom.xml" <<EOF
<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>reactor.realcatalogs</groupId>
  <artifactId>hms-classpath</artifactId>
  <version>1</version>
  <dependencies>
    <dependency><groupId>org.apache.hadoop</groupId><artifactId>hadoop-common</artifactId><version>$REALCATALOGS_HADOOP_VERSION</version></dependency>
    <dependency><groupId>org.apache.hadoop</groupId><artifactId>hadoop-mapreduce-client-core</artifactId><version>$REALCATALOGS_HADOOP_VERSION</version></dependency>
    <dependency><groupId>org.apache.hadoop</groupId><artifactId>hadoop-hdfs</artifactId><version>$REALCATALOGS_HADOOP_VERSION</version></dependency>
    <dependency><groupId>org.apache.derby</groupId><artifactId>derby</artifactId><version>$REALCATALOGS_DERBY_VERSION</version></dependency>
  </dependencies>
</project>
EOF
  echo "realcatalogs: resolving the Hive Metastore's Hadoop and Derby jars with Maven (about 75 MB, once)" >&2
  (cd "$dir" && mvn -q -B -Dstyle.color=never -f deps-pom.xml dependency:copy-dependencies \
    -DoutputDirectory="$dir/deps" -DincludeScope=runtime >&2) || realcatalogs_die "mvn could not resolve the Hive Metastore's classpath"
  # One SLF4J binding: the tarball's log4j one.
  rm -f "$dir"/deps/slf4j-log4j12-*.jar "$dir"/deps/slf4j-reload4j-*.jar "$dir"/deps/reload4j-*.jar
  mkdir -p "$dir/schema-conf"
  cat >"$dir/schema-conf/metastore-site.xml" <<EOF
<configuration>
  <property><name>javax.jdo.option.ConnectionURL</name><value>jdbc:derby:;databaseName=$dir/derby-template;create=true</value></property>
  <property><name>javax.jdo.option.ConnectionDriverName</name><value>org.apache.derby.jdbc.EmbeddedDriver</value></property>
</configuration>
EOF
  echo "realcatalogs: making the Hive Metastore schema with its schema tool (about a minute, once)" >&2
  METASTORE_HOME="$dir" java -Dderby.stream.error.file="$dir/derby.log" -cp "$dir/schema-conf:$dir/lib/*:$dir/deps/*" \
    org.apache.hadoop.hive.metastore.tools.MetastoreSchemaTool -dbType derby -initSchema >"$dir/schematool.log" 2>&1 ||
    { tail -20 "$dir/schematool.log" >&2; realcatalogs_die "the schema tool failed (log: $dir/schematool.log)"; }
  grep -q "schemaTool completed" "$dir/schematool.log" || realcatalogs_die "the schema tool did not complete (log: $dir/schematool.log)"
  touch "$dir/.installed"
  echo "$dir"
}

# realcatalogs_postgres CACHE: prints PostgreSQL's bin directory, installing
# Debian's package when missing, with a template data directory in the
# cache (superuser ice, trust on loopback).
realcatalogs_postgres() {
  local cache=$1 bin
  bin=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)
  if [ -z "$bin" ] || ! [ -x "$bin/initdb" ]; then
    realcatalogs_apt postgresql
    bin=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)
  fi
  [ -x "$bin/initdb" ] || realcatalogs_die "no initdb after installing postgresql"
  local tmpl="$cache/pg-template-$(basename "$(dirname "$bin")")"
  if ! [ -f "$tmpl/.installed" ]; then
    rm -rf "$tmpl"
    # initdb refuses to run as root: the package's postgres user does, in
    # a directory it can reach (the cache may be under root's home); the
    # result is copied into the cache with its owner.
    local tmp
    tmp=$(mktemp -d "${TMPDIR:-/tmp}/reactor-pg-template.XXXXXX")
    chmod 755 "$tmp"
    if [ "$(id -u)" = 0 ]; then
      chown postgres "$tmp"
      runuser -u postgres -- "$bin/initdb" -D "$tmp/data" -U ice -A trust --no-sync >"$cache/pg-initdb.log" 2>&1
    else
      "$bin/initdb" -D "$tmp/data" -U ice -A trust --no-sync >"$cache/pg-initdb.log" 2>&1
    fi || { tail -20 "$cache/pg-initdb.log" >&2; rm -rf "$tmp"; realcatalogs_die "initdb failed"; }
    mkdir -p "$tmpl"
    cp -a "$tmp/data" "$tmpl/data" || realcatalogs_die "cannot copy the PostgreSQL template into $tmpl"
    rm -rf "$tmp"
    touch "$tmpl/.installed"
  fi
  echo "$bin $tmpl/data"
}

# realcatalogs_mariadb CACHE: prints mariadbd's path and a template data
# directory, installing Debian's package when missing.
realcatalogs_mariadb() {
  local cache=$1
  if ! command -v mariadbd >/dev/null 2>&1 && ! [ -x /usr/sbin/mariadbd ]; then
    realcatalogs_apt mariadb-server
  fi
  local mariadbd
  mariadbd=$(command -v mariadbd || echo /usr/sbin/mariadbd)
  [ -x "$mariadbd" ] || realcatalogs_die "no mariadbd after installing mariadb-server"
  local tmpl="$cache/mariadb-template"
  if ! [ -f "$tmpl/.installed" ]; then
    rm -rf "$tmpl"
    # Made where the mysql user can reach it, then copied with its owner.
    local tmp user=()
    tmp=$(mktemp -d "${TMPDIR:-/tmp}/reactor-mariadb-template.XXXXXX")
    chmod 755 "$tmp"
    mkdir -p "$tmp/data"
    if [ "$(id -u)" = 0 ]; then
      chown -R mysql "$tmp"
      user=(--user=mysql)
    fi
    mariadb-install-db --no-defaults --datadir="$tmp/data" --auth-root-authentication-method=normal \
      --skip-test-db "${user[@]}" >"$cache/mariadb-install-db.log" 2>&1 ||
      { tail -20 "$cache/mariadb-install-db.log" >&2; rm -rf "$tmp"; realcatalogs_die "mariadb-install-db failed"; }
    mkdir -p "$tmpl"
    cp -a "$tmp/data" "$tmpl/data" || realcatalogs_die "cannot copy the MariaDB template into $tmpl"
    rm -rf "$tmp"
    touch "$tmpl/.installed"
  fi
  echo "$mariadbd $tmpl/data"
}

# realcatalogs_moto CACHE: prints the moto server's path.
realcatalogs_moto() {
  local cache=$1 venv="$1/venv-moto-$REALCATALOGS_MOTO_VERSION"
  if ! [ -f "$venv/.installed" ]; then
    echo "realcatalogs: installing moto[server]==$REALCATALOGS_MOTO_VERSION into $venv" >&2
    rm -rf "$venv"
    python3 -m venv "$venv" >&2 || realcatalogs_die "python3 -m venv failed"
    "$venv/bin/pip" install --quiet --disable-pip-version-check "moto[server]==$REALCATALOGS_MOTO_VERSION" >&2 ||
      realcatalogs_die "pip install moto failed"
    touch "$venv/.installed"
  fi
  echo "$venv/bin/moto_server"
}

# realcatalogs_setup WORK: installs or checks everything, builds reactor and
# the scenario test binary into WORK/bin, and exports what
# realcatalogs/scenarios needs (REALCATALOGS_*).
realcatalogs_setup() {
  local work=$1 repo here
  here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
  repo=$(cd "$here/.." && pwd)
  local cache=${REACTOR_CATALOGS_CACHE:-$HOME/.cache/reactor-catalogs}
  mkdir -p "$cache/jars" "$work/bin"
  command -v go >/dev/null || realcatalogs_die "go not found"
  command -v curl >/dev/null || realcatalogs_die "curl not found"
  command -v mvn >/dev/null || realcatalogs_die "mvn not found (it resolves the Hive Metastore's Hadoop jars)"
  command -v python3 >/dev/null || realcatalogs_die "python3 not found"

  # Spark, Iceberg's runtime and reactor itself: the interop harness's
  # setup (its own cache and lock).
  # shellcheck source=../interop/setup.sh
  source "$repo/interop/setup.sh"
  interop_setup "$work/interop" >&2

  exec 7>"$cache/.lock"
  flock 7
  local hms pg mariadb moto
  hms=$(realcatalogs_hms "$cache")
  pg=$(realcatalogs_postgres "$cache")
  mariadb=$(realcatalogs_mariadb "$cache")
  moto=$(realcatalogs_moto "$cache")
  local pgjar="$cache/jars/postgresql-$REALCATALOGS_PG_JDBC_VERSION.jar"
  local myjar="$cache/jars/mariadb-java-client-$REALCATALOGS_MARIADB_JDBC_VERSION.jar"
  realcatalogs_fetch "$REALCATALOGS_MAVEN/org/postgresql/postgresql/$REALCATALOGS_PG_JDBC_VERSION/postgresql-$REALCATALOGS_PG_JDBC_VERSION.jar" "$pgjar"
  realcatalogs_fetch "$REALCATALOGS_MAVEN/org/mariadb/jdbc/mariadb-java-client/$REALCATALOGS_MARIADB_JDBC_VERSION/mariadb-java-client-$REALCATALOGS_MARIADB_JDBC_VERSION.jar" "$myjar"
  flock -u 7

  echo "realcatalogs: building the scenarios" >&2
  (cd "$repo" && go test -c -o "$work/bin/scenarios.test" ./realcatalogs/scenarios) || realcatalogs_die "go test -c failed"

  export REALCATALOGS_REACTOR="$INTEROP_REACTOR"
  export REALCATALOGS_HMS_HOME="$hms"
  export REALCATALOGS_PG_BIN="${pg% *}"
  export REALCATALOGS_PG_TEMPLATE="${pg#* }"
  export REALCATALOGS_MARIADBD="${mariadb% *}"
  export REALCATALOGS_MARIADB_TEMPLATE="${mariadb#* }"
  export REALCATALOGS_MOTO="$moto"
  export REALCATALOGS_PYTHON="$INTEROP_PYTHON"
  export REALCATALOGS_SPARK_JARS="$(echo "$INTEROP_JARS" | tr -d '[]" ' | tr ',' '\n' | grep iceberg-spark-runtime),$pgjar,$myjar"
  export REALCATALOGS_SPARK_SERVER="$here/spark/server.py"
  echo "realcatalogs: hive-standalone-metastore $REALCATALOGS_HMS_VERSION, $("$REALCATALOGS_PG_BIN/postgres" --version), $("$REALCATALOGS_MARIADBD" --version | head -1), moto $REALCATALOGS_MOTO_VERSION, $INTEROP_VERSIONS; cache $cache" >&2
}
