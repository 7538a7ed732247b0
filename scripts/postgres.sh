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
#
# scripts/pgvector.sh starts a second server, one with the pgvector extension, with
# these same functions (IRONLOOP_PG_FUNCTIONS_ONLY=1 sources them without starting one).

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

# Stops every server this shell started (IRONLOOP_PG_CLUSTERS: "bindir:dir" words)
# and removes its directories (IRONLOOP_PG_REMOVE: more of them).
ironloop_pg_stop() {
  local c
  for c in ${IRONLOOP_PG_CLUSTERS:-}; do
    if [ -d "${c#*:}" ]; then
      ironloop_pg_as "${c%%:*}/pg_ctl" -D "${c#*:}/data" -m immediate -w stop >/dev/null 2>&1 || true
      rm -rf "${c#*:}"
    fi
  done
  for c in ${IRONLOOP_PG_REMOVE:-}; do
    rm -rf "$c"
  done
  IRONLOOP_PG_CLUSTERS=""
  IRONLOOP_PG_REMOVE=""
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
  ironloop_pg_cluster "$IRONLOOP_PG_BIN" || return 1
  export IRONLOOP_TEST_POSTGRES_URL="$IRONLOOP_PG_URL"
}

# Starts a new cluster of the server in bin dir $1 in a temporary directory, on a free
# loopback port; sets IRONLOOP_PG_URL to it.
ironloop_pg_cluster() {
  local bin="$1" dir port
  dir="$(mktemp -d "${TMPDIR:-/tmp}/ironloop-pg.XXXXXX")"
  IRONLOOP_PG_CLUSTERS="${IRONLOOP_PG_CLUSTERS:-} $bin:$dir"
  if [ "$(id -u)" -eq 0 ]; then
    chown postgres: "$dir"
  fi
  port="$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
  ironloop_pg_as "$bin/initdb" -D "$dir/data" -A trust -U postgres \
    -E UTF8 --no-sync >"$dir/initdb.log" 2>&1 || {
    cat "$dir/initdb.log" >&2
    return 1
  }
  ironloop_pg_as "$bin/pg_ctl" -D "$dir/data" -l "$dir/server.log" \
    -o "-p $port -k $dir -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=200" \
    -w start >/dev/null || {
    cat "$dir/server.log" >&2
    return 1
  }
  IRONLOOP_PG_URL="postgresql://postgres@127.0.0.1:$port/postgres"
  echo "PostgreSQL: a throwaway server on 127.0.0.1:$port ($("$bin/postgres" --version))"
}

if [ -n "${IRONLOOP_PG_FUNCTIONS_ONLY:-}" ]; then
  : # scripts/pgvector.sh: the functions only
elif [ "${BASH_SOURCE[0]}" = "$0" ]; then
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
