# Sourced by cloudparts/run: installs the stores' emulators into a cache
# outside the repository (once per version; later runs reuse them after
# checking them), reuses realparts/setup.sh for nats-server, MinIO and the
# REST catalog, and builds reactor and the scenarios from this tree.
#
#   REACTOR_CLOUDPARTS_CACHE   cache directory (default ~/.cache/reactor-cloudparts)
#   REACTOR_REALPARTS_CACHE    realparts' cache, shared (default ~/.cache/reactor-realparts)
#
# Pinned versions, and the checks every install and every reuse passes:
#
# * fake-gcs-server, GCS's emulator, is built from the Go module proxy with
#   `go install MODULE@VERSION` (never into reactor's go.mod), exactly as
#   realparts builds nats-server and MinIO: the go command verifies the
#   source against sum.golang.org, `go version -m` must show the h1: sum
#   below in the binary, and the binary's sha256 is checked on every reuse.
# * Azurite, Azure Blob storage's emulator, is installed from npm with
#   `npm ci` from cloudparts/azurite/package-lock.json (every package pinned
#   with its sha512 integrity, which npm checks); a reuse checks that the
#   installed lock file is the committed one and that the version is the
#   pinned one.

CLOUDPARTS_GCS_MODULE=github.com/fsouza/fake-gcs-server
CLOUDPARTS_GCS_VERSION=v1.56.1
CLOUDPARTS_GCS_SUM=h1:K03sAvbLvDz4hAynpCCUqnNRp+ik9JFSvHbkD/wTPOU=
CLOUDPARTS_AZURITE_VERSION=3.35.0

cloudparts_die() { echo "cloudparts: $*" >&2; exit 1; }

# cloudparts_azurite CACHE: prints the path of azurite-blob, installing the
# locked packages first when they are missing or not the committed ones.
cloudparts_azurite() {
  local cache=$1 here lock dir
  here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
  lock=$(sha256sum "$here/azurite/package-lock.json" | awk '{print $1}')
  dir="$cache/azurite-$CLOUDPARTS_AZURITE_VERSION"
  local bin="$dir/node_modules/.bin/azurite-blob"
  if [ -x "$bin" ] && [ "$(cat "$dir/.lock.sha256" 2>/dev/null)" = "$lock" ] &&
    [ "$(node -p "require('$dir/node_modules/azurite/package.json').version" 2>/dev/null)" = "$CLOUDPARTS_AZURITE_VERSION" ]; then
    echo "$bin"
    return 0
  fi
  rm -rf "$dir"
  mkdir -p "$dir"
  cp "$here/azurite/package.json" "$here/azurite/package-lock.json" "$dir/"
  local start
  start=$(date +%s)
  echo "cloudparts: installing azurite $CLOUDPARTS_AZURITE_VERSION from npm (npm ci, about 4 min the first time)" >&2
  (cd "$dir" && npm ci --omit=dev --no-audit --no-fund --loglevel=error) >&2 ||
    { rm -rf "$dir"; cloudparts_die "npm ci of azurite failed"; }
  [ "$(node -p "require('$dir/node_modules/azurite/package.json').version")" = "$CLOUDPARTS_AZURITE_VERSION" ] ||
    { rm -rf "$dir"; cloudparts_die "npm installed another azurite than $CLOUDPARTS_AZURITE_VERSION"; }
  echo "$lock" >"$dir/.lock.sha256"
  echo "cloudparts: installed azurite in $(($(date +%s) - start))s" >&2
  echo "$bin"
}

# cloudparts_setup WORK: exports what cloudparts/scenarios needs
# (CLOUDPARTS_FAKE_GCS, CLOUDPARTS_AZURITE, CLOUDPARTS_REACTOR, and
# realparts' REALPARTS_NATS_SERVER, REALPARTS_MINIO, REALPARTS_CATALOG_JAR,
# REALPARTS_JAVA) and builds reactor and the scenario test binary into
# WORK/bin.
cloudparts_setup() {
  local work=$1 repo here
  here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
  repo=$(cd "$here/.." && pwd)
  local cache=${REACTOR_CLOUDPARTS_CACHE:-$HOME/.cache/reactor-cloudparts}
  local rcache=${REACTOR_REALPARTS_CACHE:-$HOME/.cache/reactor-realparts}
  mkdir -p "$cache/bin" "$rcache/bin" "$rcache/jars" "$work/bin"

  command -v go >/dev/null || cloudparts_die "go not found"
  command -v npm >/dev/null || cloudparts_die "npm not found (Azurite is a Node.js program)"
  command -v node >/dev/null || cloudparts_die "node not found (Azurite is a Node.js program)"
  command -v java >/dev/null || cloudparts_die "java not found (the REST catalog server needs Java 17 or 21)"

  # shellcheck source=../realparts/setup.sh
  source "$repo/realparts/setup.sh"

  # One install at a time per cache, as realparts does.
  exec 9>"$cache/.lock"
  flock 9
  rm -rf "$cache"/build.*
  local gcs azurite
  gcs=$(realparts_go_binary fake-gcs-server "$CLOUDPARTS_GCS_MODULE" "$CLOUDPARTS_GCS_VERSION" "$CLOUDPARTS_GCS_SUM" "$cache")
  azurite=$(cloudparts_azurite "$cache")
  flock -u 9
  exec 8>"$rcache/.lock"
  flock 8
  rm -rf "$rcache"/build.*
  local nats minio jar="$rcache/jars/iceberg-open-api-$REALPARTS_CATALOG_VERSION.jar"
  nats=$(realparts_go_binary nats-server "$REALPARTS_NATS_MODULE" "$REALPARTS_NATS_VERSION" "$REALPARTS_NATS_SUM" "$rcache")
  minio=$(realparts_go_binary minio "$REALPARTS_MINIO_MODULE" "$REALPARTS_MINIO_VERSION" "$REALPARTS_MINIO_SUM" "$rcache")
  realparts_fetch_jar "$jar"
  flock -u 8

  echo "cloudparts: building reactor and the scenarios"
  (cd "$repo" && go build -o "$work/bin/reactor" ./cmd/reactor && go test -c -o "$work/bin/scenarios.test" ./cloudparts/scenarios) ||
    cloudparts_die "go build failed"

  export CLOUDPARTS_FAKE_GCS="$gcs"
  export CLOUDPARTS_AZURITE="$azurite"
  export CLOUDPARTS_REACTOR="$work/bin/reactor"
  export REALPARTS_NATS_SERVER="$nats"
  export REALPARTS_MINIO="$minio"
  export REALPARTS_CATALOG_JAR="$jar"
  export REALPARTS_JAVA=java
  echo "cloudparts: fake-gcs-server $CLOUDPARTS_GCS_VERSION, azurite $CLOUDPARTS_AZURITE_VERSION, nats-server $REALPARTS_NATS_VERSION, minio $REALPARTS_MINIO_VERSION, iceberg-open-api $REALPARTS_CATALOG_VERSION; cache $cache"
}
