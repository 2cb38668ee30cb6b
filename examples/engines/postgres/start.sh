#!/usr/bin/env bash
# start.sh DATA_DIR CORPUS_DIR: a throwaway PostgreSQL for ranklab, on loopback only.
# initdb in DATA_DIR/db (trust auth, C collation), start on a free 127.0.0.1 port (socket in
# DATA_DIR), load CORPUS_DIR (ranklab Markdown records) with load.js, print the port.
# Stop it with stop.sh DATA_DIR. As root, the server runs as the `postgres` user (initdb refuses
# root). Needs Debian's postgresql package and `npm ci` in this folder.
set -euo pipefail
data=$(realpath "$1")
corpus=$(realpath "$2")
here=$(dirname "$(realpath "$0")")
bindir=$( (pg_config --bindir 2>/dev/null || true) | head -1)
if [ ! -x "$bindir/initdb" ]; then
  bindir=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)
fi
[ -x "$bindir/initdb" ] || { echo "start.sh: initdb not found; apt-get install -y postgresql" >&2; exit 2; }
as=()
if [ "$(id -u)" = 0 ]; then
  chown postgres "$data"
  as=(runuser -u postgres --)
fi
"${as[@]}" "$bindir/initdb" -D "$data/db" -U ranklab --auth=trust --locale=C -E UTF8 >"$data/initdb.log" 2>&1 \
  || { cat "$data/initdb.log" >&2; exit 2; }
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
"${as[@]}" "$bindir/pg_ctl" -D "$data/db" -l "$data/server.log" -w \
  -o "-c listen_addresses=127.0.0.1 -c port=$port -c unix_socket_directories=$data -c fsync=off" start >/dev/null \
  || { cat "$data/server.log" >&2; exit 2; }
PGHOST=127.0.0.1 PGPORT=$port PGUSER=ranklab PGDATABASE=postgres node "$here/load.js" "$corpus" >&2
echo "$port"
