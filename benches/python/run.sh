#!/usr/bin/env bash
# Run the Python benchmarks side by side with LangGraph.
#
#   benches/python/run.sh [--no-ironloop] [SCRIPT.py ...] [--] [ARGS ...]
#
# Creates (or reuses) a virtualenv at ${IRONLOOP_BENCH_VENV:-~/.cache/ironloop-bench-venv},
# installs benches/python/requirements.txt (the LangGraph comparison environment),
# installs ironloop from this repo (`pip install <repo root>`, a maturin release build)
# or from the wheel named by $IRONLOOP_WHEEL, then runs each SCRIPT.py (default:
# benches/python/tool_dispatch.py) with ARGS. Arguments ending in .py, up to the first
# other argument, are scripts; everything after them (or after `--`) goes to every script.
# A script is looked up relative to the current directory, then to benches/python.
#
#   --no-ironloop   do not (re)install ironloop: set up / use the comparison packages only
#                   (tool_dispatch.py then runs only the LangGraph half if ironloop is absent)
#
# Examples:
#   benches/python/run.sh
#   benches/python/run.sh tool_dispatch.py --repeat 7 --json /tmp/w123.json
#   benches/python/run.sh peers.py     # agno, pydantic-ai, openai-agents too (installs
#                                      # requirements-peers.txt first)
#   benches/python/run.sh threads.py   # W9 and thread loading (Postgres rows with
#                                      # IRONLOOP_TEST_POSTGRES_URL set)
#   benches/python/run.sh --no-ironloop tool_dispatch.py --only langgraph
#   IRONLOOP_WHEEL=target/wheels/ironloop-0.1.0-cp39-abi3-linux_x86_64.whl benches/python/run.sh
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
venv="${IRONLOOP_BENCH_VENV:-$HOME/.cache/ironloop-bench-venv}"
requirements="$here/requirements.txt"

install_ironloop=1
scripts=()
extra=()

while (($#)); do
    case "$1" in
        --no-ironloop) install_ironloop=0; shift ;;
        -h|--help) sed -n '2,24p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;;
        --) shift; extra+=("$@"); break ;;
        *.py)
            if ((${#extra[@]})); then extra+=("$1"); shift; continue; fi
            if [[ -f "$1" ]]; then
                scripts+=("$(cd "$(dirname "$1")" && pwd)/$(basename "$1")")
            elif [[ -f "$here/$1" ]]; then
                scripts+=("$here/$1")
            else
                echo "run.sh: no such bench script: $1" >&2; exit 2
            fi
            shift ;;
        *) extra+=("$1"); shift ;;
    esac
done
((${#scripts[@]})) || scripts=("$here/tool_dispatch.py")

# 1. The virtualenv.
if [[ ! -x "$venv/bin/python" ]]; then
    echo "run.sh: creating virtualenv $venv" >&2
    mkdir -p "$(dirname "$venv")"
    python3 -m venv "$venv"
    "$venv/bin/python" -m pip install -q --upgrade pip
fi
py="$venv/bin/python"

# 2. The comparison packages (skipped when requirements.txt is unchanged since last install).
stamp="$venv/.ironloop-bench-requirements.sha256"
want="$(sha256sum "$requirements" | cut -d' ' -f1)"
if [[ ! -f "$stamp" || "$(cat "$stamp")" != "$want" ]]; then
    echo "run.sh: installing $requirements" >&2
    "$py" -m pip install -q -r "$requirements"
    echo "$want" > "$stamp"
fi

# 2b. The other agent frameworks, for peers.py only (requirements-peers.txt, pinned to
#     resolve together with requirements.txt).
peers="$here/requirements-peers.txt"
if [[ " ${scripts[*]} " == *"/peers.py "* ]]; then
    pstamp="$venv/.ironloop-bench-peers.sha256"
    pwant="$(cat "$requirements" "$peers" | sha256sum | cut -d' ' -f1)"
    if [[ ! -f "$pstamp" || "$(cat "$pstamp")" != "$pwant" ]]; then
        echo "run.sh: installing $peers" >&2
        "$py" -m pip install -q -r "$requirements" -r "$peers"
        echo "$pwant" > "$pstamp"
    fi
fi

# 3. ironloop itself.
if ((install_ironloop)); then
    if [[ -n "${IRONLOOP_WHEEL:-}" ]]; then
        [[ -f "$IRONLOOP_WHEEL" ]] || { echo "run.sh: IRONLOOP_WHEEL=$IRONLOOP_WHEEL: no such file" >&2; exit 2; }
        echo "run.sh: installing ironloop from $IRONLOOP_WHEEL" >&2
        "$py" -m pip install -q --force-reinstall "$IRONLOOP_WHEEL"
    else
        echo "run.sh: building and installing ironloop from $root (maturin, release)" >&2
        "$py" -m pip install -q --force-reinstall "$root"
    fi
fi

# 4. The benchmarks (from the caller's cwd: relative paths in ARGS keep their meaning).
status=0
for script in "${scripts[@]}"; do
    echo "run.sh: $py $script ${extra[*]:-}" >&2
    "$py" "$script" ${extra[@]+"${extra[@]}"} || status=$?
done
exit "$status"
