#!/usr/bin/env bash
# docker/smoke.sh [--no-scale]: build the gradserve image from docker/Dockerfile,
# run it, check what only the container engine can see (the image's USER and
# HEALTHCHECK, one non-root server process, a clean exit 0 on SIGTERM), and run the
# HTTP checks of tests/image against it (pytest; GRADSERVE_IMAGE_URL). Then, unless
# --no-scale: compose.yml's scale-out "lb" by hand: two containers of the image and
# nginx (docker/nginx/entrypoint.sh, as in compose.yml) on 127.0.0.1 ports, and
# tests/image/test_image_pair.py through it (GRADSERVE_IMAGE_LB_URL: sessions stay
# pinned to one replica). `make test` runs the same HTTP checks on local processes.
#
# There is no Docker engine on our machines and Docker Hub is out of reach, so:
#   * the container engine is podman with runc (Debian packages, installed here
#     if missing), configured by docker/podman/*.conf through CONTAINERS_* env
#     variables (the machine's own podman settings are neither used nor changed);
#   * the base image is Debian bookworm made with debootstrap from the machine's
#     apt mirror and imported into podman as localhost/gradserve-base:...; it is
#     passed to the Dockerfile as BASE_IMAGE (its default, python:3.11-slim, is
#     for everyone else). It is cached, so only the first run pays for it;
#   * nothing is ever pulled (--pull=never): only localhost/ images are used;
#   * pip inside the build reaches the machine's configured package index over
#     the host network, trusting the machine's CA bundle (bind-mounted).
#
# Every prerequisite it cannot get is reported and the script exits non-zero:
# it never passes without having built and run the image.
#
# Needs root (apt-get, debootstrap, root podman) and the test virtualenv (.venv with
# the [test] extras: `make docker-smoke` makes it). Environment knobs:
#   GRADSERVE_SMOKE_CACHE   cache dir (podman storage + base image), default
#                           /var/cache/gradserve-smoke
#   GRADSERVE_DEBIAN_MIRROR Debian mirror for debootstrap (default: read from
#                           /etc/apt/sources.list*)
#   GRADSERVE_SMOKE_KEEP=1  keep the container running at the end (debugging)
#   GRADSERVE_SMOKE_NO_INSTALL=1  never apt-get install; fail if a tool is missing
#   GRADSERVE_SMOKE_SCALE=0 the same as --no-scale
#   GRADSERVE_SMOKE_CONTEXT another build context (only to test this script)
#   GRADSERVE_SMOKE_PYTHON  the interpreter that runs pytest (default .venv/bin/python)
set -Eeuo pipefail

readonly BASE_RECIPE=1   # bump when the debootstrap recipe below changes
readonly SUITE=bookworm
readonly BASE_IMAGE="localhost/gradserve-base:${SUITE}-r${BASE_RECIPE}"
readonly IMAGE=localhost/gradserve:smoke

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/.." && pwd)"
# The build context (the repository root; another tree only to test this script).
CONTEXT="$(cd "${GRADSERVE_SMOKE_CONTEXT:-$ROOT}" && pwd)"
CACHE="${GRADSERVE_SMOKE_CACHE:-/var/cache/gradserve-smoke}"
PY="${GRADSERVE_SMOKE_PYTHON:-$ROOT/.venv/bin/python}"
CTR="gradserve-smoke-$$"
T0=$(date +%s)
LAST=$T0

log() { printf '[smoke %4ss] %s\n' "$(($(date +%s) - T0))" "$*"; }
phase() {
    local now
    now=$(date +%s)
    log "done: $1 ($((now - LAST)) s)"
    LAST=$now
}
# podman without systemd logs harmless "unable to get systemd connection" errors for
# healthcheck timers (we run the HEALTHCHECK by hand instead): keep them out.
quiet_podman() { podman "$@" 2> >(grep -v 'systemd connection' >&2); }
die() {
    printf '[smoke] FAIL: %s\n' "$*" >&2
    exit 1
}

RUNNING=() # containers this run started, removed on exit
cleanup() {
    local rc=$? c
    if [[ "${GRADSERVE_SMOKE_KEEP:-0}" != 1 ]]; then
        for c in "${RUNNING[@]}"; do
            podman rm -f -t 5 "$c" >/dev/null 2>&1 || true
        done
    fi
    [[ -n "${ROOTFS_TMP:-}" && -d "${ROOTFS_TMP}" ]] && rm -rf "$ROOTFS_TMP"
    if ((rc == 0)); then
        log "PASS (total $(($(date +%s) - T0)) s)"
    else
        printf '[smoke] FAILED with exit code %s after %s s\n' "$rc" "$(($(date +%s) - T0))" >&2
    fi
}
SCALE=${GRADSERVE_SMOKE_SCALE:-1}
for arg in "$@"; do
    case "$arg" in
        --no-scale) SCALE=0 ;;
        --scale) SCALE=1 ;;
        -h | --help)
            sed -n '2,/^set -E/p' "${BASH_SOURCE[0]}" | sed '$d' | cut -c3-
            exit 0
            ;;
        *) die "unknown argument $arg (--scale, --no-scale)" ;;
    esac
done

trap cleanup EXIT

# --- 1. prerequisites ---------------------------------------------------------
[[ "$(uname -s)" == Linux ]] || die "needs Linux (podman + runc); this is $(uname -s)"
((EUID == 0)) || die "needs root (apt-get, debootstrap and root podman); run it as root or with sudo"
for f in "$ROOT/docker/Dockerfile" "$CONTEXT/pyproject.toml" "$CONTEXT/README.md"; do
    [[ -f "$f" ]] || die "missing $f (the image build copies it)"
done
for d in gradcore engine service client; do
    [[ -d "$CONTEXT/$d" ]] || die "missing $CONTEXT/$d/ (the image build copies it)"
done
[[ -x "$PY" ]] || die "no $PY to run tests/image (make docker-smoke makes .venv; or set GRADSERVE_SMOKE_PYTHON)"
(cd "$ROOT" && "$PY" -c 'import pytest, httpx, client') ||
    die "$PY cannot import pytest, httpx and client (pip install -e '.[server,test]')"

PKGS=(podman runc conmon debootstrap uidmap fuse-overlayfs slirp4netns
      containernetworking-plugins debian-archive-keyring ca-certificates)
need_install=()
for cmd in podman runc conmon debootstrap newuidmap; do
    command -v "$cmd" >/dev/null 2>&1 || need_install+=("$cmd")
done
[[ -f /usr/share/keyrings/debian-archive-keyring.gpg ]] || need_install+=(keyring)
if ((${#need_install[@]})); then
    [[ "${GRADSERVE_SMOKE_NO_INSTALL:-0}" == 1 ]] &&
        die "missing ${need_install[*]} and GRADSERVE_SMOKE_NO_INSTALL=1"
    command -v apt-get >/dev/null || die "missing ${need_install[*]} and no apt-get to install them"
    log "installing Debian packages: ${PKGS[*]} (missing: ${need_install[*]})"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq || die "apt-get update failed"
    apt-get install -y -qq --no-install-recommends "${PKGS[@]}" >/dev/null ||
        die "apt-get install ${PKGS[*]} failed"
fi
for cmd in podman runc debootstrap python3; do
    command -v "$cmd" >/dev/null || die "$cmd still not found after installing"
done
phase "prerequisites ($(podman --version), $(runc --version | head -1))"

# --- 2. podman configuration (ours, not the machine's) -------------------------
export CONTAINERS_CONF="$ROOT/docker/podman/containers.conf"
export CONTAINERS_REGISTRIES_CONF="$ROOT/docker/podman/registries.conf"
mkdir -p "$CACHE"
storage_conf() { # driver
    mkdir -p "$CACHE/storage-$1"
    cat >"$CACHE/storage-$1.conf" <<EOF
[storage]
driver = "$1"
graphroot = "$CACHE/storage-$1"
runroot = "/run/gradserve-smoke/storage-$1"
EOF
    echo "$CACHE/storage-$1.conf"
}
DRIVER=""
for drv in ${GRADSERVE_SMOKE_STORAGE_DRIVER:-overlay vfs}; do
    export CONTAINERS_STORAGE_CONF
    CONTAINERS_STORAGE_CONF="$(storage_conf "$drv")"
    if out=$(podman info --format '{{.Store.GraphDriverName}} {{.Host.OCIRuntime.Name}}' 2>&1); then
        DRIVER=$drv
        log "podman storage driver $drv, runtime: ${out#* }"
        break
    fi
    log "podman storage driver $drv unusable here: $out"
done
[[ -n "$DRIVER" ]] || die "podman works with no storage driver (tried ${GRADSERVE_SMOKE_STORAGE_DRIVER:-overlay vfs})"
podman run --help >/dev/null 2>&1 || die "podman run is broken"
phase "podman configured"

# --- 3. the base image: Debian bookworm by debootstrap, cached ------------------
debian_mirror() {
    if [[ -n "${GRADSERVE_DEBIAN_MIRROR:-}" ]]; then
        echo "$GRADSERVE_DEBIAN_MIRROR"
        return
    fi
    # deb822 (*.sources: "URIs:") or one-line ("deb URL suite ...") entries that
    # carry the plain Debian archive (not -security, not third-party repos).
    local f line
    for f in /etc/apt/sources.list.d/*.sources /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
        [[ -f "$f" ]] || continue
        if [[ "$f" == *.sources ]]; then
            line=$(awk 'tolower($1)=="uris:" {for (i=2;i<=NF;i++) print $i}' "$f" |
                grep -E '/debian/?$' | grep -v -- '-security' | head -1 || true)
        else
            line=$(awk '$1=="deb" {for (i=2;i<=NF;i++) if ($i ~ /^(https?|file):/) {print $i; break}}' "$f" |
                grep -E '/debian/?$' | grep -v -- '-security' | head -1 || true)
        fi
        if [[ -n "$line" ]]; then
            echo "$line"
            return
        fi
    done
    echo "http://deb.debian.org/debian"
}

if podman image exists "$BASE_IMAGE"; then
    log "base image $BASE_IMAGE cached in $CACHE"
else
    MIRROR=$(debian_mirror)
    log "making $BASE_IMAGE with debootstrap $SUITE from $MIRROR (first run only)"
    ROOTFS_TMP=$(mktemp -d "$CACHE/rootfs.XXXXXX")
    if ! debootstrap --variant=minbase --components=main \
        --include=python3,python3-venv,python3-pip,ca-certificates \
        "$SUITE" "$ROOTFS_TMP" "$MIRROR" >"$CACHE/debootstrap.log" 2>&1; then
        tail -20 "$CACHE/debootstrap.log" >&2
        die "debootstrap $SUITE from $MIRROR failed (log: $CACHE/debootstrap.log)"
    fi
    # Keep it small: no package caches or lists (the image never runs apt).
    rm -rf "$ROOTFS_TMP"/var/cache/apt/archives/*.deb "$ROOTFS_TMP"/var/lib/apt/lists/* \
        "$ROOTFS_TMP"/usr/share/doc/* "$ROOTFS_TMP"/usr/share/man/* "$ROOTFS_TMP"/usr/share/locale/*
    [[ -x "$ROOTFS_TMP/usr/bin/python3" ]] || die "the debootstrap rootfs has no python3"
    tar --numeric-owner -C "$ROOTFS_TMP" -c . |
        podman import \
            --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
            --change 'ENV LANG=C.UTF-8' \
            --change 'CMD ["python3"]' \
            --change "LABEL org.opencontainers.image.description=\"Debian $SUITE + python3 (debootstrap, gradserve smoke base r$BASE_RECIPE)\"" \
            -q - "$BASE_IMAGE" >/dev/null || die "podman import of the rootfs failed"
    rm -rf "$ROOTFS_TMP"
    ROOTFS_TMP=""
fi
podman run --rm --pull=never --network=none "$BASE_IMAGE" \
    python3 -c 'import sys, venv, ssl; assert sys.version_info >= (3, 11), sys.version' ||
    die "the base image $BASE_IMAGE cannot run python3 >= 3.11 (podman/runc problem?)"
phase "base image $BASE_IMAGE"

# --- 4. build -------------------------------------------------------------------
pip_index() {
    # The machine's configured index, when it is one a container can reach
    # (http/https; file:// indexes and find-links are paths on this machine).
    local url="${PIP_INDEX_URL:-}"
    [[ -z "$url" ]] && url=$(python3 -m pip config get global.index-url 2>/dev/null || true)
    [[ -z "$url" ]] && url=$(python3 -m pip config get install.index-url 2>/dev/null || true)
    if [[ "$url" =~ ^https?:// ]]; then echo "$url"; else echo "https://pypi.org/simple"; fi
}
INDEX=$(pip_index)
CA_BUNDLE=""
for f in "${PIP_CERT:-}" "${SSL_CERT_FILE:-}" /etc/ssl/certs/ca-certificates.crt; do
    if [[ -n "$f" && -f "$f" ]]; then CA_BUNDLE=$f; break; fi
done
build_args=(--pull=never --network=host --format docker --layers
    -f "$ROOT/docker/Dockerfile" --ignorefile "$ROOT/docker/Dockerfile.dockerignore" -t "$IMAGE"
    --build-arg "BASE_IMAGE=$BASE_IMAGE" --build-arg "PIP_INDEX_URL=$INDEX")
[[ -n "$CA_BUNDLE" ]] && build_args+=(-v "$CA_BUNDLE:/etc/ssl/certs/ca-certificates.crt:ro")
log "podman build (pip index $INDEX${CA_BUNDLE:+, CA bundle $CA_BUNDLE})"
old_id=$(podman image inspect --format '{{.Id}}' "$IMAGE" 2>/dev/null || true)
if ! podman build "${build_args[@]}" "$CONTEXT" >"$CACHE/build.log" 2>&1; then
    tail -40 "$CACHE/build.log" >&2
    die "podman build failed (full log: $CACHE/build.log)"
fi
new_id=$(podman image inspect --format '{{.Id}}' "$IMAGE")
# Drop the previous build's image (not the layer cache) so the cache dir does not grow.
[[ -n "$old_id" && "$old_id" != "$new_id" ]] && podman rmi "$old_id" >/dev/null 2>&1 || true
[[ "$(podman image inspect --format '{{.Config.User}}' "$IMAGE")" =~ ^[1-9][0-9]*(:[0-9]+)?$ ]] ||
    die "the image's USER is not a non-root numeric uid"
podman image inspect --format '{{json .Config.Healthcheck}}' "$IMAGE" | grep -q healthz ||
    die "the image has no HEALTHCHECK on /healthz (built without --format docker?)"
phase "image $IMAGE built ($(podman image inspect --format '{{.Size}}' "$IMAGE" | awk '{printf "%.0f MB", $1/1e6}'))"

# --- 5. run -----------------------------------------------------------------------
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
run_replica() { # name port
    # Host networking, bound to 127.0.0.1 only: no traffic leaves loopback (the
    # image's own default is GRADSERVE_HOST=0.0.0.0, for a published port).
    # Hardened as in compose.yml: read-only root, no capabilities, no new privileges.
    quiet_podman run -d --pull=never --name "$1" --network=host \
        --read-only --cap-drop=ALL --security-opt=no-new-privileges \
        -e GRADSERVE_HOST=127.0.0.1 -e GRADSERVE_PORT="$2" \
        "$IMAGE" >/dev/null || die "podman run $1 failed"
    RUNNING+=("$1")
}
wait_http() { # container url
    local deadline=$(($(date +%s) + 90))
    until python3 -c "import urllib.request; urllib.request.urlopen('$2', timeout=2)" 2>/dev/null; do
        if [[ "$(podman inspect --format '{{.State.Running}}' "$1" 2>/dev/null)" != true ]]; then
            podman logs "$1" 2>&1 | tail -40 >&2
            die "container $1 exited before $2 answered"
        fi
        if (($(date +%s) > deadline)); then
            podman logs "$1" 2>&1 | tail -40 >&2
            die "$2 did not answer within 90 s"
        fi
        sleep 0.5
    done
}
PORT=$(free_port)
run_replica "$CTR" "$PORT"
BASE_URL="http://127.0.0.1:$PORT"
log "container $CTR started, waiting for $BASE_URL/healthz"
wait_http "$CTR" "$BASE_URL/healthz"
phase "/healthz answers"

podman healthcheck run "$CTR" >/dev/null 2>&1 ||
    die "the image's HEALTHCHECK command fails inside the container"
# One server process (sessions are in memory), not root.
mapfile -t procs < <(podman top "$CTR" user pid args | tail -n +2)
((${#procs[@]} == 1)) || {
    printf '  %s\n' "${procs[@]}" >&2
    die "expected exactly one process in the container, found ${#procs[@]}"
}
[[ "${procs[0]}" =~ ^(root|0)[[:space:]] ]] && die "the server runs as root: ${procs[0]}"
log "one process: ${procs[0]}"

# --- 6. the HTTP checks, in pytest -----------------------------------------------------
image_tests() { # test file, then VAR=value settings for it
    local file=$1
    shift
    (cd "$ROOT" && env "$@" "$PY" -m pytest -p no:cacheprovider -q -rA "tests/image/$file")
}
image_tests test_image_http.py GRADSERVE_IMAGE_URL="$BASE_URL" ||
    die "tests/image/test_image_http.py failed against the image ($BASE_URL)"
phase "tests/image/test_image_http.py against the image"

# --- 7. stop ------------------------------------------------------------------------
if [[ "${GRADSERVE_SMOKE_KEEP:-0}" == 1 ]]; then
    log "GRADSERVE_SMOKE_KEEP=1: leaving $CTR running on $BASE_URL"
    exit 0
fi
stop_clean() { # container: SIGTERM, expect exit code 0, remove
    quiet_podman stop -t 15 "$1" >/dev/null || die "podman stop $1 failed"
    local code
    code=$(podman inspect --format '{{.State.ExitCode}}' "$1")
    [[ "$code" == 0 ]] || {
        podman logs "$1" 2>&1 | tail -20 >&2
        die "$1 exited with code $code on SIGTERM (expected a clean 0)"
    }
    quiet_podman rm "$1" >/dev/null
}
stop_clean "$CTR"
RUNNING=()
phase "stopped cleanly on SIGTERM and removed"

# --- 8. scale-out: compose.yml's "lb" service, by hand ------------------------------
# Two replicas of the image and nginx started the way compose.yml's lb starts it
# (docker/nginx mounted read-only, entrypoint.sh renders the template), all on
# 127.0.0.1 ports. nginx comes from Debian in a local image, since nginx:*-alpine
# cannot be pulled here.
if [[ "$SCALE" != 1 ]]; then
    log "scale-out part skipped (--no-scale)"
    exit 0
fi
NGINX_IMAGE="localhost/gradserve-nginx:${SUITE}-r${BASE_RECIPE}"
if ! podman image exists "$NGINX_IMAGE"; then
    log "making $NGINX_IMAGE (Debian nginx-light on the base image)"
    cat >"$CACHE/Containerfile.nginx" <<EOF
FROM $BASE_IMAGE
RUN apt-get update && apt-get install -y --no-install-recommends nginx-light \\
    && rm -rf /var/lib/apt/lists/* /etc/nginx/sites-enabled/default
EOF
    if ! podman build --pull=never --network=host --format docker -t "$NGINX_IMAGE" \
        -f "$CACHE/Containerfile.nginx" "$CACHE" >"$CACHE/nginx-build.log" 2>&1; then
        tail -20 "$CACHE/nginx-build.log" >&2
        die "building $NGINX_IMAGE failed (log: $CACHE/nginx-build.log)"
    fi
fi
P1=$(free_port)
P2=$(free_port)
PLB=$(free_port)
run_replica "$CTR-r1" "$P1"
run_replica "$CTR-r2" "$P2"
quiet_podman run -d --pull=never --name "$CTR-lb" --network=host \
    -v "$ROOT/docker/nginx:/opt/gradserve-nginx:ro" \
    -e GRADSERVE_UPSTREAMS="127.0.0.1:$P1 127.0.0.1:$P2" -e GRADSERVE_LB_LISTEN="127.0.0.1:$PLB" \
    --entrypoint '["/bin/sh", "/opt/gradserve-nginx/entrypoint.sh"]' \
    "$NGINX_IMAGE" >/dev/null || die "podman run of the lb failed"
RUNNING+=("$CTR-lb")
wait_http "$CTR-r1" "http://127.0.0.1:$P1/healthz"
wait_http "$CTR-r2" "http://127.0.0.1:$P2/healthz"
wait_http "$CTR-lb" "http://127.0.0.1:$PLB/lb-healthz"
phase "two replicas + nginx up (lb on 127.0.0.1:$PLB)"

image_tests test_image_pair.py GRADSERVE_IMAGE_LB_URL="http://127.0.0.1:$PLB" \
    GRADSERVE_IMAGE_REPLICAS="127.0.0.1:$P1 127.0.0.1:$P2" ||
    die "tests/image/test_image_pair.py failed through nginx (127.0.0.1:$PLB)"
phase "scale-out through nginx"
stop_clean "$CTR-lb"
stop_clean "$CTR-r1"
stop_clean "$CTR-r2"
RUNNING=()
phase "scale-out containers stopped and removed"
