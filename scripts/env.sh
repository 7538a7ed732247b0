# Shared set-up for the project's scripts (sourced, not run): a virtualenv and a cargo
# target dir outside the clone, so repeated runs on one machine reuse both.
IRONLOOP_CACHE="${IRONLOOP_CACHE:-$HOME/.cache/ironloop}"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$IRONLOOP_CACHE/target}"
VENV="${IRONLOOP_VENV:-$IRONLOOP_CACHE/venv}"

step() { printf '\n=== %s\n' "$*"; }

if ! command -v cargo >/dev/null 2>&1; then
  echo "cargo is required (Rust toolchain): https://rustup.rs" >&2
  exit 1
fi
if [ ! -x "$VENV/bin/python" ]; then
  python3 -m venv "$VENV"
fi
# shellcheck disable=SC1091
source "$VENV/bin/activate"
req_stamp="$VENV/.requirements-$(cat requirements-dev.txt | sha1sum | cut -c1-12)"
if [ ! -f "$req_stamp" ]; then
  python -m pip install -q --upgrade pip
  python -m pip install -q -r requirements-dev.txt
  touch "$req_stamp"
fi

build_and_install() {
  rm -rf "$IRONLOOP_CACHE/wheels"
  maturin build --release --quiet -o "$IRONLOOP_CACHE/wheels"
  python -m pip install -q --force-reinstall --no-deps "$IRONLOOP_CACHE"/wheels/ironloop-*.whl
  python -m pip install -q "$IRONLOOP_CACHE"/wheels/ironloop-*.whl
  # tests/python/test_wheel.py installs this same wheel into a venv with no Rust.
  export IRONLOOP_WHEEL
  IRONLOOP_WHEEL="$(ls "$IRONLOOP_CACHE"/wheels/ironloop-*.whl)"
}
