"""Checkpoint values: encoded and decoded in Rust, exactly, and as data, never code.

- Any JSON-like value (with lone surrogates, non-BMP text, big ints, NaN, ±inf, -0.0,
  and dicts shaped like the format's own tags at any depth) round-trips exactly: 10,000
  seeded values through the codec itself, a few hundred through each saver with a
  fresh compiled graph reading them back.
- A stored type name is never imported: a type outside the graph's allowlist loads as
  its plain data with a ``CheckpointTypeWarning``.
- Allowed types (schema types, ``serde_allowlist=`` classes and pairs, messages) come
  back typed; a value that did not change is encoded once.
"""

from __future__ import annotations

import copy
import dataclasses
import enum
import json
import math
import random
import struct
import sys
import warnings
from collections import OrderedDict
from pathlib import Path
from typing import Annotated, Any, NamedTuple, Optional, TypedDict, Union

import pydantic
import pytest

from ironloop import END, START, MemorySaver, StateGraph
from ironloop._ironloop import _checkpoint_decode, _checkpoint_encode
from ironloop.errors import CheckpointError, CheckpointTypeWarning
from ironloop.messages import AIMessage, HumanMessage

# ------------------------------------------------------------------ generation

_TEXT = [
    "a",
    "Z",
    " ",
    '"',
    "\\",
    "\x00",
    "\n",
    "é",
    "€",
    "😀",  # non-BMP
    "\U0010ffff",
    "\ud800",  # lone surrogates, high and low
    "\udfff",
    "\ud83d",
    "__ironloop_type__",
    "__ironloop_message__",
]
_KEYS = ["", "a", "b", "__ironloop_type__", "__ironloop_message__", "__ironloop_x", "k\ud800"]
_INTS = [0, 1, -1, 2**31, 2**53 + 1, 2**63 - 1, -(2**63), 2**64 - 1, 2**64, -(2**63) - 1]
_FLOATS = [0.0, -0.0, 1.5, math.nan, math.inf, -math.inf, 5e-324, 1.7976931348623157e308]


def _text(rng: random.Random) -> str:
    return "".join(rng.choice(_TEXT) for _ in range(rng.randrange(0, 6)))


def _int(rng: random.Random) -> int:
    r = rng.random()
    if r < 0.4:
        return rng.choice(_INTS)
    if r < 0.8:
        return rng.randrange(-(10**6), 10**6)
    if r < 0.97:
        return rng.choice([-1, 1]) * rng.getrandbits(rng.randrange(65, 400))
    return rng.choice([-1, 1]) * 10**5000  # beyond Python's int-to-text limit


def _float(rng: random.Random) -> float:
    if rng.random() < 0.5:
        return rng.choice(_FLOATS)
    return struct.unpack("<d", rng.getrandbits(64).to_bytes(8, "little"))[0]  # type: ignore[no-any-return]


def _hashable(rng: random.Random) -> Any:
    return rng.choice([_int, _text])(rng)


def _tag_shaped(rng: random.Random, depth: int) -> dict[str, Any]:
    """A dict a user or a model could write that looks like one of the format's tags."""
    inner = value(rng, depth + 1)
    return rng.choice(
        [
            {"__ironloop_type__": "tuple", "items": [inner]},
            {"__ironloop_type__": "antigravity:Fly", "value": inner},
            {"__ironloop_type__": "float", "value": "nan"},
            {"__ironloop_type__": "int", "value": "0x10"},
            {"__ironloop_type__": "str", "parts": ["a", 55296]},
            {"__ironloop_type__": "dict", "items": [["a", inner]]},
            {"__ironloop_message__": {"type": "human", "content": "hi", "id": "1"}},
            {"__ironloop_type__": inner},
            {"x": inner, "__ironloop_type__": "set", "items": []},
        ]
    )


def value(rng: random.Random, depth: int = 0) -> Any:
    """A random value of the kinds a state holds as data."""
    scalars = ["none", "bool", "int", "float", "str"]
    kinds = scalars if depth >= 4 else [*scalars, "list", "dict", "tag", "tuple", "set"]
    kind = rng.choice(kinds)
    if kind == "none":
        return None
    if kind == "bool":
        return rng.random() < 0.5
    if kind == "int":
        return _int(rng)
    if kind == "float":
        return _float(rng)
    if kind == "str":
        return _text(rng)
    n = rng.randrange(0, 4)
    if kind == "list":
        return [value(rng, depth + 1) for _ in range(n)]
    if kind == "dict":
        return {rng.choice([*_KEYS, _text(rng)]): value(rng, depth + 1) for _ in range(n)}
    if kind == "tag":
        return _tag_shaped(rng, depth)
    if kind == "tuple":
        return tuple(value(rng, depth + 1) for _ in range(n))
    items = {_hashable(rng) for _ in range(n)}
    return rng.choice([set, frozenset])(items)


def same(a: Any, b: Any) -> bool:
    """Exactly the same value: same types, dict key order, float bits (any NaN)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, float):
        if math.isnan(a):
            return math.isnan(b)
        return a == b and math.copysign(1, a) == math.copysign(1, b)
    if isinstance(a, dict):
        return list(a) == list(b) and all(same(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b)


def _strict_json(text: bytes) -> Any:
    def refuse(name: str) -> Any:
        raise AssertionError(f"{name} in checkpoint JSON: {text[:200]!r}")

    return json.loads(text, parse_constant=refuse)


# ------------------------------------------------------------ the codec itself


def test_ten_thousand_values_round_trip_exactly_through_the_codec() -> None:
    rng = random.Random(20260228)
    for i in range(10_000):
        v = value(rng)
        text = _checkpoint_encode(v)
        _strict_json(text)  # plain JSON: no NaN / Infinity literals
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # plain data never warns
            back = _checkpoint_decode(text)
        assert same(v, back), f"case {i}: {v!r} came back as {back!r} (stored {text!r})"


def test_special_values_take_their_tagged_forms() -> None:
    assert _strict_json(_checkpoint_encode(math.nan)) == {
        "__ironloop_type__": "float",
        "value": "nan",
    }
    assert _checkpoint_encode(-0.0) == b"-0.0"
    assert _strict_json(_checkpoint_encode(-(2**70))) == {
        "__ironloop_type__": "int",
        "value": hex(-(2**70)),
    }
    assert _strict_json(_checkpoint_encode("a\ud800b")) == {
        "__ironloop_type__": "str",
        "parts": ["a", 0xD800, "b"],
    }
    # A dict shaped like a tag is escaped, so it reads back as the same dict.
    d = {"__ironloop_type__": "tuple", "items": [1, 2]}
    assert _strict_json(_checkpoint_encode(d)) == {
        "__ironloop_type__": "dict",
        "items": [["__ironloop_type__", "tuple"], ["items", [1, 2]]],
    }
    assert same(_checkpoint_decode(_checkpoint_encode(d)), d)
    # Plain data stays plain JSON (what checkpoints before the tags held).
    plain = {"a": [1, 2.5, "x", None, True], "b": {"c": "d"}}
    assert json.loads(_checkpoint_encode(plain)) == plain


def test_a_reserved_key_met_late_escapes_only_its_dict() -> None:
    # The encoder writes a dict in one pass, and walks the value again when a key of
    # the escaped form turns up after text was written: only that dict is escaped, and
    # the text is the same wherever the key is met.
    rows = [{"id": i, "name": f"n{i}", "tags": ["a", "b"]} for i in range(40)]
    late = {"a": 1, "b": rows[:2], "__ironloop_type__": "tuple", "k\ud800": rows}
    value = {"rows": rows, "late": late, "again": rows, "last": {"z": [rows]}}
    text = _checkpoint_encode(value)
    doc = json.loads(text)
    assert doc["rows"] == rows and doc["again"] == rows and doc["last"] == {"z": [rows]}
    assert doc["late"]["__ironloop_type__"] == "dict"
    assert [k for k, _ in doc["late"]["items"]][:3] == ["a", "b", "__ironloop_type__"]
    assert same(_checkpoint_decode(text), value)
    assert _checkpoint_encode(copy.deepcopy(value)) == text
    first = {"late": late, "rows": rows}
    assert json.loads(_checkpoint_encode(first))["late"] == doc["late"]


def test_checkpoint_json_written_before_the_tags_still_reads() -> None:
    old = {
        "t": {"__ironloop_type__": "tuple", "items": [1, [2]]},
        "s": {"__ironloop_type__": "frozenset", "items": ["a"]},
        "m": {"__ironloop_message__": {"type": "human", "content": "hi", "id": "m1"}},
        "plain": {"x": [1, 2.0, "y"]},
    }
    back = _checkpoint_decode(json.dumps(old))
    assert back["t"] == (1, [2]) and back["s"] == frozenset({"a"})
    assert isinstance(back["m"], HumanMessage) and back["m"].content == "hi"
    assert back["plain"] == {"x": [1, 2.0, "y"]}


def test_dict_and_list_subclasses_are_stored_as_plain_data() -> None:
    class Items(list[int]):
        pass

    back = _checkpoint_decode(_checkpoint_encode([OrderedDict(b=1, a=2), Items([1])]))
    assert back == [{"b": 1, "a": 2}, [1]] and list(back[0]) == ["b", "a"]
    assert type(back[0]) is dict and type(back[1]) is list


def test_str_int_and_float_subclasses_are_stored_as_their_value() -> None:
    """A message's ``.text`` (a ``str`` subclass) put in an interrupt payload or the
    state is stored as the text it is, not refused."""

    class Text(str):
        pass

    class Count(int):
        pass

    class Ratio(float):
        pass

    text = AIMessage("hello").text
    value = [Text("a"), Count(3), Ratio(0.5), Ratio("nan"), text]
    back = _checkpoint_decode(_checkpoint_encode(value))
    assert back[:3] == ["a", 3, 0.5] and math.isnan(back[3]) and back[4] == "hello"
    assert [type(v) for v in back] == [str, int, float, float, str]


def test_what_a_checkpoint_cannot_hold_is_refused_naming_type_and_place() -> None:
    with pytest.raises(TypeError, match=r"object is not a type .*\['a'\]\[1\]"):
        _checkpoint_encode({"a": [1, object()]})
    with pytest.raises(TypeError, match=r"dict keys must be str.*int"):
        _checkpoint_encode({1: "x"})
    with pytest.raises(TypeError, match=r"Pair is not a type"):
        _checkpoint_encode(Pair(1, 2))  # a tuple subclass: its type would be lost
    loop: list[Any] = []
    loop.append(loop)
    with pytest.raises(TypeError, match="nests deeper"):
        _checkpoint_encode(loop)


@dataclasses.dataclass
class _Meddler:
    """A dataclass whose field, read by the encoder, runs its ``meddle`` (set after it
    is made, not a field): Python code that changes the very value being encoded."""

    x: int

    def __getattribute__(self, name: str) -> Any:
        if name == "x":
            object.__getattribute__(self, "meddle")()
        return object.__getattribute__(self, name)


def test_a_value_changed_by_python_code_while_it_is_encoded_is_refused_safely() -> None:
    # The encoder reads a dict's and a list's plain items without a reference of its
    # own; Python code that runs while it writes an item (a dataclass's field here)
    # and frees the other items, or the containers the walk is inside, is caught, and
    # nothing freed is read.
    m = _Meddler(1)
    d = {"a": "s" * 50, "m": m, "z": [1.5]}
    m.meddle = d.clear
    with pytest.raises(TypeError, match="the dict changed while it was checkpointed"):
        _checkpoint_encode({"v": d})
    m = _Meddler(1)
    items = ["s" * 50, m, "t" * 50, 2]
    m.meddle = items.clear
    with pytest.raises(TypeError, match="the list changed while it was checkpointed"):
        _checkpoint_encode({"v": items})
    m = _Meddler(1)
    box = {"in": [{"m": m}, "u" * 50], "after": "w" * 50}
    m.meddle = box.clear  # frees the list and dict the walk is inside
    with pytest.raises(TypeError, match="the dict changed while it was checkpointed"):
        _checkpoint_encode(box)
    # A str that is not UTF-8 among plain items is still written exactly.
    v = {"a": ["x", "\ud800", {"b": "y\udfffz"}], "c": "\ud83d"}
    assert same(_checkpoint_decode(_checkpoint_encode(v)), v)


def test_a_large_value_held_in_many_places_is_stored_as_each_copy() -> None:
    # The encoder copies the text of a large dict or list it met before instead of
    # walking it again: the text must be that of a walk of each place.
    doc = {f"k{i}": [i, "x" * i, {"__ironloop_type__": "tuple", "i": i}] for i in range(20)}
    rows = list(range(40))
    shared = {"a": doc, "b": [doc, rows, {"c": doc}], "d": rows, "e": (doc, rows), "f": doc}
    text = _checkpoint_encode(shared)
    assert text == _checkpoint_encode(copy.deepcopy(shared))
    assert _checkpoint_decode(text) == shared
    # Met again where a walk still fits under the depth limit: copied, same text.
    inner: Any = [0]
    for _ in range(15):
        inner = [inner]
    big = [inner] * 20
    ok: Any = big
    for _ in range(90):
        ok = [ok]
    assert _checkpoint_encode([big, ok]) == _checkpoint_encode(copy.deepcopy([big, ok]))
    # Met again deeper than a walk may go: refused, as a walk of that place is.
    deep: Any = big
    for _ in range(110):
        deep = [deep]
    with pytest.raises(TypeError, match="nests deeper"):
        _checkpoint_encode([big, deep])


# ------------------------------------------------------------------ allowlist


class Pair(NamedTuple):
    a: int
    b: int


@dataclasses.dataclass
class Point:
    x: int
    y: int


class Color(enum.Enum):
    RED = "red"
    BLUE = "blue"


class Money(pydantic.BaseModel):
    amount: int
    currency: str


@dataclasses.dataclass
class Box:
    items: list[Point]
    color: Color = Color.RED
    tag: str = dataclasses.field(default="t", init=False)


class Registered(pydantic.BaseModel):
    note: str


def _path(cls: type) -> str:
    return f"{cls.__module__}:{cls.__qualname__}"


def test_a_stored_module_name_is_never_imported() -> None:
    sys.modules.pop("antigravity", None)
    crafted = json.dumps(
        {
            "__ironloop_type__": "antigravity:Fly",
            "value": {"to": "xkcd", "inner": {"__ironloop_type__": "os:system", "value": "x"}},
        }
    )
    with pytest.warns(CheckpointTypeWarning, match="serde_allowlist") as w:
        before = set(sys.modules)
        back = _checkpoint_decode(crafted)
        after = set(sys.modules)
    assert back == {"to": "xkcd", "inner": "x"}
    assert "antigravity" not in sys.modules
    assert after == before
    assert {str(x.message).split(" was ")[0] for x in w} == {
        "a checkpointed value of type antigravity:Fly",
        "a checkpointed value of type os:system",
    }


def test_allowed_types_come_back_typed_and_others_as_data() -> None:
    p = Point(1, 2)
    text = _checkpoint_encode(p)
    assert _checkpoint_decode(text, {_path(Point): Point}) == p
    with pytest.warns(CheckpointTypeWarning, match="Point"):
        assert _checkpoint_decode(text) == {"x": 1, "y": 2}
    box = Box([p], Color.BLUE)
    box.tag = "kept"
    allow = {_path(t): t for t in (Box, Point, Color)}
    back = _checkpoint_decode(_checkpoint_encode(box), allow)
    assert back == box and back.tag == "kept" and back.color is Color.BLUE
    m = Money(amount=5, currency="EUR")
    assert _checkpoint_decode(_checkpoint_encode(m), {_path(Money): Money}) == m


@dataclasses.dataclass
class Odd:
    __ironloop_message__: str  # a field named like a tag key


def test_fields_named_like_tag_keys_are_escaped() -> None:
    back = _checkpoint_decode(_checkpoint_encode(Odd("x")), {_path(Odd): Odd})
    assert back == Odd("x")


def test_an_allowed_type_whose_data_no_longer_fits_loads_as_data() -> None:
    text = json.dumps({"__ironloop_type__": _path(Point), "value": {"x": 1}})
    with pytest.warns(CheckpointTypeWarning, match="could not be rebuilt"):
        assert _checkpoint_decode(text, {_path(Point): Point}) == {"x": 1}


# ------------------------------------------------------------ through savers


class AnyState(TypedDict, total=False):
    v: Any


def _writer(saver: Any, **kw: Any) -> Any:
    g = StateGraph(AnyState)
    g.add_node("put", lambda s: {"v": s["v"]})
    g.add_edge(START, "put").add_edge("put", END)
    return g.compile(checkpointer=saver, **kw)


def _cfg(thread: str) -> dict[str, Any]:
    return {"configurable": {"thread_id": thread}}


def test_values_round_trip_exactly_through_each_saver(saver) -> None:
    rng = random.Random(7)
    values = [value(rng) for _ in range(150)]
    values += [
        {"__ironloop_type__": "tuple", "items": [1, 2]},
        {"deep": [{"__ironloop_message__": {"type": "human", "content": "x"}}]},
        {"__ironloop_type__": "json:loads", "value": "[]"},
        [math.nan, math.inf, -math.inf, -0.0],
        "lone \udc80 surrogate",
        2**100,
    ]
    app = _writer(saver)
    for i, v in enumerate(values):
        app.invoke({"v": v}, _cfg(f"t{i}"))
    fresh = _writer(saver)  # no cached state: every value is read from the store
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for i, v in enumerate(values):
            back = fresh.get_state(_cfg(f"t{i}")).values["v"]
            assert same(v, back), f"{v!r} came back as {back!r}"
            # And through the compiled graph's own cached state.
            assert same(v, app.get_state(_cfg(f"t{i}")).values["v"])


class Nested(TypedDict, total=False):
    # The spellings the schema walk must see through, old and new.
    points: list[Optional[Point]]  # noqa: UP045
    money: Annotated[Union[Money, None], "meta"]  # noqa: UP007
    colors: dict[str, Color]
    other: Any


def test_schema_registered_and_message_types_come_back_typed(saver) -> None:
    g = StateGraph(Nested)
    g.add_node("put", lambda s: s)
    g.add_edge(START, "put").add_edge("put", END)
    state = {
        "points": [Point(1, 2), None],
        "money": Money(amount=3, currency="USD"),
        "colors": {"a": Color.BLUE},
        "other": (
            Registered(note="n"),
            {AIMessage(content="hi", id="a1").id},
            [HumanMessage(content="q", id="h1")],
        ),
    }
    g.compile(checkpointer=saver, serde_allowlist=[Registered]).invoke(state, _cfg("x"))
    fresh = g.compile(checkpointer=saver, serde_allowlist=[Registered])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = fresh.get_state(_cfg("x")).values
    assert got["points"] == [Point(1, 2), None]
    assert got["money"] == Money(amount=3, currency="USD")
    assert got["colors"]["a"] is Color.BLUE
    reg, ids, msgs = got["other"]
    assert reg == Registered(note="n") and ids == {"a1"}
    assert isinstance(msgs[0], HumanMessage) and msgs[0].content == "q"
    # Without the registration the unlisted type loads as its data, with a warning.
    with pytest.warns(CheckpointTypeWarning, match="Registered"):
        got = g.compile(checkpointer=saver).get_state(_cfg("x")).values
    assert got["other"][0] == {"note": "n"}


def test_a_type_from_an_unimported_module_stays_data(tmp_path: Path) -> None:
    mod = "ironloop_serde_test_secret"
    (tmp_path / f"{mod}.py").write_text(
        "import dataclasses\n\n@dataclasses.dataclass\nclass Secret:\n    code: str\n"
    )
    sys.path.insert(0, str(tmp_path))
    try:
        module = __import__(mod)
        saver = MemorySaver()
        _writer(saver, serde_allowlist=[module.Secret]).invoke(
            {"v": module.Secret("s3")}, _cfg("s")
        )
        del sys.modules[mod]
        with pytest.warns(CheckpointTypeWarning, match="not in this graph's allowlist"):
            assert _writer(saver).get_state(_cfg("s")).values["v"] == {"code": "s3"}
        # Allowed by name: found only among modules already imported.
        by_name = _writer(saver, serde_allowlist=[(mod, "Secret")])
        with pytest.warns(CheckpointTypeWarning, match="not imported"):
            assert by_name.get_state(_cfg("s")).values["v"] == {"code": "s3"}
        assert mod not in sys.modules
        module = __import__(mod)
        back = _writer(saver, serde_allowlist=[(mod, "Secret")]).get_state(_cfg("s"))
        assert back.values["v"] == module.Secret("s3")
    finally:
        sys.path.remove(str(tmp_path))
        sys.modules.pop(mod, None)


def test_serde_allowlist_refuses_what_names_no_type() -> None:
    with pytest.raises(TypeError, match=r"classes or \(module, qualname\) pairs"):
        _writer(MemorySaver(), serde_allowlist=["mod:Name"])


def test_an_unstorable_value_names_its_channel(saver) -> None:
    with pytest.raises(CheckpointError, match=r'channel "v".*object is not a type'):
        _writer(saver).invoke({"v": {"k": object()}}, _cfg("bad"))


# --------------------------------------------------------------- encoded once


_DUMPS = [0]


class Counted(pydantic.BaseModel):
    blob: list[int]

    def model_dump(self, *args: Any, **kwargs: Any) -> dict[str, Any]:
        _DUMPS[0] += 1
        return super().model_dump(*args, **kwargs)


class Loop(TypedDict, total=False):
    big: Counted
    odd: Any
    i: int


#: Read back from the snapshots (every 16 records) of the looping graph below.
_ODD = {
    "__ironloop_type__": "os:system",
    "value": [math.nan, -0.0, 2**80, "\udc00", ("t",), {"__ironloop_message__": {}}],
}


def _loop(saver: Any, steps: int) -> Any:
    g = StateGraph(Loop)
    g.add_node("tick", lambda s: {"i": s.get("i", 0) + 1})
    g.add_edge(START, "tick")
    g.add_conditional_edges("tick", lambda s: "tick" if s["i"] % steps else END, ["tick", END])
    return g.compile(checkpointer=saver)


@pytest.mark.parametrize("durability", ["sync", "exit"])
def test_a_value_that_did_not_change_is_encoded_once(saver, durability: str) -> None:
    _DUMPS[0] = 0
    app = _loop(saver, 40)  # 40 records: two snapshots, then the cached state
    app.invoke(
        {"big": Counted(blob=[1, 2, 3]), "odd": _ODD, "i": 0}, _cfg("once"), durability=durability
    )
    assert _DUMPS[0] == 1
    app.invoke({"i": 40}, _cfg("once"), durability=durability)  # from the cached state
    fresh = _loop(saver, 40)
    fresh.invoke({"i": 80}, _cfg("once"), durability=durability)  # from the store
    assert _DUMPS[0] == 1
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        values = _loop(saver, 40).get_state(_cfg("once")).values
    assert values["big"] == Counted(blob=[1, 2, 3]) and values["i"] == 120
    assert same(values["odd"], _ODD)
