#!/bin/sh
# Entrypoint of compose.yml's "lb" service: render the config, check it, run
# nginx in the foreground. Works in nginx:*-alpine and Debian-based nginx images.
set -eu
conf=/etc/nginx/conf.d/default.conf
sh "$(dirname "$0")/render.sh" > "$conf"
nginx -t
exec nginx -g 'daemon off;'
