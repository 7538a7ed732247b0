"""A built wheel installs and runs with no Rust toolchain anywhere in reach.

Users `pip install ironloop` from a wheel; nothing on their machine compiles. The
test takes the wheel the suite's own build made (`IRONLOOP_WHEEL`, set by
`scripts/test.sh`) or builds one with maturin, installs it into a new virtualenv, and
runs `examples/agent.py` there with every directory holding `cargo` or `rustc` removed
from `PATH` and cargo's and rustup's homes pointed at empty directories.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import venv
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def a_wheel(tmp: Path) -> Path:
    given = os.environ.get("IRONLOOP_WHEEL")
    if given:
        return Path(given)
    out = tmp / "dist"
    # Same profile and features as `maturin develop`, so cargo reuses that build.
    maturin = shutil.which("maturin", path=str(Path(sys.executable).parent)) or "maturin"
    subprocess.run(
        [maturin, "build", "--quiet", "-o", str(out)],
        cwd=ROOT,
        check=True,
        timeout=1800,
    )
    (wheel,) = out.glob("ironloop-*.whl")
    return wheel


def without_rust(env: dict[str, str], tmp: Path) -> dict[str, str]:
    def has_rust(d: str) -> bool:
        return any((Path(d) / exe).exists() for exe in ("cargo", "rustc", "rustup"))

    env = dict(env)
    env["PATH"] = os.pathsep.join(
        d for d in env.get("PATH", "").split(os.pathsep) if d and not has_rust(d)
    )
    for home in ("CARGO_HOME", "RUSTUP_HOME"):
        empty = tmp / home.lower()
        empty.mkdir()
        env[home] = str(empty)
    for k in ("VIRTUAL_ENV", "PYTHONPATH", "CARGO_TARGET_DIR", "IRONLOOP_MODEL"):
        env.pop(k, None)
    return env


def test_the_wheel_runs_the_example_agent_with_no_rust(tmp_path: Path) -> None:
    wheel = a_wheel(tmp_path)
    env = without_rust(dict(os.environ), tmp_path)

    where = tmp_path / "venv"
    venv.EnvBuilder(with_pip=True).create(where)
    python = where / ("Scripts" if os.name == "nt" else "bin") / "python"
    subprocess.run(
        [str(python), "-m", "pip", "install", "-q", "--disable-pip-version-check", str(wheel)],
        env=env,
        check=True,
        timeout=600,
    )
    assert shutil.which("cargo", path=env["PATH"]) is None
    assert shutil.which("rustc", path=env["PATH"]) is None

    # The example keeps its thread next to itself: run a copy in the scratch dir.
    example = tmp_path / "agent.py"
    example.write_text((ROOT / "examples" / "agent.py").read_text())
    runs = [
        subprocess.run(
            [str(python), str(example)],
            env=env,
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=120,
        )
        for _ in range(2)
    ]
    for run in runs:
        assert run.returncode == 0, run.stderr
    where_from = subprocess.run(
        [str(python), "-c", "import ironloop, sys; print(ironloop.__file__)"],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert str(where) in where_from  # the venv's copy, not the repo's sources
    assert "turn 1" in runs[0].stdout, runs[0].stdout
    assert "turn 2" in runs[1].stdout and "5 messages saved" in runs[1].stdout, runs[1].stdout


def test_the_wheel_ships_the_web_uis_files(tmp_path: Path) -> None:
    """`ironloop serve`'s page and its files (python/ironloop/serve/static/) are package
    data, not Python: the wheel must carry every one of them."""
    import zipfile

    static = ROOT / "python" / "ironloop" / "serve" / "static"
    wanted = {f"ironloop/serve/static/{p.relative_to(static).as_posix()}"
              for p in static.rglob("*") if p.is_file()}  # fmt: skip
    assert {"ironloop/serve/static/index.html", "ironloop/serve/static/app.js"} <= wanted
    with zipfile.ZipFile(a_wheel(tmp_path)) as wheel:
        shipped = set(wheel.namelist())
    assert wanted <= shipped, sorted(wanted - shipped)
    assert "ironloop/serve/ui.py" in shipped
