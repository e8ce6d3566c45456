# Sourced by interop/run and interop/bench: installs what the harness needs
# into a cache outside the repository (once; later runs reuse it) and builds
# reactor and sparkcall-render from this tree.
#
#   REACTOR_INTEROP_CACHE   cache directory (default ~/.cache/reactor-interop)
#
# Pinned versions: Iceberg's Spark runtime for Spark 4.1 / Scala 2.13 at the
# version the seeds name (docs/design.md#origins), and the PySpark of the same Spark minor (the
# newest 4.1 patch release on PyPI). sqlite-jdbc is the driver Spark's
# JdbcCatalog uses for the SQLite file reactor's SQL catalog uses.

PYSPARK_VERSION=4.1.4
SPARK_MINOR=4.1
SCALA_BINARY=2.13
ICEBERG_VERSION=1.12.0
SQLITE_JDBC_VERSION=3.54.1.0
MAVEN=${INTEROP_MAVEN:-https://repo1.maven.org/maven2}

interop_die() { echo "interop: $*" >&2; exit 1; }

# interop_fetch URL DEST: download once, verified against Maven's .sha1.
interop_fetch() {
  local url=$1 dest=$2
  [ -s "$dest" ] && return 0
  echo "interop: fetching $url"
  curl -fsSL --retry 3 -o "$dest.part" "$url" || interop_die "download failed: $url"
  local want got
  want=$(curl -fsSL --retry 3 "$url.sha1" | awk '{print $1}') || interop_die "no checksum: $url.sha1"
  got=$(sha1sum "$dest.part" | awk '{print $1}')
  [ "$want" = "$got" ] || interop_die "checksum mismatch for $url: want $want, got $got"
  mv "$dest.part" "$dest"
}

# interop_setup WORK: exports INTEROP_PYTHON, INTEROP_JARS, INTEROP_REACTOR,
# INTEROP_RENDER, INTEROP_JOBTAIL, INTEROP_EQDELETE (binaries built into WORK/bin).
interop_setup() {
  local work=$1 repo
  repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
  local cache=${REACTOR_INTEROP_CACHE:-$HOME/.cache/reactor-interop}
  mkdir -p "$cache/jars" "$work/bin"

  command -v java >/dev/null || interop_die "java not found (Spark 4 needs Java 17 or 21)"
  local jv
  jv=$(java -version 2>&1 | awk -F'"' '/version/ {print $2}' | cut -d. -f1)
  [ "${jv:-0}" -ge 17 ] || interop_die "Java $jv found; Spark 4 needs Java 17 or 21"
  command -v python3 >/dev/null || interop_die "python3 not found"

  # One setup at a time per cache (CI may run two jobs on one machine).
  exec 9>"$cache/.lock"
  flock 9

  local venv="$cache/venv-pyspark-$PYSPARK_VERSION"
  if [ ! -f "$venv/.installed" ]; then
    echo "interop: installing pyspark==$PYSPARK_VERSION into $venv"
    rm -rf "$venv"
    python3 -m venv "$venv"
    "$venv/bin/pip" install --quiet --disable-pip-version-check "pyspark==$PYSPARK_VERSION"
    touch "$venv/.installed"
  fi
  local runtime="iceberg-spark-runtime-${SPARK_MINOR}_${SCALA_BINARY}"
  local iceberg_jar="$cache/jars/$runtime-$ICEBERG_VERSION.jar"
  local sqlite_jar="$cache/jars/sqlite-jdbc-$SQLITE_JDBC_VERSION.jar"
  interop_fetch "$MAVEN/org/apache/iceberg/$runtime/$ICEBERG_VERSION/$runtime-$ICEBERG_VERSION.jar" "$iceberg_jar"
  interop_fetch "$MAVEN/org/xerial/sqlite-jdbc/$SQLITE_JDBC_VERSION/sqlite-jdbc-$SQLITE_JDBC_VERSION.jar" "$sqlite_jar"
  flock -u 9

  echo "interop: building reactor, sparkcall-render, jobtail and eqdelete"
  (cd "$repo" && go build -o "$work/bin/reactor" ./cmd/reactor && go build -o "$work/bin/sparkcall-render" ./interop/sparkcall-render &&
    go build -o "$work/bin/jobtail" ./interop/jobtail && go build -o "$work/bin/eqdelete" ./interop/eqdelete) ||
    interop_die "go build failed"

  export INTEROP_PYTHON="$venv/bin/python"
  export PYSPARK_PYTHON="$venv/bin/python"
  export INTEROP_JARS="[\"$iceberg_jar\", \"$sqlite_jar\"]"
  export INTEROP_REACTOR="$work/bin/reactor"
  export INTEROP_RENDER="$work/bin/sparkcall-render"
  export INTEROP_JOBTAIL="$work/bin/jobtail"
  export INTEROP_EQDELETE="$work/bin/eqdelete"
  export INTEROP_VERSIONS="pyspark $PYSPARK_VERSION, $runtime $ICEBERG_VERSION, sqlite-jdbc $SQLITE_JDBC_VERSION, $(java -version 2>&1 | head -1)"
  echo "interop: $INTEROP_VERSIONS"
}

# Flink's side (interop/peers/run and the reporter scenario): Iceberg's Flink
# runtime for Flink 1.20 at 1.11.0 (no 1.12.0 exists for Flink; the nearest
# release to the 1.12 the Spark side uses) with Flink 1.20.1, Hadoop's client
# and sqlite-jdbc, resolved by Maven from a pom generated into the cache.
FLINK_VERSION=1.20.1
ICEBERG_FLINK_VERSION=1.11.0
HADOOP_VERSION=3.4.1
LOG4J_VERSION=2.24.3
SLF4J_VERSION=2.0.17

# interop_flink_lib: prints the directory of jars that is Flink's classpath,
# resolving it once per cache (180 MiB).
interop_flink_lib() {
  command -v mvn >/dev/null || interop_die "mvn not found (Maven resolves the Flink classpath)"
  local cache=${REACTOR_INTEROP_CACHE:-$HOME/.cache/reactor-interop}
  local flink_dir="$cache/flink-$FLINK_VERSION-iceberg-$ICEBERG_FLINK_VERSION"
  mkdir -p "$cache"
  exec 9>"$cache/.lock"
  flock 9
  # .installed-sql: the classpath with Flink's SQL planner (the reporter
  # scenario's Flink SQL writer); a cache from before it is resolved again.
  if [ ! -f "$flink_dir/.installed-sql" ]; then
    echo "interop: resolving the Flink classpath into $flink_dir" >&2
    rm -rf "$flink_dir"
    mkdir -p "$flink_dir"
    cat >"$flink_dir/pom.xml" <<POM
<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>reactor.interop</groupId>
  <artifactId>flink-peer-classpath</artifactId>
  <version>1</version>
  <dependencies>
    <dependency><groupId>org.apache.iceberg</groupId><artifactId>iceberg-flink-runtime-1.20</artifactId><version>$ICEBERG_FLINK_VERSION</version></dependency>
    <dependency><groupId>org.apache.flink</groupId><artifactId>flink-streaming-java</artifactId><version>$FLINK_VERSION</version></dependency>
    <dependency><groupId>org.apache.flink</groupId><artifactId>flink-clients</artifactId><version>$FLINK_VERSION</version></dependency>
    <dependency><groupId>org.apache.flink</groupId><artifactId>flink-table-runtime</artifactId><version>$FLINK_VERSION</version></dependency>
    <dependency><groupId>org.apache.flink</groupId><artifactId>flink-table-api-java-bridge</artifactId><version>$FLINK_VERSION</version></dependency>
    <dependency><groupId>org.apache.flink</groupId><artifactId>flink-table-planner-loader</artifactId><version>$FLINK_VERSION</version></dependency>
    <dependency><groupId>org.apache.flink</groupId><artifactId>flink-connector-files</artifactId><version>$FLINK_VERSION</version></dependency>
    <dependency><groupId>org.apache.flink</groupId><artifactId>flink-metrics-core</artifactId><version>$FLINK_VERSION</version></dependency>
    <dependency><groupId>org.apache.hadoop</groupId><artifactId>hadoop-client-api</artifactId><version>$HADOOP_VERSION</version></dependency>
    <dependency><groupId>org.apache.hadoop</groupId><artifactId>hadoop-client-runtime</artifactId><version>$HADOOP_VERSION</version></dependency>
    <dependency><groupId>org.xerial</groupId><artifactId>sqlite-jdbc</artifactId><version>$SQLITE_JDBC_VERSION</version></dependency>
    <dependency><groupId>org.slf4j</groupId><artifactId>slf4j-api</artifactId><version>$SLF4J_VERSION</version></dependency>
    <dependency><groupId>org.apache.logging.log4j</groupId><artifactId>log4j-slf4j2-impl</artifactId><version>$LOG4J_VERSION</version></dependency>
    <dependency><groupId>org.apache.logging.log4j</groupId><artifactId>log4j-core</artifactId><version>$LOG4J_VERSION</version></dependency>
  </dependencies>
</project>
POM
    (cd "$flink_dir" && mvn -q -B -Dstyle.color=never dependency:copy-dependencies -DoutputDirectory="$flink_dir/lib" -DincludeScope=runtime) >&2 ||
      interop_die "mvn could not resolve the Flink classpath"
    touch "$flink_dir/.installed-sql"
  fi
  flock -u 9
  echo "$flink_dir/lib"
}

# interop_reporter_setup WORK: what the reporter scenario needs. Builds the
# commit reporter (reporter/, Maven) and runs its Surefire tests against a
# real nats-server (built from the Go module proxy into realparts' cache, as
# realparts/run does) and reactor's own decoder (interop/decodecommit);
# compiles the scenario's Java writers against Flink's classpath. Exports
# INTEROP_REPORTER_JAR, INTEROP_NATS_SERVER, INTEROP_FLINK_LIB and
# INTEROP_REPORTER_CLASSES.
interop_reporter_setup() {
  local work=$1 repo t0
  repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
  command -v mvn >/dev/null || interop_die "mvn not found (it builds the commit reporter)"
  command -v javac >/dev/null || interop_die "javac not found (a JDK 17 builds the commit reporter)"
  # shellcheck source=../realparts/setup.sh
  source "$repo/realparts/setup.sh"
  local rcache=${REACTOR_REALPARTS_CACHE:-$HOME/.cache/reactor-realparts}
  mkdir -p "$rcache/bin"
  exec 8>"$rcache/.lock"
  flock 8
  INTEROP_NATS_SERVER=$(realparts_go_binary nats-server "$REALPARTS_NATS_MODULE" "$REALPARTS_NATS_VERSION" "$REALPARTS_NATS_SUM" "$rcache")
  flock -u 8
  (cd "$repo" && go build -o "$work/bin/decodecommit" ./interop/decodecommit) || interop_die "go build ./interop/decodecommit failed"
  t0=$(date +%s)
  echo "interop: building the commit reporter and running its tests (mvn package)"
  (cd "$repo/reporter" && REACTOR_NATS_SERVER="$INTEROP_NATS_SERVER" REACTOR_DECODE_COMMIT="$work/bin/decodecommit" \
    mvn -B -ntp -Dstyle.color=never package >"$work/reporter-mvn.log" 2>&1) ||
    { grep -E "Tests run:|FAIL|ERROR" "$work/reporter-mvn.log" | head -40; interop_die "the commit reporter's build or tests failed: $work/reporter-mvn.log"; }
  grep -E "Tests run:.*Fail" "$work/reporter-mvn.log" | tail -1
  echo "interop: the commit reporter built and tested in $(($(date +%s) - t0))s"
  INTEROP_REPORTER_JAR=$(ls "$repo"/reporter/target/reactor-commit-reporter-*.jar | grep -v original | head -1)
  INTEROP_FLINK_LIB=$(interop_flink_lib)
  INTEROP_REPORTER_CLASSES="$work/reporter-classes"
  mkdir -p "$INTEROP_REPORTER_CLASSES"
  javac -nowarn -d "$INTEROP_REPORTER_CLASSES" -cp "$INTEROP_FLINK_LIB/*:$INTEROP_REPORTER_JAR" "$repo"/interop/reporter/*.java ||
    interop_die "javac interop/reporter failed"
  export INTEROP_REPORTER_JAR INTEROP_NATS_SERVER INTEROP_FLINK_LIB INTEROP_REPORTER_CLASSES
}
