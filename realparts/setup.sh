# Sourced by realparts/run: installs the real servers into a cache outside
# the repository (once per version; later runs reuse them after checking
# them) and builds reactor and the scenarios from this tree.
#
#   REACTOR_REALPARTS_CACHE   cache directory (default ~/.cache/reactor-realparts)
#
# Pinned versions, and the checksums every install and every reuse is
# checked against:
#
# * nats-server and MinIO are built from the Go module proxy with
#   `go install MODULE@VERSION` into the cache (never into reactor's
#   go.mod: MinIO is AGPL and runs only as a separate process). The go
#   command verifies the module source against sum.golang.org; the h1: sums
#   below are that source's hash, and `go version -m` must show exactly it
#   in the binary. A binary's sha256 is recorded beside it when built and
#   checked on every reuse. MinIO has no release tags on the module proxy:
#   the version is the pseudo-version of the newest commit (see
#   REALPARTS_MINIO_IMAGE for how it relates to the compose file's image).
# * The REST catalog is the main jar of org.apache.iceberg:iceberg-open-api
#   from Maven Central (the server of the apache/iceberg-rest-fixture
#   image), checked against the sha256 below (Maven Central's .sha256 for
#   it says the same).

REALPARTS_NATS_MODULE=github.com/nats-io/nats-server/v2
REALPARTS_NATS_VERSION=v2.15.2
REALPARTS_NATS_SUM=h1:yLsgt2kslgymvxvjFq1WGWck5hkat2YYfbXvQ145tzU=
REALPARTS_MINIO_MODULE=github.com/minio/minio
REALPARTS_MINIO_VERSION=v0.0.0-20260212201848-7aac2a2c5b7c
REALPARTS_MINIO_SUM=h1:/qdoYujxF5MBLDMVLeiYJ/7fBa1HikX39Dvzb9Ji8pA=
# The MinIO image docker-compose.yml runs (deploy tests check it): the
# last release published as an image. Its source, commit 07c3a429bfed, is
# 25 commits before the one built above; they change 2 lines of the
# notification code, both in the Elasticsearch and Kafka targets.
REALPARTS_MINIO_IMAGE=RELEASE.2025-09-07T16-13-09Z
REALPARTS_CATALOG_VERSION=1.10.1
REALPARTS_CATALOG_SHA256=09e6aef58984eaa58bf1e1bc5193ad023e929c6bfd38c82db7b83ffe825af724
REALPARTS_MAVEN=${REALPARTS_MAVEN:-https://repo1.maven.org/maven2}

realparts_die() { echo "realparts: $*" >&2; exit 1; }

# realparts_module_of BINARY: "VERSION SUM" of the main module the binary
# was built from.
realparts_module_of() {
  go version -m "$1" 2>/dev/null | awk '$1 == "mod" {print $3, $4; exit}'
}

# realparts_go_binary NAME MODULE VERSION SUM: prints the path of the cached
# binary, building it first when it is missing or fails its checks.
realparts_go_binary() {
  local name=$1 module=$2 version=$3 sum=$4 cache=$5
  local bin="$cache/bin/$name-$version"
  if [ -x "$bin" ] && [ -s "$bin.sha256" ] && (cd "$cache/bin" && sha256sum --quiet -c "$bin.sha256" >/dev/null 2>&1) &&
    [ "$(realparts_module_of "$bin")" = "$version $sum" ]; then
    echo "$bin"
    return 0
  fi
  rm -f "$bin" "$bin.sha256"
  local tmp start
  tmp=$(mktemp -d "$cache/build.XXXXXX")
  start=$(date +%s)
  echo "realparts: building $module@$version (go install: MinIO takes seconds with a warm Go build cache, about 5 min cold)" >&2
  # Outside any module, so reactor's go.mod is neither read nor touched.
  (cd "$tmp" && GOFLAGS=-mod=mod GOBIN="$tmp/bin" go install "$module@$version") >&2 ||
    { rm -rf "$tmp"; realparts_die "go install $module@$version failed"; }
  local got
  got=$(realparts_module_of "$tmp/bin/$name")
  if [ "$got" != "$version $sum" ]; then
    rm -rf "$tmp"
    realparts_die "$name was built from \"$got\", want \"$version $sum\""
  fi
  mv "$tmp/bin/$name" "$bin"
  rm -rf "$tmp"
  (cd "$cache/bin" && sha256sum "$(basename "$bin")" >"$bin.sha256")
  echo "realparts: built $name in $(($(date +%s) - start))s" >&2
  echo "$bin"
}

# realparts_fetch_jar DEST: the REST catalog jar, downloaded once and
# checked against the pinned sha256 on every use.
realparts_fetch_jar() {
  local dest=$1
  local url="$REALPARTS_MAVEN/org/apache/iceberg/iceberg-open-api/$REALPARTS_CATALOG_VERSION/iceberg-open-api-$REALPARTS_CATALOG_VERSION.jar"
  if [ -s "$dest" ] && [ "$(sha256sum "$dest" | awk '{print $1}')" = "$REALPARTS_CATALOG_SHA256" ]; then
    return 0
  fi
  echo "realparts: fetching $url" >&2
  curl -fsSL --retry 3 -o "$dest.part" "$url" || realparts_die "download failed: $url"
  local got
  got=$(sha256sum "$dest.part" | awk '{print $1}')
  [ "$got" = "$REALPARTS_CATALOG_SHA256" ] ||
    { rm -f "$dest.part"; realparts_die "checksum mismatch for $url: want $REALPARTS_CATALOG_SHA256, got $got"; }
  mv "$dest.part" "$dest"
}

# realparts_setup WORK: exports what realparts/scenarios needs
# (REALPARTS_NATS_SERVER, REALPARTS_MINIO, REALPARTS_CATALOG_JAR,
# REALPARTS_JAVA, REALPARTS_REACTOR) and builds reactor and the scenario
# test binary into WORK/bin.
realparts_setup() {
  local work=$1 repo
  repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
  local cache=${REACTOR_REALPARTS_CACHE:-$HOME/.cache/reactor-realparts}
  mkdir -p "$cache/bin" "$cache/jars" "$work/bin"

  command -v go >/dev/null || realparts_die "go not found"
  command -v curl >/dev/null || realparts_die "curl not found"
  command -v java >/dev/null || realparts_die "java not found (the REST catalog server needs Java 17 or 21)"
  local jv
  jv=$(java -version 2>&1 | awk -F'"' '/version/ {print $2}' | cut -d. -f1)
  [ "${jv:-0}" -ge 17 ] || realparts_die "Java $jv found; the REST catalog server needs Java 17 or 21"

  # One install at a time per cache (CI may run two jobs on one machine).
  exec 8>"$cache/.lock"
  flock 8
  rm -rf "$cache"/build.* # left by an interrupted build
  local nats minio jar="$cache/jars/iceberg-open-api-$REALPARTS_CATALOG_VERSION.jar"
  nats=$(realparts_go_binary nats-server "$REALPARTS_NATS_MODULE" "$REALPARTS_NATS_VERSION" "$REALPARTS_NATS_SUM" "$cache")
  minio=$(realparts_go_binary minio "$REALPARTS_MINIO_MODULE" "$REALPARTS_MINIO_VERSION" "$REALPARTS_MINIO_SUM" "$cache")
  realparts_fetch_jar "$jar"
  flock -u 8

  echo "realparts: building reactor and the scenarios"
  (cd "$repo" && go build -o "$work/bin/reactor" ./cmd/reactor && go test -c -o "$work/bin/scenarios.test" ./realparts/scenarios) ||
    realparts_die "go build failed"

  export REALPARTS_NATS_SERVER="$nats"
  export REALPARTS_MINIO="$minio"
  export REALPARTS_CATALOG_JAR="$jar"
  export REALPARTS_JAVA=java
  export REALPARTS_REACTOR="$work/bin/reactor"
  echo "realparts: nats-server $REALPARTS_NATS_VERSION, minio $REALPARTS_MINIO_VERSION, iceberg-open-api $REALPARTS_CATALOG_VERSION, $(java -version 2>&1 | head -1); cache $cache"
}
