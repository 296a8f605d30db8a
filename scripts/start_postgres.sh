#!/usr/bin/env bash
# Start (or reuse) a throwaway PostgreSQL server on loopback for the store tests and print
# its SQLAlchemy URL on stdout. Installs Debian's postgresql when it is missing (needs root).
set -euo pipefail
PORT=${GYMHUB_PG_PORT:-55432}
DATA=${GYMHUB_PG_DIR:-/tmp/gymhub-pg-$PORT}
find_bin() { ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1; }
PGBIN=$(find_bin || true)
if [ -z "$PGBIN" ] || ! id postgres >/dev/null 2>&1; then
  echo "installing postgresql from Debian ..." >&2
  apt-get update -qq >&2
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >&2
  PGBIN=$(find_bin)
fi
as_pg() { runuser -u postgres -- "$@"; }
if ! "$PGBIN/pg_isready" -q -h 127.0.0.1 -p "$PORT"; then
  rm -rf "$DATA" && mkdir -p "$DATA" && chown postgres "$DATA"
  as_pg "$PGBIN/initdb" -D "$DATA" -A trust -U gymhub >/dev/null
  as_pg "$PGBIN/pg_ctl" -D "$DATA" -l "$DATA/server.log" -w \
    -o "-p $PORT -k $DATA -c listen_addresses=127.0.0.1 -c fsync=off" start >&2
  as_pg "$PGBIN/createdb" -h 127.0.0.1 -p "$PORT" -U gymhub gymhub_test
fi
echo "postgresql+psycopg://gymhub@127.0.0.1:$PORT/gymhub_test"
