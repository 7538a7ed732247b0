"""Property tests of the Python side (``IRONLOOP_FUZZ_CASES`` sets the number of cases,
e.g. 1,000,000 for a nightly run):

* Python type -> JSON Schema (seeded random cases): for a generated type and a JSON
  value of that type, ``type_schema`` gives a schema that is valid JSON Schema and
  accepts the value, and the type's converter takes the value; or it refuses the type
  with a ``TypeError`` — nothing else escapes. 10,000 cases in the suite (~1 ms each).
* Checkpoint records read back from SQLite: a stored record corrupted at random
  (bytes replaced, a bit flipped, cut short, tokens inserted, spans deleted; or its
  ``parent_id``) raises ``CheckpointError`` naming the thread and the checkpoint when
  that checkpoint is read — never a panic, never another exception, never another
  state. 10,000 cases in the suite. Read through the public path (``get_state`` /
  ``get_state_history``), so a change of the record format keeps the test meaningful.
"""

from __future__ import annotations

import dataclasses
import enum
import operator
import os
import random
import re
import sqlite3
import typing
from collections import Counter
from pathlib import Path
from typing import Annotated, Any, Literal, Optional, TypedDict, Union

import jsonschema

from ironloop import SqliteSaver, StateGraph
from ironloop._ironloop import _json_schema_errors
from ironloop._schema import type_schema
from ironloop.errors import CheckpointError
from ironloop.graph import END, START

CASES = int(os.environ.get("IRONLOOP_FUZZ_CASES", "10000"))

# --------------------------------------------------------------------------- types

# A case is a seed: the type and a value of it are made from it by `random_type` and
# `sample`, and a failure names the seed that replays it. Drawn through hypothesis, a
# case cost ~9 ms of CPU (`st.recursive` strategies) or ~2 ms (one seed per case),
# most of it the engine's own work; a plain seeded loop costs ~0.7 ms.
BASE = [int, str, float, bool, type(None), Any]
NAMES = ["a", "b", "c", "d", "name", "x_1"]
_counter = iter(range(10**9))
# Classes made from the same fields are the same class (building a dataclass compiles
# code: ~3 ms), so the generator reuses them; the types around them still vary.
_classes: dict[tuple[str, Any], Any] = {}


def typed_dict(fields: list[tuple[str, Any]]) -> Any:
    key = ("td", tuple(dict(fields).items()))
    if key not in _classes:
        _classes[key] = TypedDict(f"TD{next(_counter)}", dict(fields))  # type: ignore[misc]
    return _classes[key]


def data_class(fields: list[tuple[str, Any]]) -> Any:
    key = ("dc", tuple(dict(fields).items()))
    if key not in _classes:
        # No generated __repr__ / __eq__: half the cost, and nothing here needs them.
        _classes[key] = dataclasses.make_dataclass(
            f"DC{next(_counter)}", list(dict(fields).items()), repr=False, eq=False
        )
    return _classes[key]


def an_enum(values: list[Any]) -> Any:
    key = ("enum", tuple(values))
    if key not in _classes:
        members = {f"m{i}": v for i, v in enumerate(values)}
        _classes[key] = enum.Enum(f"E{next(_counter)}", members)  # type: ignore[misc]
    return _classes[key]


def scalars(rng: random.Random) -> list[Any]:
    """1-4 distinct small ints and short strings (Literal and Enum values)."""
    pool = [*range(-5, 6), "", "a", "b", "ab", "é", "x y"]
    return rng.sample(pool, rng.randint(1, 4))


KINDS = [
    "list",
    "dict",
    "optional",
    "union",
    "tuple",
    "tuple...",
    "literal",
    "annotated",
    "typeddict",
    "dataclass",
    "enum",
]


def random_type(rng: random.Random, leaves: list[int] | None = None) -> Any:
    """A type of at most 6 leaves (base types), nested in any of the KINDS."""
    budget = [rng.randint(1, 6)] if leaves is None else leaves
    if budget[0] <= 1 or rng.random() < 0.3:
        budget[0] -= 1
        return rng.choice(BASE)
    kind = rng.choice(KINDS)

    def inner() -> Any:
        return random_type(rng, budget)

    def fields() -> list[tuple[str, Any]]:
        return [(rng.choice(NAMES), inner()) for _ in range(rng.randint(1, 3))]

    if kind == "list":
        return list[inner()]  # type: ignore[misc]
    if kind == "dict":
        return dict[str, inner()]  # type: ignore[misc]
    # The typing spellings, as user code on any version writes them.
    if kind == "optional":
        return Optional[inner()]  # noqa: UP045
    if kind == "union":
        return Union[inner(), inner()]  # noqa: UP007
    if kind == "tuple":
        return tuple[inner(), inner()]  # type: ignore[misc]
    if kind == "tuple...":
        return tuple[inner(), ...]  # type: ignore[misc]
    if kind == "literal":
        return Literal[tuple(scalars(rng))]
    if kind == "annotated":
        return Annotated[inner(), "a note"]
    if kind == "typeddict":
        return typed_dict(fields())
    if kind == "dataclass":
        return data_class(fields())
    return an_enum(scalars(rng))


def sample(tp: Any, rng: random.Random) -> Any:
    """A JSON value of type `tp`."""
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if tp is int:
        return rng.choice([0, -1, 7, 2**40, rng.randint(-(10**6), 10**6)])
    if tp is float:
        return rng.choice([0.0, -1.5, 1e300, rng.random()])
    if tp is bool:
        return rng.random() < 0.5
    if tp is str:
        return rng.choice(["", "x", "é ☃", "a\nb", '"q"'])
    if tp is type(None):
        return None
    if tp is Any:
        return rng.choice([None, 1, "s", [1], {"k": 2}])
    if origin is Annotated:
        return sample(args[0], rng)
    if origin is list or (origin is tuple and args[1:] == (...,)):
        return [sample(args[0], rng) for _ in range(rng.randint(0, 3))]
    if origin is tuple:
        return [sample(a, rng) for a in args]
    if origin is dict:
        return {f"k{i}": sample(args[1], rng) for i in range(rng.randint(0, 3))}
    if origin is Union or (origin is not None and "UnionType" in type(tp).__name__):
        return sample(rng.choice(args), rng)
    if origin is Literal:
        return rng.choice(args)
    if isinstance(tp, type) and issubclass(tp, enum.Enum):
        return rng.choice([m.value for m in tp])
    if dataclasses.is_dataclass(tp):
        return {f.name: sample(f.type, rng) for f in dataclasses.fields(tp)}
    hints = typing.get_type_hints(tp, include_extras=True)
    return {k: sample(v, rng) for k, v in hints.items()}


def check_type_schema(seed: int) -> str:
    """The property for the type and value made from `seed`; says how it ended."""
    rng = random.Random(seed)
    tp = random_type(rng)
    value = sample(tp, rng)
    try:
        schema, convert = type_schema(tp)
    except TypeError as e:
        assert "cannot make a JSON Schema" in str(e)
        return "refused with TypeError"
    # The validator that checks a model's tool-call arguments (Rust) accepts the
    # value; one case in 32 also checks the schema against the meta-schema, and the
    # value with Python's `jsonschema` (another implementation; ~15 ms a case).
    errors = _json_schema_errors(schema, value)
    assert not errors, f"{tp!r}: {value!r} refused: {errors[0]}\n{schema}"
    if seed % 32 == 0:
        jsonschema.Draft202012Validator.check_schema(schema)
        refused = list(jsonschema.Draft202012Validator(schema).iter_errors(value))
        assert not refused, f"{tp!r}: {value!r} refused: {refused[0].message}\n{schema}"
    if convert is not None:
        convert(value)
    return "schema accepts the value"


def test_type_schemas_are_valid_and_accept_values_of_the_type() -> None:
    outcomes: Counter[str] = Counter()
    for seed in range(CASES):
        try:
            outcomes[check_type_schema(seed)] += 1
        except Exception as e:
            raise AssertionError(f"seed {seed} (check_type_schema({seed}) replays it)") from e
    # Most types have a schema (a refusal is e.g. a dict key that is not a string).
    assert outcomes["schema accepts the value"] > CASES // 2, outcomes
    print(dict(outcomes), f"{len(_classes)} classes")


def test_the_type_generator_reaches_every_kind() -> None:
    """The generator is not stuck on a few shapes (checked on a sample)."""
    seen: set[str] = set()
    rng = random.Random(7)
    for _ in range(300):
        tp = random_type(rng)
        origin = typing.get_origin(tp)
        seen.add(getattr(origin or tp, "__name__", str(origin or tp)).split("[")[0])
    assert len(seen) >= 10, seen


# --------------------------------------------------------------------------- checkpoints


class S(TypedDict):
    n: int
    trail: Annotated[list, operator.add]


def build(saver: Any) -> Any:
    g = StateGraph(S)
    g.add_node("a", lambda s: {"n": s["n"] + 1, "trail": [{"step": s["n"], "x": [1.5, None]}]})
    g.add_edge(START, "a")
    g.add_edge("a", END)
    return g.compile(checkpointer=saver)


INSERTS = [b"[", b"{", b"}", b"null", b'"x"', b"1e999", b"-1", b"[[[[", b'"id":', b",", b"\\u"]


def corrupt(rec: bytes, rng: random.Random) -> bytes:
    b = bytearray(rec)
    kind = rng.randrange(5)
    if kind == 0:
        for _ in range(rng.randint(1, 4)):
            b[rng.randrange(len(b))] = rng.randrange(256)
    elif kind == 1:
        # One bit flipped: the change most likely to leave valid JSON of the same shape
        # (a digit of a number, a letter of a string).
        b[rng.randrange(len(b))] ^= 1 << rng.randrange(7)
    elif kind == 2:
        del b[rng.randrange(len(b)) :]
    elif kind == 3:
        i = rng.randrange(len(b))
        b[i:i] = rng.choice(INSERTS)
    else:
        i, j = sorted((rng.randrange(len(b)), rng.randrange(len(b))))
        del b[i:j]
    return bytes(b)


def test_corrupted_checkpoint_records_raise_checkpoint_error(tmp_path: Path) -> None:
    """A record changed in the file reads back as an error naming the thread and the
    checkpoint, never as another state: every record carries a checksum of its bytes
    and of the ids beside it (``src/checkpoint/record/``). Each case changes one
    stored record (its text, or one time in eight its ``parent_id``) and reads that
    checkpoint (``get_state`` at its id), and every tenth case also the latest state
    and the history; what is read must equal what was read before the change, and the
    changed record is never read at all: records are written in format 4, which even
    without its checksum is no record of an older format (format 2, written before
    the checksum existed, is read as it is)."""
    db = str(tmp_path / "c.db")
    graph = build(SqliteSaver.from_conn_string(db))
    cfg = {"configurable": {"thread_id": "t-1"}}
    for i in range(3):
        graph.invoke({"n": i, "trail": []}, cfg)
    good = graph.get_state(cfg)
    good_history = list(graph.get_state_history(cfg))
    conn = sqlite3.connect(db, isolation_level=None)
    conn.execute("PRAGMA synchronous=OFF")
    rows = conn.execute("SELECT seq, checkpoint_id, parent_id, record FROM checkpoints").fetchall()
    assert len(rows) == len(good_history) >= 6, (len(rows), len(good_history))
    at = {
        cid: graph.get_state({"configurable": {"thread_id": "t-1", "checkpoint_id": cid}})
        for _, cid, _, _ in rows
    }
    assert all(s.config["configurable"]["checkpoint_id"] == c for c, s in at.items())
    outcomes: Counter[str] = Counter()

    def read(cid: str, column: str, old: str, bad: str, case: int) -> None:
        try:
            state = graph.get_state({"configurable": {"thread_id": "t-1", "checkpoint_id": cid}})
        except CheckpointError as e:
            text = str(e)
            assert '"t-1"' in text, text
            named = r'checkpoint "[^"]*"|ancestor "[^"]*" of "[^"]*"|id is unreadable'
            assert re.search(named, text), text
            outcomes["CheckpointError"] += 1
            outcomes["... naming the changed record's id"] += f'"{cid}"' in text
            outcomes["... saying the checksum does not match"] += "checksum" in text
        else:
            same = state == at[cid]
            raise AssertionError(f"a changed record read back (the same state: {same})", bad)
        if case % 10 == 0:
            try:
                assert graph.get_state(cfg) == good
                assert list(graph.get_state_history(cfg)) == good_history
                outcomes["latest and history: read, equal"] += 1
            except CheckpointError as e:
                assert '"t-1"' in str(e), str(e)
                outcomes["latest and history: CheckpointError"] += 1

    rng = random.Random(12)
    for case in range(CASES):
        seq, cid, parent, rec = rng.choice(rows)
        if case % 8 == 7:
            column, old = "parent_id", parent
            bad = corrupt((parent or "none").encode(), rng).decode("utf-8", "replace")
        else:
            column, old = "record", rec
            bad = corrupt(rec.encode(), rng).decode("utf-8", "replace")
        if bad == old:
            outcomes["unchanged by the corruption"] += 1
            continue
        conn.execute(f"UPDATE checkpoints SET {column} = ? WHERE seq = ?", (bad, seq))
        try:
            read(cid, column, old, bad, case)
        finally:
            conn.execute(f"UPDATE checkpoints SET {column} = ? WHERE seq = ?", (old, seq))
    assert graph.get_state(cfg) == good
    print(dict(outcomes))
    assert outcomes["CheckpointError"] > CASES * 99 // 100, outcomes
