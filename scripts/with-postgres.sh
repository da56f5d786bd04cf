#!/usr/bin/env bash
# scripts/with-postgres.sh COMMAND...: runs COMMAND with a private, throwaway PostgreSQL server
# (Debian's postgresql package) and its connection string in $GPUWASM_TEST_POSTGRES, then stops
# the server and removes its files. The server listens only on a Unix socket in its own
# temporary directory, with trust authentication, so it touches nothing else on the machine.
# Without PostgreSQL installed, COMMAND runs without it (the PostgreSQL tests say they skip).
# As root, the server runs as the `postgres` user (PostgreSQL refuses to run as root).
set -euo pipefail
bindir=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1 || true)
if [[ -n "${GPUWASM_TEST_POSTGRES:-}" || -z "$bindir" || ! -x "$bindir/initdb" ]]; then
  [[ -n "${GPUWASM_TEST_POSTGRES:-}" || -n "$bindir" ]] || echo "with-postgres: PostgreSQL is not installed: its tests will skip" >&2
  exec "$@"
fi
dir=$(mktemp -d "${TMPDIR:-/tmp}/gpuwasm-pg.XXXXXX")
as=()
if [[ $(id -u) -eq 0 ]]; then
  chown postgres: "$dir"
  as=(runuser -u postgres --)
fi
stop() {
  "${as[@]}" "$bindir/pg_ctl" -D "$dir/data" -m immediate stop >/dev/null 2>&1 || true
  rm -rf "$dir"
}
trap stop EXIT
"${as[@]}" "$bindir/initdb" -D "$dir/data" -U postgres --auth=trust -E UTF8 --locale=C.UTF-8 >"$dir/initdb.log" 2>&1 ||
  { cat "$dir/initdb.log" >&2; exit 1; }
"${as[@]}" "$bindir/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 60 \
  -o "-c listen_addresses='' -c unix_socket_directories='$dir' -c max_connections=200 -c fsync=off" start >/dev/null ||
  { cat "$dir/server.log" >&2; exit 1; }
export GPUWASM_TEST_POSTGRES="host=$dir port=5432 user=postgres dbname=postgres"
echo "with-postgres: PostgreSQL $("$bindir/postgres" --version | awk '{print $3}') on $dir" >&2
"$@"
