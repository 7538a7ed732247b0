#!/usr/bin/env bash
# A throwaway PostgreSQL server with the pgvector extension, for PostgresStore's
# pgvector search (tests/python/test_store_pgvector.py, LangGraph's store tests).
#
#   source scripts/pgvector.sh        # starts one, exports IRONLOOP_TEST_PGVECTOR_URL,
#                                     # stops it when the sourcing shell exits
#   bash scripts/pgvector.sh CMD ...  # runs CMD with a server, then stops it
#
# If IRONLOOP_TEST_PGVECTOR_URL is already set, that server is used. Otherwise the
# server is the one the PyPI package `pgserver` ships (PostgreSQL 16 with pgvector
# 0.6; requirements-dev.txt installs it): Debian 12 packages no pgvector for its
# PostgreSQL 15. Its binaries are copied out of the virtualenv into the temporary
# directory, where the `postgres` user may run them when this runs as root (a venv
# under /root is not readable by others), and started as scripts/postgres.sh starts
# Debian's. Works sourced alongside scripts/postgres.sh: both servers stop at exit.

IRONLOOP_PG_FUNCTIONS_ONLY=1 source "$(dirname "${BASH_SOURCE[0]}")/postgres.sh"

ironloop_pgvector_start() {
  if [ -n "${IRONLOOP_TEST_PGVECTOR_URL:-}" ]; then
    echo "PostgreSQL with pgvector: using IRONLOOP_TEST_PGVECTOR_URL"
    return 0
  fi
  local pkg copy
  # The package's directory, found without importing it (its import creates dirs).
  pkg="$(python -c 'import importlib.util as u; s = u.find_spec("pgserver"); print(s.submodule_search_locations[0] if s else "")')"
  if [ -z "$pkg" ] || [ ! -x "$pkg/pginstall/bin/postgres" ]; then
    echo "PostgreSQL with pgvector: the 'pgserver' package is not installed in this" \
      "Python: pip install -r requirements-dev.txt, or set IRONLOOP_TEST_PGVECTOR_URL to a" \
      "server with pgvector (postgresql://user@host:port/db) the tests may create tables in" >&2
    return 1
  fi
  copy="$(mktemp -d "${TMPDIR:-/tmp}/ironloop-pgvector.XXXXXX")"
  IRONLOOP_PG_REMOVE="${IRONLOOP_PG_REMOVE:-} $copy"
  # The binaries find their libraries at $ORIGIN/../../../pgserver.libs: the same
  # layout is kept.
  mkdir -p "$copy/pgserver"
  cp -a "$pkg/pginstall" "$copy/pgserver/"
  if [ -d "$pkg/../pgserver.libs" ]; then
    cp -a "$pkg/../pgserver.libs" "$copy/"
  fi
  chmod -R a+rX "$copy"
  ironloop_pg_cluster "$copy/pgserver/pginstall/bin" || return 1
  export IRONLOOP_TEST_PGVECTOR_URL="$IRONLOOP_PG_URL"
}

if [ "${BASH_SOURCE[0]}" = "$0" ]; then
  set -euo pipefail
  trap ironloop_pg_stop EXIT
  ironloop_pgvector_start
  if [ "$#" -gt 0 ]; then
    "$@"
  fi
else
  trap ironloop_pg_stop EXIT
  ironloop_pgvector_start
fi
