"""W12 (BENCHMARKS.md): serving. ``ironloop serve`` and ``langgraph dev`` serve the same
agent (``create_react_agent`` over each side's OpenAI client: ironloop's ``OpenAIChat``,
LangGraph's ``langchain_openai.ChatOpenAI``) from a ``langgraph.json`` project that
differs only in its imports, against the same loopback model server
(``_loopback_openai.py``: every request answered after ``--delay``, the model's own
latency), driven by the same ``langgraph-sdk`` client, in one run:

- background: ``--runs`` (1,000) threads each given a background run (``runs.create``,
  at most ``--concurrency`` requests in flight), then every run joined; runs per
  second over the whole phase, every answer checked;
- streams: ``--streams`` (100) ``runs.stream(..., stream_mode="messages-tuple")`` at
  once; time to first streamed event = from the request to the first ``messages``
  event (the model's first token), p50 / p99; and the same one stream at a time
  (``--sequential``, 20), where nothing queues; each server runs up to ``--jobs``
  (100) runs at once (``--max-running`` / ``--n-jobs-per-worker``);
- per server: CPU seconds (the server process and its children, from ``/proc``) per
  run over both phases, and peak RSS (``VmHWM``);
- the floor: the same runs in one process, no HTTP (``ainvoke`` / ``astream`` of the
  graph with a ``SqliteSaver``), in a child process of its own.

``langgraph dev`` runs from its own virtualenv (``$IRONLOOP_LANGGRAPH_DEV_VENV``, default
``~/.cache/ironloop-langgraph-dev-venv``), made on first use from
``requirements-langgraph-dev.txt``: its server pins a langgraph of its own.

    python benches/python/w12_serving.py [--only ironloop|langgraph] [--runs N]
        [--streams N] [--sequential N] [--concurrency N] [--delay S] [--json PATH]

Targets: server CPU per run >= 10x less than ``langgraph dev``; p50 time to first event
<= 5 ms above the model's latency.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import _harness as h
from _loopback_openai import LoopbackOpenAI

HERE = Path(__file__).resolve().parent
ANSWER = "All done."
TARGET_CPU_RATIO = 10.0
TARGET_TTFE_MS = 5.0

AGENTS = {
    "ironloop": """
import os
from ironloop import create_react_agent, tool
from ironloop.models import OpenAIChat

@tool
def lookup(query: str) -> str:
    \"\"\"Looks a query up.\"\"\"
    return "result for " + query

model = OpenAIChat("loopback", base_url=os.environ["LOOPBACK_URL"], api_key="loopback",
                   max_retries=0)
graph = create_react_agent(model, [lookup])
""",
    "langgraph": """
import os
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI
from langgraph.prebuilt import create_react_agent

@tool
def lookup(query: str) -> str:
    \"\"\"Looks a query up.\"\"\"
    return "result for " + query

model = ChatOpenAI(model="loopback", base_url=os.environ["LOOPBACK_URL"], api_key="loopback",
                   max_retries=0)
graph = create_react_agent(model, [lookup])
""",
}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def make_project(root: Path, impl: str) -> Path:
    folder = root / impl
    folder.mkdir(parents=True)
    (folder / "agent.py").write_text(AGENTS[impl])
    (folder / "langgraph.json").write_text(
        json.dumps({"dependencies": ["."], "graphs": {"agent": "./agent.py:graph"}})
    )
    return folder


def langgraph_dev_venv() -> Path:
    venv = Path(
        os.environ.get("IRONLOOP_LANGGRAPH_DEV_VENV")
        or Path.home() / ".cache" / "ironloop-langgraph-dev-venv"
    )
    if not (venv / "bin" / "langgraph").exists():
        print(f"w12: installing langgraph dev into {venv}", file=sys.stderr)
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        subprocess.run(
            [str(venv / "bin" / "pip"), "install", "-q", "-r",
             str(HERE / "requirements-langgraph-dev.txt")],
            check=True,
        )  # fmt: skip
    return venv


def server_command(impl: str, project: Path, port: int, jobs: int) -> list[str]:
    config = str(project / "langgraph.json")
    if impl == "ironloop":
        return [sys.executable, "-m", "ironloop", "serve", "--config", config, "--port",
                str(port), "--max-running", str(jobs), "--log-level", "warning",
                "--data-dir", str(project / "data")]  # fmt: skip
    venv = langgraph_dev_venv()
    return [str(venv / "bin" / "langgraph"), "dev", "--config", config, "--port", str(port),
            "--no-browser", "--no-reload", "--n-jobs-per-worker", str(jobs)]  # fmt: skip


def process_tree(pid: int) -> list[int]:
    """``pid`` and its descendants."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as f:
                    ppid = int(f.read().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            children.setdefault(ppid, []).append(int(entry))
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        out.append(p)
        todo.extend(children.get(p, []))
    return out


def cpu_seconds(pid: int) -> float:
    """CPU seconds of ``pid`` and its descendants (with their reaped children)."""
    tick = os.sysconf("SC_CLK_TCK")
    total = 0
    for p in process_tree(pid):
        try:
            with open(f"/proc/{p}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += sum(int(x) for x in fields[11:15])  # utime stime cutime cstime
    return total / tick


def peak_rss_mib(pid: int) -> float:
    total = 0
    for p in process_tree(pid):
        try:
            with open(f"/proc/{p}/status") as f:
                for line in f:
                    if line.startswith("VmHWM:"):
                        total += int(line.split()[1])
        except OSError:
            continue
    return total / 1024


def message(i: int) -> dict[str, Any]:
    return {"messages": [{"role": "user", "content": f"conversation {i}"}]}


def last_text(values: Any) -> str:
    messages = values["messages"] if isinstance(values, dict) else values.messages
    last = messages[-1]
    return str(last["content"] if isinstance(last, dict) else last.content)


async def http_background(url: str, n: int, concurrency: int) -> float:
    from langgraph_sdk import get_client

    client = get_client(url=url, timeout=600)
    limit = asyncio.Semaphore(concurrency)

    async def create(i: int) -> tuple[str, str]:
        async with limit:
            thread = await client.threads.create()
            run = await client.runs.create(thread["thread_id"], "agent", input=message(i))
            return thread["thread_id"], run["run_id"]

    async def join(tid: str, rid: str) -> None:
        async with limit:
            out = await client.runs.join(tid, rid)
        assert last_text(out) == ANSWER, out

    start = time.perf_counter()
    runs = await asyncio.gather(*(create(i) for i in range(n)))
    await asyncio.gather(*(join(t, r) for t, r in runs))
    return time.perf_counter() - start


async def http_streams(url: str, n: int, offset: int) -> list[float]:
    """Seconds from each request to its first ``messages`` event, ``n`` at once."""
    from langgraph_sdk import get_client

    client = get_client(url=url, timeout=600)

    async def one(i: int) -> float:
        thread = await client.threads.create()
        start = time.perf_counter()
        first, text = None, []
        async for part in client.runs.stream(thread["thread_id"], "agent",
                                             input=message(offset + i),
                                             stream_mode="messages-tuple"):  # fmt: skip
            if part.event == "messages":
                first = first or time.perf_counter() - start
                chunk, _meta = part.data
                if chunk.get("type") == "AIMessageChunk":
                    text.append(chunk["content"])
        assert first is not None and "".join(text) == ANSWER, text
        return first

    return list(await asyncio.gather(*(one(i) for i in range(n))))


async def sequential(stream: Any, n: int) -> list[float]:
    return [(await stream(1))[0] for _ in range(n)]


def run_server(impl: str, root: Path, args: argparse.Namespace, model_url: str) -> dict[str, Any]:
    project = make_project(root, impl)
    port = free_port()
    log = open(root / f"{impl}.log", "wb")
    env = {**os.environ, "LOOPBACK_URL": model_url, "LANGGRAPH_NO_BROWSER": "1"}
    proc = subprocess.Popen(server_command(impl, project, port, args.jobs), cwd=project,
                            stdout=log, stderr=subprocess.STDOUT, env=env)  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    try:
        import httpx

        deadline = time.monotonic() + 120
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"{impl} server exited:\n{(root / f'{impl}.log').read_text()}")
            try:
                if httpx.get(url + "/ok", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError(f"{impl} server did not answer in 120 s")
            time.sleep(0.1)
        asyncio.run(http_background(url, 20, args.concurrency))  # warm-up: both paths
        asyncio.run(http_streams(url, 5, 0))
        cpu0 = cpu_seconds(proc.pid)
        wall = asyncio.run(http_background(url, args.runs, args.concurrency))
        cpu_bg = cpu_seconds(proc.pid) - cpu0

        async def stream(n: int) -> list[float]:
            return await http_streams(url, n, 0)

        cpu1 = cpu_seconds(proc.pid)
        concurrent = asyncio.run(stream(args.streams))
        cpu_streams = cpu_seconds(proc.pid) - cpu1
        one_at_a_time = asyncio.run(sequential(stream, args.sequential))
        return {
            "runs_per_s": args.runs / wall,
            "cpu_per_run_ms": 1000 * (cpu_bg + cpu_streams) / (args.runs + args.streams),
            "ttfe": concurrent,
            "ttfe_sequential": one_at_a_time,
            "peak_rss_mib": peak_rss_mib(proc.pid),
        }
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()


def floor_child(args: argparse.Namespace, model_url: str, root: Path) -> dict[str, Any]:
    """The same runs in this process (``--floor-child``): no HTTP, no server."""
    import importlib.util

    from ironloop import SqliteSaver, create_react_agent

    os.environ["LOOPBACK_URL"] = model_url
    project = make_project(root, "ironloop")
    spec = importlib.util.spec_from_file_location("w12_agent", project / "agent.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    # The served graph's model and tool, with the checkpointer the server would give it.
    graph = create_react_agent(
        module.model, [module.lookup], checkpointer=SqliteSaver(str(root / "floor.db"))
    )

    async def invoke_all(n: int) -> float:
        limit = asyncio.Semaphore(args.concurrency)

        async def one(i: int) -> None:
            async with limit:
                out = await graph.ainvoke(message(i), {"configurable": {"thread_id": f"b{i}"}})
            assert last_text(out) == ANSWER

        start = time.perf_counter()
        await asyncio.gather(*(one(i) for i in range(n)))
        return time.perf_counter() - start

    async def stream_all(n: int, tag: str) -> list[float]:
        async def one(i: int) -> float:
            start = time.perf_counter()
            first = None
            async for _chunk, _meta in graph.astream(
                message(i), {"configurable": {"thread_id": f"{tag}{i}"}}, stream_mode="messages"
            ):
                first = first or time.perf_counter() - start
            assert first is not None
            return first

        return list(await asyncio.gather(*(one(i) for i in range(n))))

    async def sequential_streams(n: int) -> list[float]:
        return [(await stream_all(1, f"q{i}-"))[0] for i in range(n)]

    asyncio.run(invoke_all(20))
    cpu0 = time.process_time()
    wall = asyncio.run(invoke_all(args.runs))
    concurrent = asyncio.run(stream_all(args.streams, "s"))
    cpu = time.process_time() - cpu0
    one_at_a_time = asyncio.run(sequential_streams(args.sequential))
    import resource

    return {
        "runs_per_s": args.runs / wall,
        "cpu_per_run_ms": 1000 * cpu / (args.runs + args.streams),
        "ttfe": concurrent,
        "ttfe_sequential": one_at_a_time,
        "peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    }


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return 1000 * ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", choices=["ironloop", "langgraph"], default=None)
    parser.add_argument("--runs", type=int, default=1000)
    parser.add_argument("--streams", type=int, default=100)
    parser.add_argument("--sequential", type=int, default=20)
    parser.add_argument(
        "--concurrency",
        type=int,
        default=32,
        help="background-phase requests in flight at once (default: 32)",
    )
    parser.add_argument(
        "--jobs",
        type=int,
        default=100,
        help="runs a server executes at once: ironloop serve --max-running, "
        "langgraph dev --n-jobs-per-worker (default: 100, the streams)",
    )
    parser.add_argument("--delay", type=float, default=0.05)
    parser.add_argument("--floor-child", default=None, help=argparse.SUPPRESS)
    h.add_json_arg(parser)
    args = parser.parse_args()
    if args.floor_child:
        url, root = args.floor_child.split("|")
        print(json.dumps(floor_child(args, url, Path(root))))
        return
    info = h.machine_info()
    h.print_header("W12: serving (ironloop serve vs langgraph dev)", info)
    results: dict[str, dict[str, Any]] = {}
    root = Path(tempfile.mkdtemp(prefix="w12-"))
    try:
        with LoopbackOpenAI(delay=args.delay, rounds=0, calls=1, answer=ANSWER) as model:
            impls = [args.only] if args.only else ["ironloop", "langgraph"]
            for impl in impls:
                results[impl] = run_server(impl, root, args, model.base_url)
            if args.only in (None, "ironloop"):
                floor_root = root / "floor"
                floor_root.mkdir()
                out = subprocess.run(
                    [sys.executable, __file__, *sys.argv[1:], "--floor-child",
                     f"{model.base_url}|{floor_root}"],
                    check=True, capture_output=True, text=True,
                )  # fmt: skip
                results["floor (ironloop, in-process)"] = json.loads(out.stdout.splitlines()[-1])
    finally:
        shutil.rmtree(root, ignore_errors=True)
    report(results, args)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"info": info, "args": vars(args), "results": results}, f, indent=1)


def report(results: dict[str, dict[str, Any]], args: argparse.Namespace) -> None:
    delay_ms = 1000 * args.delay
    print(f"model latency {delay_ms:.0f} ms; {args.runs} background runs, {args.streams} "
          f"concurrent streams, {args.sequential} streams one at a time; "
          f"{args.concurrency} requests in flight, {args.jobs} runs at once per server")  # fmt: skip
    print()
    print(
        "| | runs/s | TTFE p50 / p99, 100 at once (ms) | TTFE p50 / p99, one at a time "
        "(ms) | server CPU per run (ms) | peak RSS (MiB) |"
    )
    print("|---|---|---|---|---|---|")
    for name, r in results.items():
        print(f"| {name} | {r['runs_per_s']:.0f} | {pct(r['ttfe'], 0.5):.1f} / "
              f"{pct(r['ttfe'], 0.99):.1f} | {pct(r['ttfe_sequential'], 0.5):.1f} / "
              f"{pct(r['ttfe_sequential'], 0.99):.1f} | {r['cpu_per_run_ms']:.2f} | "
              f"{r['peak_rss_mib']:.0f} |")  # fmt: skip
    if "ironloop" in results and "langgraph" in results:
        ratio = results["langgraph"]["cpu_per_run_ms"] / results["ironloop"]["cpu_per_run_ms"]
        print(
            f"\nserver CPU per run: {ratio:.1f}x less than langgraph dev (target "
            f">= {TARGET_CPU_RATIO:.0f}x: {'pass' if ratio >= TARGET_CPU_RATIO else 'miss'})"
        )
    if "ironloop" in results:
        over = pct(results["ironloop"]["ttfe_sequential"], 0.5) - delay_ms
        over_c = pct(results["ironloop"]["ttfe"], 0.5) - delay_ms
        print(
            f"TTFE p50 above the model's latency: {over:.1f} ms one at a time, {over_c:.1f} ms "
            f"100 at once (target <= {TARGET_TTFE_MS:.0f} ms)"
        )


if __name__ == "__main__":
    main()
