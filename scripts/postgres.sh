#!/usr/bin/env bash
# A throwaway PostgreSQL server for the tests (PostgresSaver), or the one you name.
#
#   source scripts/postgres.sh        # starts one, exports IRONLOOP_TEST_POSTGRES_URL,
#                                     # stops it when the sourcing shell exits
#   bash scripts/postgres.sh CMD ...  # runs CMD with a server, then stops it
#
# If IRONLOOP_TEST_POSTGRES_URL is already set, that server is used and nothing is
# started. Otherwise Debian's `postgresql` package is installed with apt when missing
# (as root), and a new cluster runs in a temporary directory on a free loopback port,
# as the `postgres` user when run as root (the server refuses to run as root), with
# trust authentication and fsync off (it is thrown away at exit).

ironloop_pg_bindir() {
  local d
  for d in $(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V -r); do
    if [ -x "$d/initdb" ] && [ -x "$d/pg_ctl" ]; then
      echo "$d"
      return 0
    fi
  done
  if command -v initdb >/dev/null 2>&1 && command -v pg_ctl >/dev/null 2>&1; then
    dirname "$(command -v initdb)"
    return 0
  fi
  return 1
}

ironloop_pg_stop() {
  if [ -n "${IRONLOOP_PG_DIR:-}" ] && [ -d "$IRONLOOP_PG_DIR" ]; then
    ironloop_pg_as "$IRONLOOP_PG_BIN/pg_ctl" -D "$IRONLOOP_PG_DIR/data" -m immediate \
      -w stop >/dev/null 2>&1 || true
    rm -rf "$IRONLOOP_PG_DIR"
  fi
  IRONLOOP_PG_DIR=""
}

# Runs a server binary as the user that owns the cluster.
ironloop_pg_as() {
  if [ "$(id -u)" -eq 0 ]; then
    runuser -u postgres -- "$@"
  else
    "$@"
  fi
}

ironloop_pg_start() {
  if [ -n "${IRONLOOP_TEST_POSTGRES_URL:-}" ]; then
    echo "PostgreSQL: using IRONLOOP_TEST_POSTGRES_URL"
    return 0
  fi
  if ! IRONLOOP_PG_BIN="$(ironloop_pg_bindir)"; then
    if [ "$(id -u)" -ne 0 ]; then
      echo "PostgreSQL is not installed and this is not root: install Debian's" \
        "'postgresql' package, or set IRONLOOP_TEST_POSTGRES_URL to a server" \
        "(postgresql://user@host:port/db) the tests may create tables in" >&2
      return 1
    fi
    echo "PostgreSQL: installing Debian's postgresql package"
    DEBIAN_FRONTEND=noninteractive apt-get update -qq >/dev/null
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >/dev/null
    IRONLOOP_PG_BIN="$(ironloop_pg_bindir)" || {
      echo "PostgreSQL: installed, but no initdb / pg_ctl found" >&2
      return 1
    }
  fi
  IRONLOOP_PG_DIR="$(mktemp -d "${TMPDIR:-/tmp}/ironloop-pg.XXXXXX")"
  if [ "$(id -u)" -eq 0 ]; then
    chown postgres: "$IRONLOOP_PG_DIR"
  fi
  local port
  port="$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
  ironloop_pg_as "$IRONLOOP_PG_BIN/initdb" -D "$IRONLOOP_PG_DIR/data" -A trust -U postgres \
    -E UTF8 --no-sync >"$IRONLOOP_PG_DIR/initdb.log" 2>&1 || {
    cat "$IRONLOOP_PG_DIR/initdb.log" >&2
    ironloop_pg_stop
    return 1
  }
  ironloop_pg_as "$IRONLOOP_PG_BIN/pg_ctl" -D "$IRONLOOP_PG_DIR/data" -l "$IRONLOOP_PG_DIR/server.log" \
    -o "-p $port -k $IRONLOOP_PG_DIR -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=200" \
    -w start >/dev/null || {
    cat "$IRONLOOP_PG_DIR/server.log" >&2
    ironloop_pg_stop
    return 1
  }
  export IRONLOOP_TEST_POSTGRES_URL="postgresql://postgres@127.0.0.1:$port/postgres"
  echo "PostgreSQL: a throwaway server on 127.0.0.1:$port ($("$IRONLOOP_PG_BIN/postgres" --version))"
}

if [ "${BASH_SOURCE[0]}" = "$0" ]; then
  # Run as a command: start, run the arguments, stop.
  set -euo pipefail
  trap ironloop_pg_stop EXIT
  ironloop_pg_start
  if [ "$#" -gt 0 ]; then
    "$@"
  fi
else
  trap ironloop_pg_stop EXIT
  ironloop_pg_start
fi
