#!/usr/bin/env bash
# Installs every Debian package paddock needs to build, test and benchmark.
# Idempotent: packages already present are left alone.
set -euo pipefail
pkgs=(build-essential pkg-config libseccomp-dev libcap-dev libjansson-dev libmicrohttpd-dev libsqlite3-dev curl
      bubblewrap hyperfine perl iproute2 procps util-linux e2fsprogs
      python3 nodejs g++ valgrind clang libclang-rt-14-dev jq
      # what SandboxFusion's tests expect of its languages, where Debian packages it: junit and
      # common jars for java, lodash for node, Test::Deep and Data::Compare for perl
      junit4 libhamcrest-java libcommons-lang3-java libguava-java libjavatuples-java node-lodash libtest-deep-perl
      libdata-compare-perl
      # the compilers of pascal and fortran (tests/api/peers.t compiles Pascal). go, rust, ruby, lua
      # and php are not installed: large, and no test needs them; paddock pool --toolchains lists
      # them as optional with their packages (golang-go rustc ruby lua5.4 php-cli)
      fp-compiler gfortran
      nats-server libnats-dev libarchive-dev libssl-dev
      libcurl4-openssl-dev  # curl.h: server/cluster/https.c loads libcurl for an https:// S3 endpoint
      # the tests' tools: the store read back, a repository's history, a tracer refused
      sqlite3 git strace openjdk-17-jdk-headless
      # verl's own SandboxFusion tests (tests/api/verl.t), run by Debian's python3
      python3-pytest python3-requests
      prometheus  # promtool checks contrib/prometheus/alerts.yml (tests/api/ops.t); its service is not needed
      runsc       # gVisor, for the gvisor isolation tier (paddock exec --isolation gvisor)
      # the microVM tier's parts (docs/design/microvm.md): QEMU 7.2 with its microvm machine, a guest
      # kernel, and mkfs.erofs for the images' read-only block images
      qemu-system-x86 linux-image-cloud-amd64 erofs-utils)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  [ "$(id -u)" = 0 ] || { echo "install-deps: need root to install: ${missing[*]}" >&2; exit 1; }
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
echo "install-deps: all ${#pkgs[@]} packages present"

# s3rver, npm's fake S3 (pinned), for tests/api/cluster_s3.t's objects in an S3-compatible store:
# into its own directory, not npm's global one (PADDOCK_S3RVER_DIR, default below; the test looks
# there, or at $PADDOCK_S3RVER). Neither Debian nor PyPI is needed for it, only the npm registry;
# where that cannot be reached this says so and the test skips, saying why.
S3RVER_VERSION=3.7.1
S3RVER_DIR=${PADDOCK_S3RVER_DIR:-/usr/local/lib/paddock/s3rver}
have=$(node -p "require('$S3RVER_DIR/node_modules/s3rver/package.json').version" 2>/dev/null || true)
if [ "$have" != "$S3RVER_VERSION" ]; then
  if ! command -v npm >/dev/null; then
    # Debian's nodejs comes without npm (NodeSource's has it)
    [ "$(id -u)" = 0 ] && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends npm ||
      echo "install-deps: npm is missing; s3rver not installed (tests/api/cluster_s3.t will skip)" >&2
  fi
  mkdir -p "$S3RVER_DIR"
  if command -v npm >/dev/null &&
     npm install --prefix "$S3RVER_DIR" --no-audit --no-fund --omit=dev --save-exact "s3rver@$S3RVER_VERSION" >/dev/null; then
    echo "install-deps: s3rver $S3RVER_VERSION in $S3RVER_DIR"
  else
    echo "install-deps: could not install s3rver $S3RVER_VERSION from npm (registry unreachable?); tests/api/cluster_s3.t will skip" >&2
  fi
else
  echo "install-deps: s3rver $S3RVER_VERSION present in $S3RVER_DIR"
fi
