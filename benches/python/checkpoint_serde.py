"""What a large nested value in a graph's state costs its checkpoints, beside what
``orjson.dumps`` of the same value costs.

The value is a nested dict of about ``--mb`` MB of JSON (records of str, int, float,
bool, lists and dicts, as a tool result or a fetched document is). Printed, each the
median of ``--repeat`` runs after one untimed, as wall time and as the process's CPU
time (the steadier figure on a shared machine):

- ``orjson.dumps(value)``: the yardstick (a Rust encoder writing JSON text);
- the checkpoint encoder alone (``_checkpoint_encode``: Python objects to the JSON text a
  saver stores; ``_checkpoint_encode_pieces``: the same text in the pieces a snapshot
  keeps) and the decoder (the text back to Python objects);
- a run with ``MemorySaver`` that writes the value once and then takes ``--steps`` more
  steps that write a counter, minus the same run without a checkpointer: the value's
  cost to the checkpoints, which must be one encoding, not one per step (with
  ``--steps`` past 15 the run also writes a snapshot, which stores the state again).

    python benches/python/checkpoint_serde.py [--mb 10] [--repeat 5] [--steps 10]

Needs ``orjson`` (requirements-dev.txt).
"""

from __future__ import annotations

import argparse
import gc
import random
import statistics
import time
import uuid
from collections.abc import Callable
from typing import Any, TypedDict

import orjson

from ironloop import END, START, MemorySaver, StateGraph
from ironloop._ironloop import _checkpoint_decode, _checkpoint_encode, _checkpoint_encode_pieces


def nested_value(mb: float, seed: int = 1) -> dict[str, Any]:
    """About ``mb`` MB of JSON as a nested dict."""
    rng = random.Random(seed)
    words = ["alpha", "beta", "gamma", "delta", "épsilon", "zeta", "eta", "theta", "😀"]
    records: list[dict[str, Any]] = []
    out = {"meta": {"source": "bench", "version": 3}, "records": records}
    size, target = 0, int(mb * 1_000_000)
    i = 0
    while size < target:
        rec = {
            "id": i,
            "name": f"user-{i}",
            "score": rng.random() * 100,
            "active": rng.random() < 0.5,
            "tags": [rng.choice(words) for _ in range(4)],
            "address": {"street": f"{i} {rng.choice(words)} road", "zip": f"{i % 99999:05d}"},
            "history": [{"t": i * 10 + j, "v": rng.random(), "ok": j % 2 == 0} for j in range(4)],
            "note": None,
        }
        records.append(rec)
        size += len(orjson.dumps(rec))
        i += 1
    return out


def median_of(fn: Callable[[], Any], repeat: int) -> tuple[float, float]:
    """The median wall time of ``fn`` and the median CPU time of the process over it
    (all threads: on a shared machine, what the load distorts least)."""
    fn()  # untimed
    walls, cpus = [], []
    for _ in range(repeat):
        gc.collect()
        c, t = time.process_time(), time.perf_counter()
        fn()
        walls.append(time.perf_counter() - t)
        cpus.append(time.process_time() - c)
    return statistics.median(walls), statistics.median(cpus)


class State(TypedDict, total=False):
    big: dict[str, Any]
    i: int


def graph(saver: Any, steps: int) -> Any:
    g = StateGraph(State)
    g.add_node("tick", lambda s: {"i": s.get("i", 0) + 1})
    g.add_edge(START, "tick")
    g.add_conditional_edges("tick", lambda s: "tick" if s["i"] < steps else END, ["tick", END])
    return g.compile(checkpointer=saver)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--mb", type=float, default=10.0, help="size of the value's JSON")
    ap.add_argument("--repeat", type=int, default=5, help="timed runs (median)")
    ap.add_argument("--steps", type=int, default=10, help="steps of the run after the write")
    args = ap.parse_args()

    value = nested_value(args.mb)
    text = _checkpoint_encode(value)
    assert orjson.loads(text) == value, "the checkpoint JSON of plain data is plain JSON"
    print(f"value: {len(orjson.dumps(value)) / 1e6:.1f} MB of JSON")

    t_orjson = median_of(lambda: orjson.dumps(value), args.repeat)
    t_enc = median_of(lambda: _checkpoint_encode(value), args.repeat)
    t_pieces = median_of(lambda: _checkpoint_encode_pieces(value), args.repeat)
    t_dec = median_of(lambda: _checkpoint_decode(text), args.repeat)
    t_orjson_loads = median_of(lambda: orjson.loads(text), args.repeat)

    plain, saved = graph(None, args.steps), graph(MemorySaver(), args.steps)

    def run(app: Any) -> Callable[[], Any]:
        def go() -> Any:
            cfg = {"configurable": {"thread_id": uuid.uuid4().hex}}
            return app.invoke({"big": value, "i": 0}, cfg)

        return go

    t_none = median_of(run(plain), args.repeat)
    t_saver = median_of(run(saved), args.repeat)
    cost = (t_saver[0] - t_none[0], t_saver[1] - t_none[1])

    def row(name: str, t: tuple[float, float], base: tuple[float, float]) -> None:
        wall, cpu = (f"{x * 1e3:9.1f} ms {x / b:5.2f}x" for x, b in zip(t, base, strict=True))
        print(f"  {name:<48} {wall}   cpu {cpu}")

    print(
        f"per value (median of {args.repeat}): wall, then CPU, each with its ratio to orjson.dumps:"
    )
    row("orjson.dumps", t_orjson, t_orjson)
    row("checkpoint encode (objects -> stored JSON text)", t_enc, t_orjson)
    row("checkpoint encode in pieces (a snapshot's)", t_pieces, t_orjson)
    row("orjson.loads", t_orjson_loads, t_orjson)
    row("checkpoint decode (stored JSON text -> objects)", t_dec, t_orjson)
    print(f"a run writing it once, then {args.steps} steps:")
    row("without a checkpointer", t_none, t_orjson)
    row("with MemorySaver", t_saver, t_orjson)
    row("the checkpoints' cost (MemorySaver - none)", cost, t_orjson)


if __name__ == "__main__":
    main()
