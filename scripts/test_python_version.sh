#!/usr/bin/env bash
# The Python suite under another CPython, to check a version `requires-python` names:
#
#   bash scripts/test_python_version.sh /path/to/python3.13 [pytest args ...]
#
# Makes (once) a venv for that interpreter next to the default one
# ($IRONLOOP_CACHE/venv-pyXY) with requirements-dev.txt, builds a release wheel for
# it (`maturin build --release -i`), installs it, starts a throwaway PostgreSQL and
# runs `pytest tests/python` in it. The cargo target dir is shared with the other
# builds, so only the PyO3 glue is rebuilt per interpreter.
set -euo pipefail
cd "$(dirname "$0")/.."
PY="${1:?usage: bash scripts/test_python_version.sh PYTHON [pytest args ...]}"
shift
IRONLOOP_CACHE="${IRONLOOP_CACHE:-$HOME/.cache/ironloop}"
tag="$("$PY" -c 'import sys; print("py%d%d" % sys.version_info[:2])')"
export IRONLOOP_VENV="$IRONLOOP_CACHE/venv-$tag"
if [ ! -x "$IRONLOOP_VENV/bin/python" ]; then
  "$PY" -m venv "$IRONLOOP_VENV"
fi
# The venv above (requirements-dev.txt installed once per change of that file) and
# CARGO_TARGET_DIR.
source scripts/env.sh
step "$(python -VV)"

step "Build and install the wheel for $tag"
wheels="$IRONLOOP_CACHE/wheels-$tag"
rm -rf "$wheels"
maturin build --release --quiet -i "$IRONLOOP_VENV/bin/python" -o "$wheels"
python -m pip install -q --force-reinstall --no-deps "$wheels"/ironloop-*.whl
# tests/python/test_wheel.py installs this same wheel into a venv with no Rust.
export IRONLOOP_WHEEL
IRONLOOP_WHEEL="$(ls "$wheels"/ironloop-*.whl)"

step "PostgreSQL for the PostgresSaver tests"
source scripts/postgres.sh

step "Chromium for the web UI's browser tests"
source scripts/chromium.sh

step "Python: tests ($tag)"
python -m pytest tests/python -q -p no:cacheprovider "$@"
