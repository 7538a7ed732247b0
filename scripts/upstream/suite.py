"""Runs LangGraph's and LangChain's own test suites on ironloop, as a user's port would
run them.

For each suite (``langgraph==1.2.24``, ``langgraph-prebuilt==1.1.3``, ``langchain==1.5.2``
— LangChain's agents and middleware —, and the store tests of the savers' sdists
``langgraph-checkpoint``, ``-sqlite`` and ``-postgres``, the last on a PostgreSQL server
with pgvector from ``scripts/pgvector.sh``): the pinned source distribution is fetched from
PyPI and checked by sha256 (``fetch.py``); its ``tests/`` folder is copied into a scratch
directory with the conftests that build fixtures from upstream internals replaced
(``CONFTESTS``: the same fixtures built from ironloop's parts); the shim
(``langgraph_shim.py``) answers every ``langgraph`` / ``langchain`` import with
ironloop's names; the selection rules (``selection.py``) keep the public-API tests;
pytest runs them.

It prints the pass count per file, then compares the failures with the expected-failures
file (``tests/upstream/<suite>.expected``: one test id a line, ``id | reason``). It fails
on a failure that is not listed (a regression) and on a listed test that now passes
(update the list: ``--update`` rewrites it, keeping the reasons written by hand). The
fetched tests are run and discarded; nothing of them is kept in the repository.

    python scripts/upstream/suite.py [--suite langgraph] [--update] [-- PYTEST_ARGS]
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET
from collections import Counter, defaultdict
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
sys.path.insert(0, str(HERE))

import fetch  # noqa: E402
import selection  # noqa: E402

SUITES = tuple(selection.FILES)
EXPECTED_DIR = ROOT / "tests" / "upstream"
DECISIONS = "docs/decisions.md#langgraphs-own-test-suite"

#: suite -> {conftest path under the sdist's ``tests/``: the file put in its place, or
#: ``None`` to drop it}; the ecosystem's suites have none. LangChain's unit-test
#: conftest wires VCR cassettes and blockbuster (a detector of blocking calls in its own
#: async code) from packages outside the agent stack (its ``requires`` marker is kept by
#: ours); its agents conftest builds savers from LangGraph internals.
CONFTESTS: dict[str, dict[str, str | None]] = {
    "langgraph": {"conftest.py": "conftest_langgraph.py"},
    "langgraph-prebuilt": {"conftest.py": "conftest_langgraph.py"},
    "langgraph-checkpoint": {"conftest.py": "conftest_langgraph.py"},
    "langgraph-checkpoint-sqlite": {"conftest.py": "conftest_langgraph.py"},
    "langgraph-checkpoint-postgres": {"conftest.py": "conftest_postgres.py"},
    "langchain": {
        "unit_tests/conftest.py": None,
        "unit_tests/agents/conftest.py": "conftest_langchain.py",
    },
}

#: suite -> pytest options its own configuration sets that ours must too. LangChain runs
#: every ``async def`` test on asyncio (pytest-asyncio's ``asyncio_mode = "auto"``):
#: anyio's plugin, which LangGraph's suites use, does the same in its auto mode.
PYTEST_OPTIONS: dict[str, tuple[str, ...]] = {"langchain": ("-o", "anyio_mode=auto")}

#: Suites that need a PostgreSQL server, with pgvector as LangGraph's CI has it: without
#: ``IRONLOOP_TEST_PGVECTOR_URL`` or ``IRONLOOP_TEST_POSTGRES_URL`` they run under
#: ``scripts/pgvector.sh``, which starts a throwaway one and stops it after.
NEEDS_POSTGRES = ("langgraph-checkpoint-postgres",)

#: Parts of an sdist's ``tests/`` no selected test reads (recorded HTTP, benchmarks).
SKIPPED_DIRS = ("__snapshots__", "cassettes", "integration_tests", "benchmarks")

#: The root conftest of the scratch directory: the shim before any test module loads.
ROOT_CONFTEST = """\
import os
import sys
sys.path.insert(0, {here!r})
import langgraph_shim
langgraph_shim.install(lenient=True)

ONLY = set(filter(None, os.environ.get("IRONLOOP_UPSTREAM_ONLY", "").split("\\n")))


def pytest_collection_modifyitems(config, items):
    # A re-run of some tests (suite.py's ``_flaky``): ids as the report names them.
    if ONLY:
        keep = [i for i in items if f"{{i.location[0]}}::{{i.name}}" in ONLY]
        config.hook.pytest_deselected(items=[i for i in items if i not in keep])
        items[:] = keep
"""


def _prepare(suite: str, work: Path) -> Path:
    src = fetch.sdist(suite)
    tests = work / "tests"
    shutil.copytree(src / "tests", tests, ignore=shutil.ignore_patterns(*SKIPPED_DIRS))
    for dest, ours in CONFTESTS.get(suite, {}).items():
        if ours is None:
            (tests / dest).unlink()
        else:
            shutil.copy(HERE / ours, tests / dest)
    (work / "conftest.py").write_text(ROOT_CONFTEST.format(here=str(HERE)))
    return tests


def _run(
    suite: str, pytest_args: list[str], only: list[str] | None = None
) -> dict[str, tuple[str, str]]:
    """Runs the selected tests (or just the ``only`` ones, ids as the report names
    them): ``{nodeid: (outcome, first line of the failure)}``."""
    with tempfile.TemporaryDirectory(prefix=f"upstream-{suite}-") as tmp:
        work = Path(tmp)
        _prepare(suite, work)
        report = work / "report.xml"
        files = [f"tests/{f}" for f in selection.FILES[suite] if (work / "tests" / f).exists()]
        if only:
            files = [f for f in files if any(n.startswith(f"{f}::") for n in only)]
        cmd = [
            sys.executable,
            "-m",
            "pytest",
            *files,
            "-q",
            "-p",
            "no:cacheprovider",
            "-p",
            "no:randomly",
            "--rootdir",
            str(work),
            "-o",
            "addopts=",
            "--continue-on-collection-errors",
            *PYTEST_OPTIONS.get(suite, ()),
            f"--junitxml={report}",
            "-o",
            "junit_family=xunit1",
            *pytest_args,
        ]
        env = {**os.environ, "IRONLOOP_UPSTREAM_ONLY": "\n".join(only or ())}
        servers = ("IRONLOOP_TEST_PGVECTOR_URL", "IRONLOOP_TEST_POSTGRES_URL")
        if suite in NEEDS_POSTGRES and not any(os.environ.get(v) for v in servers):
            cmd = ["bash", str(ROOT / "scripts" / "pgvector.sh"), *cmd]
        proc = subprocess.run(cmd, cwd=work, env=env, check=False, preexec_fn=_limit_memory)
        if not report.exists():
            raise RuntimeError(
                f"pytest wrote no report for {suite} (exit {proc.returncode}): see its output above"
            )
        return _results(report)


def _limit_memory() -> None:
    """A test that runs away with memory fails alone (MemoryError) instead of taking the
    machine's memory from everything else."""
    import resource

    limit = 6 * 1024**3
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))


def _results(report: Path) -> dict[str, tuple[str, str]]:
    """Each test's outcome; a file that does not import is one entry, ``file::<import>``."""
    out: dict[str, tuple[str, str]] = {}
    for case in ET.parse(report).getroot().iter("testcase"):
        file = case.get("file") or case.get("classname", "").replace(".", "/") + ".py"
        name = case.get("name") or ""
        module = file[:-3].replace("/", ".")
        nodeid = f"{file}::<import>" if name in ("", module) else f"{file}::{name}"
        outcome, why = "passed", ""
        for tag in ("failure", "error"):
            el = case.find(tag)
            if el is not None:
                outcome = "failed"
                text = (el.text or "").strip().splitlines()
                raised = [ln[1:].strip() for ln in text if ln.startswith("E ")]
                message = (el.get("message") or "").strip()
                why = raised[-1] if nodeid.endswith("<import>") and raised else message
                why = why.splitlines()[0][:160] if why else (raised[-1][:160] if raised else tag)
        if case.find("skipped") is not None:
            outcome = "skipped"
            why = (case.find("skipped").get("message") or "").strip()[:160]
        out[nodeid] = (outcome, why)
    return out


def _test_functions(file: str) -> int:
    """How many test functions a file of the fetched suite defines (before
    parametrisation): what a file that does not import keeps from running."""
    import ast

    for suite in SUITES:
        path = fetch.sdist(suite) / file
        if path.exists():
            tree = ast.parse(path.read_text())
            return sum(
                1
                for n in tree.body
                if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))
                and n.name.startswith("test")
            )
    return 0


def _read_expected(path: Path) -> dict[str, str]:
    expected: dict[str, str] = {}
    if path.exists():
        for line in path.read_text().splitlines():
            if line.strip() and not line.startswith("#"):
                nodeid, _, reason = line.partition(" | ")
                expected[nodeid.strip()] = reason.strip()
    return expected


def _write_expected(path: Path, suite: str, failed: dict[str, str], old: dict[str, str]) -> None:
    lines = [
        f"# {suite}: selected tests that fail on ironloop, with why (see {DECISIONS}).",
        "# Written by scripts/upstream/suite.py --update; reasons may be edited by hand.",
    ]
    # A test known to flip (``flaky:`` reason) keeps its line whatever this run saw; a
    # reason written by hand is kept, one written by this script (an error line) is this
    # run's, so the list never names a cause since fixed.
    kept = {n for n, why in old.items() if why.startswith(FLAKY_PREFIX)}
    for nodeid in sorted(set(failed) | kept):
        why = old.get(nodeid, "")
        if not why or MACHINE_REASON.match(why):
            why = failed[nodeid]
        lines.append(f"{nodeid} | {why}")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n")


#: A reason starting so marks a test whose outcome on ironloop depends on timing (written
#: by hand, with why): neither its failure nor its pass is compared.
FLAKY_PREFIX = "flaky:"

#: A reason as this script writes it (the failure's error line), which ``--update``
#: refreshes; a reason in prose was written by hand and is kept.
MACHINE_REASON = re.compile(
    r"(assert\b|Failed:|[A-Za-z_][\w.]*(Error|Exception|Iteration|Missing|Warning)(:|$))"
)

#: How many more times a test whose outcome departs from the expected list is run alone.
RERUNS = 2


def _flaky(
    suite: str, mismatched: list[str], first: dict[str, tuple[str, str]], pytest_args: list[str]
) -> set[str]:
    """The mismatched tests whose outcome is not the same on every run: each is run
    alone ``RERUNS`` more times. Only a test that departs from the list every time is a
    regression (or a fix); one that changes is timing-dependent upstream (LangGraph's
    suites mark some such tests ``flaky`` themselves) and is reported, not counted."""
    ids = [n for n in mismatched if not n.endswith("::<import>")]
    if not ids:
        return set()
    print(f"\n{suite}: re-running {len(ids)} test(s) whose outcome departs from the list")
    changed: set[str] = set()
    for _ in range(RERUNS):
        again = _run(suite, pytest_args, only=ids)
        changed |= {n for n in ids if again.get(n, ("missing",))[0] != first[n][0]}
    return changed


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--suite", action="append", choices=SUITES, help="default: all")
    ap.add_argument("--update", action="store_true", help="rewrite the expected failures")
    ap.add_argument("pytest_args", nargs="*")
    args = ap.parse_args()
    status = 0
    for suite in args.suite or SUITES:
        results = _run(suite, args.pytest_args)
        per_file: dict[str, Counter[str]] = defaultdict(Counter)
        for nodeid, (outcome, _) in results.items():
            per_file[nodeid.split("::")[0]][outcome] += 1
        print(f"\n{suite}: pass count per file")
        unimported = {
            n.split("::")[0]: why for n, (o, why) in results.items() if n.endswith("::<import>")
        }
        for file in sorted(per_file):
            c = per_file[file]
            total = sum(c.values())
            if file in unimported:
                n = _test_functions(file)
                print(
                    f"  {file:60} does not import ({n} test functions not run): {unimported[file]}"
                )
            else:
                print(f"  {file:60} {c['passed']:4} of {total:4} passed")
        total = Counter(o for o, _ in results.values())
        ran = total["passed"] + total["failed"]
        print(
            f"{suite}: {total['passed']} of {ran} selected tests pass "
            f"({100 * total['passed'] / max(ran, 1):.1f} %), {total['skipped']} skipped"
        )
        failed = {n: why for n, (o, why) in results.items() if o == "failed"}
        path = EXPECTED_DIR / f"{suite}.expected"
        expected = _read_expected(path)
        if args.update:
            _write_expected(path, suite, failed, expected)
            print(f"{suite}: wrote {len(failed)} expected failures to {path.relative_to(ROOT)}")
            continue
        known_flaky = {n for n, why in expected.items() if why.startswith(FLAKY_PREFIX)}
        new = sorted(set(failed) - set(expected))
        fixed = sorted(
            n for n in expected if n not in known_flaky and results.get(n, ("",))[0] == "passed"
        )
        flaky = _flaky(suite, new + fixed, results, args.pytest_args)
        for n in flaky:
            print(f"FLAKY (outcome changed when re-run alone; not counted): {n}")
        new = [n for n in new if n not in flaky]
        fixed = [n for n in fixed if n not in flaky]
        for n in new:
            print(f"NEW FAILURE {n}: {failed[n]}")
        for n in fixed:
            print(f"NOW PASSES (remove from {path.relative_to(ROOT)}): {n}")
        if new or fixed:
            status = 1
    return status


if __name__ == "__main__":
    sys.exit(main())
