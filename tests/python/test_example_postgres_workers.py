"""examples/postgres_workers.py stays true: run against the test server, a killed
worker's thread is claimed by another worker and finished, without re-running the
steps it had saved."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from pg_support import postgres_url, temp_schema

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "postgres_workers.py"


def test_postgres_workers_example_continues_the_killed_workers_thread() -> None:
    with temp_schema() as schema:
        out = subprocess.run(
            [sys.executable, str(EXAMPLE), postgres_url(), "--schema", schema, "--workers", "3"],
            capture_output=True,
            text=True,
            timeout=180,
        )
    assert out.returncode == 0, out.stdout + out.stderr
    text = out.stdout
    assert "*** killed worker-2 (SIGKILL) in the middle of job-2-" in text
    claims = re.findall(r"\[(worker-\d)\] claimed (job-2-\w+): .* continuing at 'draft'", text)
    assert len(claims) == 1, text
    survivor = claims[0][0]
    assert survivor != "worker-2"
    report = dict(re.findall(r"^  (job-\d)-\w+: (.*)$", text, re.M))
    assert report["job-2"] == (
        f"plan@worker-2 research@worker-2 draft@{survivor} review@{survivor}  [done]"
    ), text
    for i in (1, 3):
        steps = " ".join(f"{s}@worker-{i}" for s in ("plan", "research", "draft", "review"))
        assert report[f"job-{i}"] == f"{steps}  [done]", text
