"""Property tests of the Python side (``IRONLOOP_FUZZ_CASES`` sets the number of cases,
e.g. 1,000,000 for a nightly run):

* Python type -> JSON Schema (hypothesis): for a generated type and a JSON value of that
  type, ``type_schema`` gives a schema that is valid JSON Schema and accepts the value,
  and the type's converter takes the value; or it refuses the type with a
  ``TypeError`` — nothing else escapes. 2,000 cases in the suite (each costs 5-20 ms).
* Checkpoint records read back from SQLite: a stored record corrupted at random
  (bytes replaced, cut short, tokens inserted, spans deleted) reads back as a state or
  raises ``CheckpointError`` naming the thread and the checkpoint (also for a record
  that decodes but does not fit the graph) — never a panic, never another exception.
  10,000 cases in the suite. Read through the public path (``get_state`` /
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
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ironloop import SqliteSaver, StateGraph
from ironloop._schema import type_schema
from ironloop.errors import CheckpointError
from ironloop.graph import END, START

CASES = int(os.environ.get("IRONLOOP_FUZZ_CASES", "10000"))
# The type -> schema property costs ~5-20 ms a case (hypothesis draws, jsonschema):
# 2,000 in the suite, the nightly command runs IRONLOOP_FUZZ_CASES.
SCHEMA_CASES = int(os.environ.get("IRONLOOP_FUZZ_CASES", "2000"))

# --------------------------------------------------------------------------- types

FLOATS = st.floats(allow_nan=False, allow_infinity=False)
NAMES = st.sampled_from(["a", "b", "c", "d", "name", "x_1"])
_counter = iter(range(10**9))

# Types are drawn by hypothesis; a value of each is made by `sample` from a drawn seed
# (a value strategy built per type would be validated anew on every example: 30x
# slower).
BASE = st.sampled_from([int, str, float, bool, type(None), Any])


def typed_dict(fields: list[tuple[str, Any]]) -> Any:
    return TypedDict(f"TD{next(_counter)}", dict(fields))  # type: ignore[misc]


def data_class(fields: list[tuple[str, Any]]) -> Any:
    return dataclasses.make_dataclass(f"DC{next(_counter)}", list(dict(fields).items()))


def an_enum(values: list[Any]) -> Any:
    return enum.Enum(f"E{next(_counter)}", {f"m{i}": v for i, v in enumerate(values)})  # type: ignore[misc]


def extend(inner: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    fields = st.lists(st.tuples(NAMES, inner), min_size=1, max_size=3)
    scalars = st.lists(
        st.integers(-5, 5) | st.text(max_size=3), min_size=1, max_size=4, unique=True
    )
    return st.one_of(
        inner.map(lambda t: list[t]),
        inner.map(lambda t: dict[str, t]),
        inner.map(lambda t: Optional[t]),
        st.tuples(inner, inner).map(lambda ts: Union[ts[0], ts[1]]),
        st.tuples(inner, inner).map(lambda ts: tuple[ts[0], ts[1]]),
        inner.map(lambda t: tuple[t, ...]),
        scalars.map(lambda vs: Literal[tuple(vs)]),
        inner.map(lambda t: Annotated[t, "a note"]),
        fields.map(typed_dict),
        fields.map(data_class),
        scalars.map(an_enum),
    )


TYPES = st.recursive(BASE, extend, max_leaves=6)


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


@settings(
    max_examples=SCHEMA_CASES,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=list(HealthCheck),
)
@given(TYPES, st.integers(0, 2**32))
def test_type_schemas_are_valid_and_accept_values_of_the_type(tp: Any, seed: int) -> None:
    value = sample(tp, random.Random(seed))
    try:
        schema, convert = type_schema(tp)
    except TypeError as e:
        assert "cannot make a JSON Schema" in str(e)
        return
    if seed % 16 == 0:
        # Checking a schema against the meta-schema costs more than everything else
        # here: one case in 16 does it.
        jsonschema.Draft202012Validator.check_schema(schema)
    errors = list(jsonschema.Draft202012Validator(schema).iter_errors(value))
    assert not errors, f"{tp!r}: {value!r} refused: {errors[0].message}\n{schema}"
    if convert is not None:
        convert(value)


def test_the_type_strategy_reaches_every_kind() -> None:
    """The generator is not stuck on a few shapes (checked on a sample)."""
    seen: set[str] = set()

    @settings(max_examples=300, derandomize=True, database=None, deadline=None)
    @given(TYPES)
    def collect(tp: Any) -> None:
        origin = typing.get_origin(tp)
        seen.add(getattr(origin or tp, "__name__", str(origin or tp)).split("[")[0])

    collect()
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
    kind = rng.randrange(4)
    if kind == 0:
        for _ in range(rng.randint(1, 4)):
            b[rng.randrange(len(b))] = rng.randrange(256)
    elif kind == 1:
        del b[rng.randrange(len(b)) :]
    elif kind == 2:
        i = rng.randrange(len(b))
        b[i:i] = rng.choice(INSERTS)
    else:
        i, j = sorted((rng.randrange(len(b)), rng.randrange(len(b))))
        del b[i:j]
    return bytes(b)


def test_corrupted_checkpoint_records_raise_checkpoint_error(tmp_path: Path) -> None:
    db = str(tmp_path / "c.db")
    graph = build(SqliteSaver.from_conn_string(db))
    cfg = {"configurable": {"thread_id": "t-1"}}
    for i in range(3):
        graph.invoke({"n": i, "trail": []}, cfg)
    good = graph.get_state(cfg).values
    conn = sqlite3.connect(db, isolation_level=None)
    conn.execute("PRAGMA synchronous=OFF")
    rows = conn.execute("SELECT seq, checkpoint_id, record FROM checkpoints").fetchall()
    rng = random.Random(12)
    outcomes: Counter[str] = Counter()
    for case in range(CASES):
        seq, cid, rec = rng.choice(rows)
        bad = corrupt(rec.encode(), rng).decode("utf-8", "replace")
        conn.execute("UPDATE checkpoints SET record = ? WHERE seq = ?", (bad, seq))
        try:
            state = graph.get_state(cfg)
            if case % 10 == 0:
                list(graph.get_state_history(cfg))
            outcomes["same state" if state.values == good else "read, other state"] += 1
        except CheckpointError as e:
            text = str(e)
            assert '"t-1"' in text, text
            named = r'checkpoint "[^"]*"|ancestor "[^"]*" of "[^"]*"|id is unreadable'
            assert re.search(named, text), text
            outcomes["CheckpointError"] += 1
            outcomes["... naming the stored id"] += f'"{cid}"' in text
            # A record that decodes but does not fit the graph (a channel name cut in
            # half) is one too, naming the checkpoint it was read from.
            outcomes["... not fitting the graph"] += "does not fit this graph" in text
        finally:
            conn.execute("UPDATE checkpoints SET record = ? WHERE seq = ?", (rec, seq))
    assert graph.get_state(cfg).values == good
    # Most corruptions hit records the latest state does not read, or bytes that do
    # not change it; the rest must be caught (1,769 of 10,000 with this seed).
    assert outcomes["CheckpointError"] > CASES // 20, outcomes
    print(dict(outcomes))
