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
