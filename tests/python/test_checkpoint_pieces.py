"""A snapshot's text in pieces: a large container met again is the piece written for
it the first time, shared, and the pieces always join into the one-text encoding.

This is what keeps a state holding one document in many places (LangGraph's
``wide_state`` benchmarks: one ~8 KB dict ~2,000 times) from writing megabytes of
copies per checkpoint; every test here checks the text is still exactly a walk of
each place, through the codec and through a saver.
"""

from __future__ import annotations

import copy
import json
import operator
import random
from typing import Annotated, Any, TypedDict

import pytest
from test_serde import same, value

from ironloop import END, START, MemorySaver, StateGraph
from ironloop._ironloop import _checkpoint_decode, _checkpoint_encode, _checkpoint_encode_pieces


def _doc(i: int, size: int = 40) -> dict[str, Any]:
    """A dict whose text is a few KB (well over the size a piece of its own needs)."""
    return {f"field{k}": {"n": k * i, "s": "é€😀" * 4, "l": list(range(8))} for k in range(size)}


def test_random_values_join_into_the_one_text_encoding() -> None:
    rng = random.Random(20261129)
    for i in range(3_000):
        v = value(rng)
        # Repeated, so that some values are met again (large or not).
        shared = [v, {"a": v, "b": [v] * 20}, v]
        assert b"".join(_checkpoint_encode_pieces(shared)) == _checkpoint_encode(shared), i


def test_a_large_dict_met_again_is_one_piece_shared() -> None:
    doc = _doc(1)
    inner = _checkpoint_encode(doc)[1:-1]
    value = {"head": "x", "docs": [doc] * 200, "tail": [doc, 1]}
    pieces = _checkpoint_encode_pieces(value)
    assert b"".join(pieces) == _checkpoint_encode(value)
    assert _checkpoint_decode(b"".join(pieces)) == value
    # The dict's text between its braces is a piece, once per place (201 of them).
    assert sum(p == inner for p in pieces) == 201
    # Everything else is the glue between them (brackets, commas, the other keys).
    assert sum(len(p) for p in pieces if p != inner) < 1_000


def test_a_large_dict_of_few_items_met_again_is_shared() -> None:
    # Five items, each large: what LangGraph's `wide_state` repeats ~1,700 times.
    doc = {f"k{i}": "x" * 2_000 for i in range(5)}
    inner = _checkpoint_encode(doc)[1:-1]
    value = [doc] * 50
    pieces = _checkpoint_encode_pieces(value)
    assert b"".join(pieces) == _checkpoint_encode(value) == _checkpoint_encode(copy.deepcopy(value))
    assert sum(p == inner for p in pieces) == 50


def test_a_mid_sized_container_met_again_is_shared_after_its_first_place() -> None:
    # Under a piece's size when written (~900 bytes: stays in the text around it), met
    # again it is one piece shared by every later place (LangGraph's `pydantic_state`:
    # each message dict a copy, the dicts inside shared), not a copy per place.
    mid = {f"k{j}": ["hi?" * 10, True, 1, 6327816386138, None] * 5 for j in range(3)}
    inner = _checkpoint_encode(mid)[1:-1]
    assert 256 <= len(inner) < 1024
    value = [{"a": mid, "n": i} for i in range(100)] + [mid, {"b": [mid]}]
    pieces = _checkpoint_encode_pieces(value)
    text = _checkpoint_encode(value)
    assert b"".join(pieces) == text == _checkpoint_encode(copy.deepcopy(value))
    assert _checkpoint_decode(text) == value
    # The first place is in the text around it; the 101 others are the piece.
    assert sum(p == inner for p in pieces) == 101
    assert sum(len(p) for p in pieces if p != inner) < 2 * len(inner) + 2_000
    # Short containers met again stay copies: no piece of their own.
    short = {"k": list(range(20))}
    pieces = _checkpoint_encode_pieces([short] * 50)
    assert len(pieces) == 1
    assert pieces[0] == _checkpoint_encode([short] * 50)


def test_a_small_container_met_again_after_a_cut_is_copied() -> None:
    # A list of 20 ints (short text, many items) written, then a large dict cut out
    # after it, then the list again: copied from the piece now holding it.
    row = list(range(20))
    value = {"row": row, "doc": _doc(1), "again": [row, row], "last": row}
    pieces = _checkpoint_encode_pieces(value)
    assert b"".join(pieces) == _checkpoint_encode(value) == _checkpoint_encode(copy.deepcopy(value))


def test_containers_cut_inside_containers_met_again() -> None:
    # A large list whose start lies in text already cut (its first item small, then
    # large dicts): met again, it is its pieces again, whatever nests inside.
    docs = [{"small": 1}, _doc(1), _doc(2), "between", _doc(1), *range(20)]
    outer = {"a": docs, "b": [docs, {"c": docs}], "d": (docs, docs), "e": _doc(3)}
    pieces = _checkpoint_encode_pieces(outer)
    assert b"".join(pieces) == _checkpoint_encode(outer) == _checkpoint_encode(copy.deepcopy(outer))
    assert same(_checkpoint_decode(b"".join(pieces)), outer)
    # `docs` itself is 5 places but, shared, its pieces are fewer distinct objects
    # than a copy per place would make.
    assert len(pieces) > len(set(pieces))


def test_a_dict_needing_the_escaped_form_still_joins() -> None:
    # A reserved key met late restarts the walk with each dict's keys looked at
    # first: the pieces of the first walk are forgotten.
    doc = _doc(1)
    v = {"a": [doc] * 10, "b": {"__ironloop_type__": "x", "d": doc}}
    pieces = _checkpoint_encode_pieces(v)
    assert b"".join(pieces) == _checkpoint_encode(v)
    assert _checkpoint_decode(b"".join(pieces)) == v


class _Wide(TypedDict, total=False):
    docs: Annotated[list, operator.add]
    more: Annotated[list, operator.add]
    last: dict


def _wide_graph(saver: Any) -> Any:
    def one(s: _Wide) -> dict[str, Any]:
        d = _doc(len(s.get("docs", [])))
        return {"docs": [d] * 30, "more": [d, d]}

    def two(s: _Wide) -> dict[str, Any]:
        return {"more": s["docs"][-5:], "last": s["docs"][0]}

    return _one_then_two(_Wide, one, two, saver)


def _one_then_two(schema: Any, one: Any, two: Any, saver: Any) -> Any:
    """The graph START -> one -> two -> END over ``schema``."""
    g = StateGraph(schema)
    g.add_node("one", one)
    g.add_node("two", two)
    g.add_edge(START, "one")
    g.add_edge("one", "two")
    g.add_edge("two", END)
    return g.compile(checkpointer=saver)


@pytest.mark.parametrize("durability", ["exit", "sync"])
def test_a_state_holding_one_dict_in_many_places_round_trips(durability: str) -> None:
    saver = MemorySaver()
    graph = _wide_graph(saver)
    cfg = {"configurable": {"thread_id": "t"}}
    out = graph.invoke({"docs": []}, cfg, durability=durability)
    assert len(out["docs"]) == 30 and len(out["more"]) == 7
    expected = copy.deepcopy(out)
    # Read back from the saver by a fresh graph (no state cache): the same state.
    assert _wide_graph(saver).get_state(cfg).values == expected
    # Changed in place after the run, the objects change no checkpoint.
    out["docs"][0]["field0"]["n"] = "changed"
    assert _wide_graph(saver).get_state(cfg).values == expected
    # A second run continues from the kept state (the state cache's pieces).
    again = graph.invoke({"docs": []}, cfg, durability=durability)
    assert len(again["docs"]) == 60
    assert again["docs"][:30] == expected["docs"]
    assert _wide_graph(saver).get_state(cfg).values == copy.deepcopy(again)


def test_tokens_of_every_short_length_are_written_exactly() -> None:
    """The writer copies short tokens (keys, numbers, strings of up to 16 bytes) inline
    by two moves from their ends: every length around that bound, with multi-byte and
    escaped characters at either end, is the text ``json.dumps`` writes, in one text
    and in pieces (after a cut the open buffer is a new one)."""
    ends = ["", "é", "😀", "\n", '"', "\\", "\x01"]
    strings = [a + "x" * n + b for n in range(0, 40) for a in ends for b in ends]
    ints = [10**k for k in range(19)] + [-(10**k) for k in range(19)]
    value = {s: [s, i] for i, s in enumerate(strings)} | {"ints": ints}
    expected = json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode()
    assert _checkpoint_encode(value) == expected
    doc = _doc(3)
    wide = {"a": doc, "v": value, "b": doc, "w": [value, doc]}
    text = json.dumps(wide, ensure_ascii=False, separators=(",", ":")).encode()
    assert _checkpoint_encode(wide) == text
    assert b"".join(_checkpoint_encode_pieces(wide)) == text


def test_a_text_over_many_buffers_is_written_exactly() -> None:
    """Past a megabyte the writer continues in a new buffer instead of growing (and
    copying) the one it has: containers met again across those ends, or straddling
    one, are still their exact text, in one text, in pieces and read back."""
    mid = {f"k{j}": ["é" * 30, j, None, True] * 6 for j in range(3)}  # ~1 KB
    small = {"s": list(range(12))}
    doc = _doc(2)  # a few KB
    rows = [{"i": i, "mid": mid, "small": small, "u": "x" * (i % 97)} for i in range(6_000)]
    value = {"rows": rows, "docs": [doc] * 300, "again": [mid, small, doc, rows[:50]]}
    expected = json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode()
    assert len(expected) > 4_000_000
    assert _checkpoint_encode(value) == expected
    pieces = _checkpoint_encode_pieces(value)
    assert b"".join(pieces) == expected
    assert _checkpoint_decode(expected) == value


class _Copies(TypedDict, total=False):
    msgs: Annotated[list, operator.add]
    more: Annotated[list, operator.add]


def _copies_graph(saver: Any) -> Any:
    """LangGraph's ``pydantic_state`` shape: each node appends fresh copies of a
    message dict whose mid-sized dicts inside are shared by every copy."""
    mid = {f"k{j}": ["hi?" * 10, True, 1, 6327816386138, None] * 5 for j in range(3)}

    def one(s: _Copies) -> dict[str, Any]:
        n = len(s.get("msgs", []))
        return {"msgs": [{"a": mid, "b": mid, "n": n + i} for i in range(40)]}

    def two(s: _Copies) -> dict[str, Any]:
        return {"more": [dict(m) for m in s["msgs"][-10:]] + [mid]}

    return _one_then_two(_Copies, one, two, saver)


@pytest.mark.parametrize("durability", ["exit", "sync"])
@pytest.mark.parametrize("mode", ["sync", "async"])
def test_shared_mid_sized_dicts_round_trip_through_each_saver(
    saver: Any, mode: str, durability: str
) -> None:
    import asyncio

    graph = _copies_graph(saver)
    for t in ("t1", "t2"):
        cfg = {"configurable": {"thread_id": t}}
        for _ in range(2):  # the second run continues from the kept state
            if mode == "async":
                asyncio.run(graph.ainvoke({"msgs": []}, cfg, durability=durability))
            else:
                graph.invoke({"msgs": []}, cfg, durability=durability)
        out = graph.get_state(cfg).values
        assert len(out["msgs"]) == 80 and len(out["more"]) == 22
        # Read back by a fresh graph (no state cache): the same state.
        assert _copies_graph(saver).get_state(cfg).values == copy.deepcopy(out)
