"""``ironloop.serve.serde``: the server's JSON (orjson when installed) reads and writes
the same values as the standard library's, including what orjson refuses, which the
standard library then takes."""

from __future__ import annotations

import dataclasses
import json
import math
import uuid
from datetime import datetime, timezone
from enum import Enum
from typing import Any

import pytest
from pydantic import BaseModel

from ironloop.serve import serde
from ironloop.serve.serde import JSONResponse, RawJSON, dumps, loads


class Color(Enum):
    RED = "red"


@dataclasses.dataclass
class Point:
    x: int
    y: int


class Model(BaseModel):
    name: str
    tags: list[str]


VALUES: list[Any] = [
    {"a": [1, 2.5, None, True, "é ✓ \u2028 \x00"], "b": {"c": []}},
    {1: "int key", "s": (1, 2)},
    {"when": datetime(2026, 1, 2, 3, 4, 5, 6, tzinfo=timezone.utc), "id": uuid.UUID(int=7)},
    {"enum": Color.RED, "point": Point(1, 2), "model": Model(name="m", tags=["t"])},
    {"set": {3}, "bytes": b"raw"},
    2**70,  # beyond orjson's 64 bits
    "\ud800",  # a lone surrogate
]


def standard(value: Any) -> Any:
    """What the standard library's encoder makes of ``value``, read back."""
    return json.loads(
        json.dumps(value, default=serde._default, ensure_ascii=False, separators=(",", ":"))
    )


@pytest.mark.parametrize("value", VALUES)
def test_dumps_writes_what_the_standard_library_writes(value: Any) -> None:
    assert json.loads(dumps(value)) == standard(value)
    assert loads(dumps(value)) == standard(value)


def test_orjson_is_what_encodes_when_installed() -> None:
    pytest.importorskip("orjson")
    assert serde._orjson is not None
    assert dumps({"a": [1, "b"]}) == '{"a":[1,"b"]}'


def test_loads_takes_what_orjson_refuses_and_names_bad_json() -> None:
    assert math.isnan(loads('{"x": NaN}')["x"])
    assert loads(str(2**70)) == 2**70
    assert loads(b'{"a": 1}') == {"a": 1}
    with pytest.raises(ValueError, match="Expecting"):
        loads("{not json")


def test_raw_json_is_written_as_it_is_and_a_response_is_dumps() -> None:
    assert dumps(RawJSON('{"kept": 1}')) == '{"kept": 1}'
    assert RawJSON('{"kept": 1}').value() == {"kept": 1}
    body = JSONResponse({"model": Model(name="m", tags=[]), "n": 1}).body
    assert json.loads(body) == {"model": {"name": "m", "tags": []}, "n": 1}


def test_a_circular_value_still_raises() -> None:
    loop: list[Any] = []
    loop.append(loop)
    with pytest.raises(ValueError, match="Circular"):
        dumps(loop)
