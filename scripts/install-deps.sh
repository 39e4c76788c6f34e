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
