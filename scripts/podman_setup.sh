#!/usr/bin/env bash
# Podman as this machine's Docker engine, for `--provider docker` and the container tests.
#
#   scripts/podman_setup.sh            # set up what is missing (idempotent, cached)
#   scripts/podman_setup.sh --base     # steps 1-4 only (no wheelhouse, no harness image)
#   source "${CUA_PODMAN_DIR:-/var/tmp/cua-podman}/env"   # DOCKER_HOST, CUA_BASE_IMAGE
#
# 1. Debian packages: podman, runc, debootstrap, curl (apt-get when missing).
# 2. A private containers.conf (runc, not crun; ulimits Chromium needs) in $CUA_PODMAN_DIR.
# 3. `podman system service` on $CUA_PODMAN_DIR/podman.sock: the Docker-compatible API
#    the Docker SDK for Python drives (started unless it answers).
# 4. A Debian base image without a registry: debootstrap of the configured Debian mirror
#    (its sources: the suite, -updates and -security) + `podman import` (skipped when an
#    image of the same suite, mirrors and packages exists).
# 5. A wheelhouse (.wheelhouse/) of the project's dependencies, made with the host's pip, so
#    the image build needs no index (rebuilt when pyproject.toml's dependencies change).
# 6. The harness image from the repo's Dockerfile, through the Docker SDK
#    (`python -m harness.containers.image`: skipped when an image of the same inputs exists).
#
# Runs as root (or with sudo for apt and debootstrap). Writes $CUA_PODMAN_DIR/env last.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
STATE=${CUA_PODMAN_DIR:-/var/tmp/cua-podman}
SOCK=$STATE/podman.sock
BASE_IMAGE=${CUA_BASE_IMAGE:-localhost/cua-debian:bookworm}
SUITE=${CUA_DEBIAN_SUITE:-bookworm}
PY=${PY:-$ROOT/.venv/bin/python}
SUDO=$([ "$(id -u)" = 0 ] || echo sudo)
export CONTAINERS_CONF=$STATE/containers.conf

say() { echo "podman_setup: $*"; }

mkdir -p "$STATE"

# 1. packages
missing=""
for p in podman runc debootstrap curl; do dpkg -s "$p" >/dev/null 2>&1 || missing="$missing $p"; done
if [ -n "$missing" ]; then
  say "installing Debian packages:$missing"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends $missing >/dev/null
fi

# 2. containers.conf
conf='[containers]
default_ulimits = ["nofile=20000:20000", "nproc=32768:32768"]

[engine]
runtime = "runc"'
if [ "$(cat "$CONTAINERS_CONF" 2>/dev/null)" != "$conf" ]; then
  printf '%s\n' "$conf" >"$CONTAINERS_CONF"
  [ -f "$STATE/service.pid" ] && kill "$(cat "$STATE/service.pid")" 2>/dev/null || true
fi

# 3. the API socket
ping() { curl -fsS --max-time 2 --unix-socket "$SOCK" http://d/_ping >/dev/null 2>&1; }
if ! ping; then
  [ -f "$STATE/service.pid" ] && kill "$(cat "$STATE/service.pid")" 2>/dev/null || true
  rm -f "$SOCK"
  say "starting podman system service on $SOCK"
  setsid podman system service --time=0 "unix://$SOCK" >"$STATE/service.log" 2>&1 </dev/null &
  echo $! >"$STATE/service.pid"
  for _ in $(seq 1 150); do ping && break; sleep 0.2; done
  ping || { cat "$STATE/service.log"; say "expected the podman API on $SOCK, got no answer"; exit 1; }
fi

# 4. the base image (rebuilt when its inputs change: suite, mirrors, packages)
mirror() {  # the first Debian mirror apt is configured with (deb822 or one-line format);
  # $1 = security: the security mirror instead
  local m pick=(grep -v -- '-security')
  [ "${1:-}" = security ] && pick=(grep -- '-security')
  m=$(grep -hE '^URIs:' /etc/apt/sources.list.d/*.sources 2>/dev/null | awk '{print $2}' \
      | "${pick[@]}" | head -n1 || true)
  [ -n "$m" ] || m=$(grep -hE '^deb ' /etc/apt/sources.list /etc/apt/sources.list.d/*.list 2>/dev/null \
      | awk '{print $2}' | grep -E 'debian(-security)?/?$' | "${pick[@]}" | head -n1 || true)
  if [ "${1:-}" = security ]; then echo "${m:-http://deb.debian.org/debian-security}"
  else echo "${m:-http://deb.debian.org/debian}"; fi
}
MIRROR=$(mirror) SECURITY=$(mirror security) INCLUDE=python3,python3-venv,ca-certificates
base_inputs=$(echo "$SUITE $MIRROR $SECURITY $INCLUDE" | sha256sum | cut -c1-16)
have=$(podman image inspect --format '{{index .Labels "cua.base-inputs"}}' "$BASE_IMAGE" 2>/dev/null || true)
if [ "$have" != "$base_inputs" ]; then
  rootfs=$(mktemp -d "$STATE/rootfs.XXXXXX")
  say "debootstrap $SUITE from $MIRROR (about a minute)"
  $SUDO debootstrap --variant=minbase --include="$INCLUDE" \
    "$SUITE" "$rootfs" "$MIRROR" >"$STATE/debootstrap.log" 2>&1 \
    || { tail -n 20 "$STATE/debootstrap.log"; exit 1; }
  # updates and security fixes too (Chromium's come through the security suite)
  printf 'deb %s %s main\ndeb %s %s-updates main\ndeb %s %s-security main\n' \
    "$MIRROR" "$SUITE" "$MIRROR" "$SUITE" "$SECURITY" "$SUITE" | $SUDO tee "$rootfs/etc/apt/sources.list" >/dev/null
  $SUDO rm -rf "$rootfs"/var/cache/apt/archives/*.deb "$rootfs"/var/lib/apt/lists/*
  $SUDO tar -C "$rootfs" -c . | podman import --change 'CMD ["/bin/bash"]' \
    --change "LABEL cua.base-inputs=$base_inputs" - "$BASE_IMAGE" >/dev/null
  $SUDO rm -rf "$rootfs"
  say "imported $BASE_IMAGE"
fi

[ "${1:-}" = "--base" ] && { say "base image $BASE_IMAGE ready"; exit 0; }

# 5. the wheelhouse: the core and the image's extras (desktop, miniwob; see the Dockerfile)
want=$("$PY" -c "import tomllib, hashlib; d = tomllib.load(open('$ROOT/pyproject.toml', 'rb')); \
p = d['project']; extras = p['optional-dependencies']; \
print(hashlib.sha256(repr((p['dependencies'], extras['desktop'], extras['miniwob'], d['build-system']['requires'])).encode()).hexdigest())")
if [ "$(cat "$ROOT/.wheelhouse/.deps" 2>/dev/null)" != "$want" ]; then
  say "building the wheelhouse (.wheelhouse/)"
  rm -rf "$ROOT/.wheelhouse"
  "$PY" -c "import tomllib; d = tomllib.load(open('$ROOT/pyproject.toml', 'rb')); \
p = d['project']; extras = p['optional-dependencies']; \
print('\n'.join(p['dependencies'] + extras['desktop'] + extras['miniwob'] + d['build-system']['requires']))" >"$STATE/requirements.txt"
  "$PY" -m pip wheel -q -w "$ROOT/.wheelhouse" -r "$STATE/requirements.txt"
  echo "$want" >"$ROOT/.wheelhouse/.deps"
fi

# 6. the harness image
export DOCKER_HOST=unix://$SOCK
"$PY" -m harness.containers.image --base-image "$BASE_IMAGE"

printf 'export DOCKER_HOST=%q\nexport CUA_BASE_IMAGE=%q\n' "unix://$SOCK" "$BASE_IMAGE" >"$STATE/env"
say "ready: source $STATE/env"
