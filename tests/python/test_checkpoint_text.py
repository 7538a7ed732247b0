"""The checkpoint encoder's own JSON writer (src/bindings/serde/text.rs): the text it
writes is the compact JSON ``json.dumps`` writes for the same data, byte for byte,
whatever the strings hold (escapes at every offset of the SIMD escaper's 16- and
32-byte blocks), and every value reads back exactly (floats to the bit, messages
whole), in one text and in a snapshot's pieces.
"""

from __future__ import annotations

import json
import math
import random
import struct
from typing import Any

from ironloop._ironloop import _checkpoint_decode, _checkpoint_encode, _checkpoint_encode_pieces
from ironloop.messages import AIMessage, HumanMessage, ToolMessage


def _dumps(v: Any) -> bytes:
    return json.dumps(v, ensure_ascii=False, separators=(",", ":")).encode()


def _encoded(v: Any) -> bytes:
    """The one-text encoding, checked to be the pieces' encoding joined."""
    text = _checkpoint_encode(v)
    assert b"".join(_checkpoint_encode_pieces(v)) == text
    return text


def test_every_character_that_needs_escaping_at_every_offset_of_a_block() -> None:
    specials = [chr(c) for c in range(0x20)] + ['"', "\\", "\x7f", "é", "€", "😀", "/"]
    strings = []
    for n in range(0, 70):
        for ch in specials:
            strings.append("a" * n + ch + "b" * (n % 7))
    value = {s: s for s in strings}
    assert _encoded(value) == _dumps(value)
    assert _checkpoint_decode(_encoded(value)) == value


def test_random_strings_and_keys_are_written_as_json_dumps_writes_them() -> None:
    rng = random.Random(38)
    alphabet = [chr(c) for c in range(0x30)] + list('aé€😀\\"') + ["\u2028", "\ufeff"]
    for _ in range(300):
        keys = ["".join(rng.choices(alphabet, k=rng.randrange(0, 90))) for _ in range(5)]
        value: dict[str, Any] = {
            k: [k, rng.randrange(-(2**63), 2**64), None, True, False, {}, []] for k in keys
        }
        assert _encoded(value) == _dumps(value)


def test_floats_read_back_to_the_bit() -> None:
    rng = random.Random(11)
    floats = [0.0, -0.0, 1.0, -1.5, 1e-7, 1e16, 1e22, 1.7976931348623157e308, 5e-324, 0.1, 1 / 3]
    floats += [struct.unpack("<d", rng.randbytes(8))[0] for _ in range(3_000)]
    floats = [f for f in floats if math.isfinite(f)]
    back = _checkpoint_decode(_encoded(floats))
    assert [struct.pack("<d", f) for f in back] == [struct.pack("<d", f) for f in floats]
    # Plain JSON numbers, as any reader takes them.
    assert json.loads(_encoded(floats)) == floats


def test_integers_at_the_bounds_of_64_bits() -> None:
    ints = [0, -1, 2**63 - 1, -(2**63), 2**64 - 1, *(10**k for k in range(20))]
    assert _encoded(ints) == _dumps(ints)
    # Past 64 bits: the tagged form, read back exactly.
    big = [2**64, -(2**63) - 1, 10**40]
    assert _checkpoint_decode(_encoded(big)) == big


def test_messages_are_written_whole_and_read_back() -> None:
    msgs = [
        HumanMessage('hi "there"\n\x01', id="h1"),
        AIMessage(
            "",
            id="a1",
            tool_calls=[{"name": "add", "args": {"a": 1, "b": [1.5, None]}, "id": "c1"}],
        ),
        ToolMessage("3", tool_call_id="c1", id="t1"),
    ]
    text = _encoded({"messages": msgs, "n": 1})
    parsed = json.loads(text)
    assert parsed["n"] == 1 and len(parsed["messages"]) == 3
    back = _checkpoint_decode(text)
    assert back["messages"] == msgs
