#!/usr/bin/env bash
# stop.sh DATA_DIR: stops the server start.sh started there.
set -euo pipefail
data=$(realpath "$1")
bindir=$( (pg_config --bindir 2>/dev/null || true) | head -1)
if [ ! -x "$bindir/pg_ctl" ]; then
  bindir=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)
fi
as=()
if [ "$(id -u)" = 0 ]; then as=(runuser -u postgres --); fi
"${as[@]}" "$bindir/pg_ctl" -D "$data/db" -m fast -w stop >/dev/null
