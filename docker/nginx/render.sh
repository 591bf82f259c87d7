#!/bin/sh
# Render gradserve.conf.template (next to this script) to stdout. POSIX sh, so it
# runs in the official nginx images (alpine/busybox or Debian) and on a host.
#   GRADSERVE_UPSTREAMS  replicas as host:port, separated by spaces or commas
#                        (required), e.g. "replica-1:8000 replica-2:8000"
#   GRADSERVE_LB_LISTEN  nginx's listen address (default 8080), e.g. 127.0.0.1:18080
#   GRADSERVE_UPSTREAM_PARAMS  server parameters (default "max_fails=1 fail_timeout=10s")
# Usage: render.sh > /etc/nginx/conf.d/default.conf
set -eu
here=$(cd "$(dirname "$0")" && pwd)
template="${GRADSERVE_LB_TEMPLATE:-$here/gradserve.conf.template}"
upstreams=$(printf '%s' "${GRADSERVE_UPSTREAMS:-}" | tr ',' ' ')
listen="${GRADSERVE_LB_LISTEN:-8080}"
params="${GRADSERVE_UPSTREAM_PARAMS:-max_fails=1 fail_timeout=10s}"

if [ -z "$(printf '%s' "$upstreams" | tr -d ' \t\n')" ]; then
    echo "render.sh: GRADSERVE_UPSTREAMS is empty (want host:port host:port ...)" >&2
    exit 2
fi
servers=""
for u in $upstreams; do
    case "$u" in
        *[!A-Za-z0-9_.:\[\]-]* | "" )
            echo "render.sh: bad upstream '$u' (want host:port)" >&2
            exit 2 ;;
    esac
    servers="${servers}    server $u $params;
"
done
case "$listen" in
    *[!A-Za-z0-9_.:\[\]\ -]* | "" )
        echo "render.sh: bad GRADSERVE_LB_LISTEN '$listen'" >&2
        exit 2 ;;
esac

# awk, not sed: the server list is several lines.
awk -v servers="$servers" -v listen="$listen" '
    $0 == "__GRADSERVE_SERVERS__" { printf "%s", servers; next }
    { gsub(/__GRADSERVE_LB_LISTEN__/, listen); print }
' "$template"
