"""Fetches the pinned source distributions of LangGraph and LangChain from PyPI.

Their sdists ship what the project measures itself against: LangGraph's own benchmarks
(``bench/``) and test suites (``tests/``). Each is downloaded once with pip (by name and
version, no binary), checked against the sha256 pinned here, unpacked into the cache
(``$IRONLOOP_CACHE/upstream``, default ``~/.cache/ironloop/upstream``) and used from
there; nothing of it is kept in the repository.

    python scripts/upstream/fetch.py langgraph      # prints the unpacked folder
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

#: name -> (version, sdist file, sha256), as PyPI served them on 2026-11-28.
PINNED: dict[str, tuple[str, str, str]] = {
    "langgraph": (
        "1.2.24",
        "langgraph-1.2.24.tar.gz",
        "86b0dd611b7201cb393da2de0e064029c1bef520f11a5e6ee04be53c2a815bc7",
    ),
    "langgraph-prebuilt": (
        "1.1.3",
        "langgraph_prebuilt-1.1.3.tar.gz",
        "7ee72332e925000e3d24d2d491dd0ebb9d3a44dbffe650185943b730a832cf6d",
    ),
    "langgraph-checkpoint": (
        "4.3.2",
        "langgraph_checkpoint-4.3.2.tar.gz",
        "fcab8468c7e965d7055e2a35c253d73a145624ef4728b150ca7c361f4afca286",
    ),
    "langgraph-checkpoint-sqlite": (
        "3.1.2",
        "langgraph_checkpoint_sqlite-3.1.2.tar.gz",
        "4e3f376fa6f192d6ad2a1a4643b039986f1593552ef870e9e45281575de6fbf2",
    ),
    "langgraph-checkpoint-postgres": (
        "3.2.0",
        "langgraph_checkpoint_postgres-3.2.0.tar.gz",
        "dffef0e6822d7c614019f7f2c4bdbef42859746aee2d3e6d9d9747cf3744ca90",
    ),
    "langgraph-supervisor": (
        "0.0.31",
        "langgraph_supervisor-0.0.31.tar.gz",
        "0f71d5098fa1ac274423eff08750345450045c1e0dd2480ab7f3e5c1848f6016",
    ),
    "langgraph-swarm": (
        "0.1.0",
        "langgraph_swarm-0.1.0.tar.gz",
        "e0f189fc2471d06108fc293da05771d0106d72f755cd130ee37d579561942479",
    ),
    "langchain": (
        "1.5.2",
        "langchain-1.5.2.tar.gz",
        "63816aee7f55503db5c4f266a0874047d417957ae70cbf27397325c584982c52",
    ),
}


def cache_dir() -> Path:
    root = os.environ.get("IRONLOOP_CACHE") or str(Path.home() / ".cache" / "ironloop")
    return Path(root) / "upstream"


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def sdist(name: str) -> Path:
    """The unpacked source distribution of ``name`` at its pinned version."""
    if name not in PINNED:
        raise KeyError(f"no pinned sdist for {name!r}; known: {', '.join(PINNED)}")
    version, filename, sha = PINNED[name]
    root = cache_dir()
    unpacked = root / filename.removesuffix(".tar.gz")
    if (unpacked / ".sha256").is_file() and (unpacked / ".sha256").read_text() == sha:
        return unpacked
    root.mkdir(parents=True, exist_ok=True)
    archive = root / filename
    if not archive.is_file() or _sha256(archive) != sha:
        with tempfile.TemporaryDirectory(dir=root) as tmp:
            subprocess.run(
                [
                    sys.executable,
                    "-m",
                    "pip",
                    "download",
                    "-q",
                    "--no-deps",
                    "--no-binary",
                    ":all:",
                    "-d",
                    tmp,
                    f"{name}=={version}",
                ],
                check=True,
            )
            got = Path(tmp) / filename
            if not got.is_file():
                raise RuntimeError(f"pip download of {name}=={version} gave no {filename}")
            os.replace(got, archive)
    actual = _sha256(archive)
    if actual != sha:
        archive.unlink()
        raise RuntimeError(
            f"{filename} has sha256 {actual}, expected {sha}: the registry served other "
            "bytes than were pinned; check the release before changing PINNED"
        )
    with tarfile.open(archive) as tar:
        tar.extractall(root, filter="data")
    (unpacked / ".sha256").write_text(sha)
    return unpacked


if __name__ == "__main__":
    for arg in sys.argv[1:] or ["langgraph"]:
        print(sdist(arg))
