#!/usr/bin/env bash
# Headless Chromium and its WebDriver for the web UI's browser test
# (tests/python/test_serve_ui_browser.py).
#
#   source scripts/chromium.sh        # installs them if missing, exports IRONLOOP_CHROMIUM
#                                     # and IRONLOOP_CHROMEDRIVER
#   bash scripts/chromium.sh          # the same, for a shell that only wants them installed
#
# If IRONLOOP_CHROMIUM and IRONLOOP_CHROMEDRIVER are already set, those are used.
# Otherwise Debian's `chromium` and `chromium-driver` packages are installed with apt when
# missing (as root), as scripts/postgres.sh installs PostgreSQL.

ironloop_chromium_find() {
  IRONLOOP_CHROMIUM="${IRONLOOP_CHROMIUM:-$(command -v chromium || command -v chromium-browser || true)}"
  IRONLOOP_CHROMEDRIVER="${IRONLOOP_CHROMEDRIVER:-$(command -v chromedriver || true)}"
  [ -n "$IRONLOOP_CHROMIUM" ] && [ -n "$IRONLOOP_CHROMEDRIVER" ]
}

ironloop_chromium_setup() {
  if ! ironloop_chromium_find; then
    if [ "$(id -u)" -ne 0 ]; then
      echo "Chromium is not installed and this is not root: install Debian's 'chromium'" \
        "and 'chromium-driver' packages, or set IRONLOOP_CHROMIUM and" \
        "IRONLOOP_CHROMEDRIVER to a Chromium and its matching chromedriver" >&2
      return 1
    fi
    echo "Chromium: installing Debian's chromium and chromium-driver packages"
    DEBIAN_FRONTEND=noninteractive apt-get update -qq >/dev/null
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium chromium-driver >/dev/null
    IRONLOOP_CHROMIUM="" IRONLOOP_CHROMEDRIVER=""
    ironloop_chromium_find || {
      echo "Chromium: installed, but no chromium / chromedriver on PATH" >&2
      return 1
    }
  fi
  export IRONLOOP_CHROMIUM IRONLOOP_CHROMEDRIVER
  echo "Chromium: $("$IRONLOOP_CHROMIUM" --version 2>/dev/null | head -1)," \
    "$("$IRONLOOP_CHROMEDRIVER" --version 2>/dev/null | head -1 | cut -d' ' -f1-2)"
}

if [ "${BASH_SOURCE[0]}" = "$0" ]; then
  set -euo pipefail
fi
ironloop_chromium_setup
