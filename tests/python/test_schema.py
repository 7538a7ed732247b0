"""Tests of ironloop._schema.function_spec and the injection markers (pure Python)."""

# The legacy typing aliases (List, Dict, Optional, ...) are exercised on purpose, and
# exec() builds functions whose syntax or globals a test needs to control.
# ruff: noqa: UP006, UP007, UP035, UP045

import dataclasses
import datetime
import enum
import functools
import inspect
import os
import subprocess
import sys
from collections.abc import Sequence
from typing import (
    Annotated,
    Any,
    Callable,
    Dict,
    List,
    Literal,
    Optional,
    Tuple,
    TypedDict,
    Union,
)

import pytest

from ironloop._injection import InjectedState, InjectedStore, InjectedToolCallId
from ironloop._schema import FunctionSpec, function_spec

try:
    from typing import NotRequired, Required
except ImportError:  # Python < 3.11
    from typing_extensions import NotRequired, Required  # type: ignore[assignment]


def props(spec: FunctionSpec) -> dict:
    return spec.parameters["properties"]


# --------------------------------------------------------------------------- fixtures


class Color(enum.Enum):
    RED = "red"
    GREEN = "green"


class Level(enum.IntEnum):
    LOW = 1
    HIGH = 2


class Movie(TypedDict):
    """A movie."""

    title: str
    year: NotRequired[int]


class Partial(TypedDict, total=False):
    name: Required[str]
    tags: List[str]


class ColoredTD(TypedDict):
    color: Color


@dataclasses.dataclass
class Point:
    x: float
    y: float = 0.0


@dataclasses.dataclass
class Path:
    """A polyline."""

    points: List[Point]
    color: Color = Color.RED
    label: Optional[str] = None
    extra: List[str] = dataclasses.field(default_factory=list)


@dataclasses.dataclass
class Tree:
    value: int
    children: List["Tree"] = dataclasses.field(default_factory=list)


class Plain:
    pass


class FakeToolContext:
    """Stands in for the native ToolContext, which marks itself the same way."""

    __ironloop_inject__ = "context"


PointAlias = Point


# --------------------------------------------------------------------------- basics


def test_function_spec_returns_frozen_dataclass():
    def f(x: int) -> int:
        return x

    spec = function_spec(f)
    assert isinstance(spec, FunctionSpec)
    assert dataclasses.is_dataclass(spec)
    with pytest.raises(dataclasses.FrozenInstanceError):
        spec.name = "g"  # type: ignore[misc]


def test_primitives_required_and_defaults():
    def f(a: int, b: float, c: str, d: bool, e: None, g: int = 3, h: str = "x"):
        pass

    spec = function_spec(f)
    assert spec.name == "f"
    assert spec.description == ""
    assert spec.parameters == {
        "type": "object",
        "properties": {
            "a": {"type": "integer"},
            "b": {"type": "number"},
            "c": {"type": "string"},
            "d": {"type": "boolean"},
            "e": {"type": "null"},
            "g": {"type": "integer", "default": 3},
            "h": {"type": "string", "default": "x"},
        },
        "required": ["a", "b", "c", "d", "e"],
    }
    assert "additionalProperties" not in spec.parameters
    assert spec.injected == {}
    assert spec.converters == {}
    assert spec.is_async is False


def test_any_and_unannotated_are_unconstrained():
    def f(a, b: Any, c=5):
        pass

    spec = function_spec(f)
    assert props(spec) == {"a": {}, "b": {}, "c": {"default": 5}}
    assert spec.parameters["required"] == ["a", "b"]


def test_non_json_default_is_omitted_enum_default_is_value():
    sentinel = object()

    def f(a: Any = sentinel, c: Color = Color.GREEN, t: Tuple[int, ...] = (1, 2)):
        pass

    p = props(function_spec(f))
    assert p["a"] == {}
    assert p["c"] == {"type": "string", "enum": ["red", "green"], "default": "green"}
    assert p["t"] == {"type": "array", "items": {"type": "integer"}, "default": [1, 2]}


def test_arrays_and_objects():
    def f(
        a: List[int],
        b: list,
        c: Sequence[float],
        d: Tuple[str, ...],
        e: Tuple[int, str],
        g: dict,
        h: Dict[str, int],
        i: Dict[str, Any],
        j: List[List[str]],
        k: List,
    ):
        pass

    assert props(function_spec(f)) == {
        "a": {"type": "array", "items": {"type": "integer"}},
        "b": {"type": "array"},
        "c": {"type": "array", "items": {"type": "number"}},
        "d": {"type": "array", "items": {"type": "string"}},
        "e": {
            "type": "array",
            "prefixItems": [{"type": "integer"}, {"type": "string"}],
            "minItems": 2,
            "maxItems": 2,
        },
        "g": {"type": "object"},
        "h": {"type": "object", "additionalProperties": {"type": "integer"}},
        "i": {"type": "object"},
        "j": {"type": "array", "items": {"type": "array", "items": {"type": "string"}}},
        "k": {"type": "array"},
    }


def test_builtin_generics_pep585():
    def f(a: list[int], b: dict[str, list[str]], c: tuple[int, ...]):
        pass

    assert props(function_spec(f)) == {
        "a": {"type": "array", "items": {"type": "integer"}},
        "b": {
            "type": "object",
            "additionalProperties": {"type": "array", "items": {"type": "string"}},
        },
        "c": {"type": "array", "items": {"type": "integer"}},
    }


def test_optional_and_union():
    def f(a: Optional[int], b: Optional[str] = None, c: Union[int, str] = 1):
        pass

    spec = function_spec(f)
    assert props(spec) == {
        "a": {"anyOf": [{"type": "integer"}, {"type": "null"}]},
        "b": {"anyOf": [{"type": "string"}, {"type": "null"}], "default": None},
        "c": {"anyOf": [{"type": "integer"}, {"type": "string"}], "default": 1},
    }
    assert spec.parameters["required"] == ["a"]
    assert spec.converters == {}


@pytest.mark.skipif(sys.version_info < (3, 10), reason="X | Y needs Python 3.10")
def test_pep604_union():
    ns: dict = {}
    exec("def f(a: int | None = None, b: int | str = 0): pass", ns)
    assert props(function_spec(ns["f"])) == {
        "a": {"anyOf": [{"type": "integer"}, {"type": "null"}], "default": None},
        "b": {"anyOf": [{"type": "integer"}, {"type": "string"}], "default": 0},
    }


def test_literal():
    def f(a: Literal["x", "y"], b: Literal[1, 2], c: Literal["x", 1], d: Literal[True]):
        pass

    assert props(function_spec(f)) == {
        "a": {"type": "string", "enum": ["x", "y"]},
        "b": {"type": "integer", "enum": [1, 2]},
        "c": {"enum": ["x", 1]},
        "d": {"type": "boolean", "enum": [True]},
    }


def test_enum_schema_and_converter():
    def f(c: Color, lv: Level, oc: Optional[Color] = None):
        pass

    spec = function_spec(f)
    assert props(spec) == {
        "c": {"type": "string", "enum": ["red", "green"]},
        "lv": {"type": "integer", "enum": [1, 2]},
        "oc": {
            "anyOf": [{"type": "string", "enum": ["red", "green"]}, {"type": "null"}],
            "default": None,
        },
    }
    assert spec.converters["c"]("red") is Color.RED
    assert spec.converters["lv"](2) is Level.HIGH
    assert spec.converters["oc"]("green") is Color.GREEN
    assert spec.converters["oc"](None) is None
    with pytest.raises(ValueError):
        spec.converters["c"]("blue")


def test_typeddict_total_and_not_required():
    def f(m: Movie, p: Partial):
        pass

    spec = function_spec(f)
    assert props(spec) == {
        "m": {
            "type": "object",
            "properties": {"title": {"type": "string"}, "year": {"type": "integer"}},
            "required": ["title"],
            "description": "A movie.",
        },
        "p": {
            "type": "object",
            "properties": {
                "name": {"type": "string"},
                "tags": {"type": "array", "items": {"type": "string"}},
            },
            "required": ["name"],
        },
    }
    assert spec.converters == {}  # a TypedDict of JSON types is the dict itself


def test_typeddict_with_enum_field_converts_the_field():
    def f(t: ColoredTD):
        pass

    conv = function_spec(f).converters["t"]
    assert conv({"color": "red"}) == {"color": Color.RED}


def test_dataclass_schema_and_converter():
    def f(path: Path, pts: List[Point], maybe: Optional[Point] = None):
        pass

    spec = function_spec(f)
    point = {
        "type": "object",
        "properties": {"x": {"type": "number"}, "y": {"type": "number", "default": 0.0}},
        "required": ["x"],
    }
    assert props(spec)["path"] == {
        "type": "object",
        "properties": {
            "points": {"type": "array", "items": point},
            "color": {"type": "string", "enum": ["red", "green"], "default": "red"},
            "label": {"anyOf": [{"type": "string"}, {"type": "null"}], "default": None},
            "extra": {"type": "array", "items": {"type": "string"}},
        },
        "required": ["points"],
        "description": "A polyline.",
    }
    assert props(spec)["pts"] == {"type": "array", "items": point}
    assert "$defs" not in spec.parameters

    value = spec.converters["path"]({"points": [{"x": 1, "y": 2}, {"x": 3}], "color": "green"})
    assert value == Path(points=[Point(1, 2), Point(3, 0.0)], color=Color.GREEN)
    assert isinstance(value.points[0], Point)
    assert spec.converters["pts"]([{"x": 5}]) == [Point(5)]
    assert spec.converters["maybe"](None) is None
    assert spec.converters["maybe"]({"x": 1}) == Point(1)
    existing = Point(9)
    assert spec.converters["maybe"](existing) is existing
    with pytest.raises(TypeError):
        spec.converters["pts"]([{"x": 1, "bogus": 2}])


def test_recursive_dataclass_uses_defs():
    jsonschema = pytest.importorskip("jsonschema")

    def f(tree: Tree):
        pass

    spec = function_spec(f)
    assert props(spec)["tree"] == {"$ref": "#/$defs/Tree"}
    assert spec.parameters["$defs"] == {
        "Tree": {
            "type": "object",
            "properties": {
                "value": {"type": "integer"},
                "children": {"type": "array", "items": {"$ref": "#/$defs/Tree"}},
            },
            "required": ["value"],
        }
    }
    jsonschema.Draft202012Validator.check_schema(spec.parameters)
    jsonschema.validate({"tree": {"value": 1, "children": [{"value": 2}]}}, spec.parameters)
    tree = spec.converters["tree"]({"value": 1, "children": [{"value": 2, "children": []}]})
    assert tree == Tree(1, [Tree(2, [])])
    assert isinstance(tree.children[0], Tree)


def test_sets_datetime_and_tuples_convert():
    def f(
        tags: set[str],
        when: datetime.date,
        pair: Tuple[int, Color],
        many: Tuple[int, ...],
    ):
        pass

    spec = function_spec(f)
    assert props(spec)["tags"] == {
        "type": "array",
        "uniqueItems": True,
        "items": {"type": "string"},
    }
    assert props(spec)["when"] == {"type": "string", "format": "date"}
    assert spec.converters["tags"](["a", "b", "a"]) == {"a", "b"}
    assert spec.converters["when"]("2024-05-01") == datetime.date(2024, 5, 1)
    assert spec.converters["pair"]([1, "red"]) == (1, Color.RED)
    assert spec.converters["many"]([1, 2]) == (1, 2)


def test_annotated_description():
    def f(a: Annotated[int, "how many"], b: Annotated[Optional[str], "a name"] = None):
        """Do it.

        Args:
            a: ignored, Annotated wins.
            b: also ignored.
        """

    assert props(function_spec(f)) == {
        "a": {"type": "integer", "description": "how many"},
        "b": {
            "anyOf": [{"type": "string"}, {"type": "null"}],
            "description": "a name",
            "default": None,
        },
    }


def test_annotated_unknown_metadata_is_ignored():
    def f(a: Annotated[List[int], max]):
        pass

    assert props(function_spec(f)) == {"a": {"type": "array", "items": {"type": "integer"}}}


# --------------------------------------------------------------------------- pydantic


def test_pydantic_model_inline_and_converter():
    pydantic = pytest.importorskip("pydantic")

    class Address(pydantic.BaseModel):
        street: str
        zip: Optional[str] = None

    def f(addr: Address, addrs: List[Address] = []):  # noqa: B006
        pass

    spec = function_spec(f)
    expected = Address.model_json_schema()
    assert "$defs" not in expected
    assert props(spec)["addr"] == expected
    assert props(spec)["addrs"] == {"type": "array", "items": expected, "default": []}
    assert spec.parameters["required"] == ["addr"]
    a = spec.converters["addr"]({"street": "Main"})
    assert isinstance(a, Address) and a.street == "Main"
    many = spec.converters["addrs"]([{"street": "A"}, {"street": "B", "zip": "1"}])
    assert [type(x) for x in many] == [Address, Address]
    assert many[1].zip == "1"


def test_pydantic_nested_defs_are_hoisted():
    pydantic = pytest.importorskip("pydantic")
    jsonschema = pytest.importorskip("jsonschema")

    class Item(pydantic.BaseModel):
        name: str
        qty: int = 1

    class Order(pydantic.BaseModel):
        """An order."""

        items: List[Item]
        note: Optional[str] = None

    def f(order: Order, extra: Optional[Item] = None):
        """Place an order.

        Args:
            order: the order to place.
        """

    spec = function_spec(f)
    params = spec.parameters
    assert set(params["$defs"]) == {"Item"}
    assert params["$defs"]["Item"] == Item.model_json_schema()
    order = props(spec)["order"]
    assert order["properties"]["items"]["items"] == {"$ref": "#/$defs/Item"}
    assert order["description"] == "the order to place."
    assert props(spec)["extra"]["anyOf"][1] == {"type": "null"}
    jsonschema.Draft202012Validator.check_schema(params)
    jsonschema.validate({"order": {"items": [{"name": "x"}]}}, params)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({"order": {"items": [{"qty": 2}]}}, params)
    o = spec.converters["order"]({"items": [{"name": "x", "qty": 2}]})
    assert isinstance(o, Order) and isinstance(o.items[0], Item)
    assert spec.converters["extra"](None) is None


def test_pydantic_defs_name_clash_is_renamed():
    pydantic = pytest.importorskip("pydantic")
    jsonschema = pytest.importorskip("jsonschema")

    def make(kind: type) -> Any:
        class Inner(pydantic.BaseModel):
            v: kind  # type: ignore[valid-type]

        class Outer(pydantic.BaseModel):
            inner: Inner

        return Outer

    A, B = make(int), make(str)

    def f(a: A, b: B):  # type: ignore[valid-type]
        pass

    params = function_spec(f).parameters
    assert len(params["$defs"]) == 2
    jsonschema.Draft202012Validator.check_schema(params)
    jsonschema.validate({"a": {"inner": {"v": 1}}, "b": {"inner": {"v": "s"}}}, params)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({"a": {"inner": {"v": 1}}, "b": {"inner": {"v": 1}}}, params)


def test_pydantic_field_constraints_in_annotated():
    pydantic = pytest.importorskip("pydantic")

    def f(n: Annotated[int, pydantic.Field(ge=1, le=5, description="between 1 and 5")]):
        pass

    spec = function_spec(f)
    assert props(spec)["n"] == {
        "type": "integer",
        "minimum": 1,
        "maximum": 5,
        "description": "between 1 and 5",
    }
    assert spec.converters == {}


# --------------------------------------------------------------------------- docstrings


def google(query: str, k: int = 5) -> list:
    """Search the index.

    Looks the query up and returns the best hits.

    Args:
        query (str): The search text.
        k: How many hits
            to return.

    Returns:
        The hits.
    """
    return []


def numpy_style(query: str, k: int = 5) -> list:
    """Search the index.

    Looks the query up and returns the best hits.

    Parameters
    ----------
    query : str
        The search text.
    k : int
        How many hits to return.

    Returns
    -------
    list
        The hits.
    """
    return []


def rest_style(query: str, k: int = 5) -> list:
    """Search the index.

    Looks the query up and returns the best hits.

    :param query: The search text.
    :param int k: How many hits to return.
    :returns: The hits.
    """
    return []


@pytest.mark.parametrize("func", [google, numpy_style, rest_style])
def test_docstring_styles(func):
    spec = function_spec(func)
    assert spec.description == (
        "Search the index.\n\nLooks the query up and returns the best hits."
    )
    assert "Args" not in spec.description and "param" not in spec.description
    assert "----" not in spec.description
    assert props(spec)["query"] == {"type": "string", "description": "The search text."}
    assert " ".join(props(spec)["k"]["description"].split()) == "How many hits to return."
    assert props(spec)["k"]["default"] == 5


def test_explicit_name_and_description_win():
    spec = function_spec(google, name="search", description="Custom.")
    assert spec.name == "search"
    assert spec.description == "Custom."
    assert props(spec)["query"]["description"] == "The search text."


def test_parse_docstring_false_keeps_whole_doc():
    spec = function_spec(google, parse_docstring=False)
    assert spec.description.startswith("Search the index.")
    assert "Args:" in spec.description
    assert "description" not in props(spec)["query"]


def test_one_line_docstring():
    def f(x: int):
        """Double x."""

    assert function_spec(f).description == "Double x."


# --------------------------------------------------------------------------- injection


def test_injected_params_are_hidden():
    def f(
        query: str,
        state: Annotated[dict, InjectedState],
        messages: Annotated[list, InjectedState("messages")],
        full: Annotated[dict, InjectedState()],
        store: Annotated[Any, InjectedStore],
        store2: Annotated[Any, InjectedStore()],
        call_id: Annotated[str, InjectedToolCallId],
        ctx: FakeToolContext,
        ctx2: Annotated[Any, FakeToolContext],
        ctx3: Optional[FakeToolContext] = None,
    ):
        """Use everything.

        Args:
            query: what to do.
            state: the state.
        """

    spec = function_spec(f)
    assert spec.parameters == {
        "type": "object",
        "properties": {"query": {"type": "string", "description": "what to do."}},
        "required": ["query"],
    }
    assert spec.injected == {
        "state": ("state", None),
        "messages": ("state", "messages"),
        "full": ("state", None),
        "store": ("store", None),
        "store2": ("store", None),
        "call_id": ("tool_call_id", None),
        "ctx": ("context", None),
        "ctx2": ("context", None),
        "ctx3": ("context", None),
    }
    assert spec.converters == {}


def test_injected_param_with_unimportable_type_under_future_annotations():
    ns: dict = {
        "Annotated": Annotated,
        "InjectedStore": InjectedStore,
    }
    exec(
        "from __future__ import annotations\n"
        "def f(x: int, store: Annotated[NotImportedStore, InjectedStore]):\n"
        "    pass\n",
        ns,
    )
    spec = function_spec(ns["f"])
    assert spec.injected == {"store": ("store", None)}
    assert props(spec) == {"x": {"type": "integer"}}


def test_injection_markers_shape():
    assert InjectedState("messages").field == "messages"
    assert InjectedState().field is None
    assert InjectedState("a") == InjectedState("a") != InjectedState("b")
    assert repr(InjectedState("messages")) == "InjectedState('messages')"
    assert InjectedStore() == InjectedStore()
    assert InjectedState.__ironloop_inject__ == "state"
    assert InjectedStore.__ironloop_inject__ == "store"
    assert InjectedToolCallId.__ironloop_inject__ == "tool_call_id"
    for cls in (InjectedState, InjectedStore, InjectedToolCallId):
        assert cls.__doc__ and "Annotated" in cls.__doc__
    with pytest.raises(TypeError):
        InjectedState(3)  # type: ignore[arg-type]


# --------------------------------------------------------------------------- callables


def test_async_detection():
    async def a(x: int) -> int:
        return x

    def s(x: int) -> int:
        return x

    class AsyncCallable:
        async def __call__(self, x: int) -> int:
            return x

    class SyncCallable:
        def __call__(self, x: int) -> int:
            return x

    class Holder:
        async def method(self, x: int) -> int:
            return x

    assert function_spec(a).is_async is True
    assert function_spec(s).is_async is False
    assert function_spec(functools.partial(a, 1)).is_async is True
    assert function_spec(AsyncCallable()).is_async is True
    assert function_spec(SyncCallable()).is_async is False
    assert function_spec(Holder().method).is_async is True


def test_bound_method_drops_self():
    class Searcher:
        def search(self, query: str, limit: int = 3) -> list:
            """Search.

            Args:
                query: text.
            """
            return []

    spec = function_spec(Searcher().search)
    assert spec.name == "search"
    assert spec.description == "Search."
    assert props(spec) == {
        "query": {"type": "string", "description": "text."},
        "limit": {"type": "integer", "default": 3},
    }


def test_callable_object_and_partial():
    class Adder:
        """Add numbers."""

        def __call__(self, a: int, b: int) -> int:
            return a + b

    spec = function_spec(Adder())
    assert spec.name == "Adder"
    assert spec.description == "Add numbers."
    assert spec.parameters["required"] == ["a", "b"]

    def add(a: int, b: int) -> int:
        """Add."""
        return a + b

    spec = function_spec(functools.partial(add, 1))
    assert spec.name == "add"
    assert spec.description == "Add."
    assert props(spec) == {"b": {"type": "integer"}}


def test_positional_only_is_fine():
    ns: dict = {}
    exec("def f(a: int, /, b: str = 'x'): pass", ns)
    assert function_spec(ns["f"]).parameters["required"] == ["a"]


def test_plain_json_tool_has_no_converters():
    def f(a: int, b: List[str], c: Dict[str, Any], d: Optional[Movie] = None):
        pass

    assert function_spec(f).converters == {}


# --------------------------------------------------------------------------- errors


def test_error_not_callable():
    with pytest.raises(TypeError, match=r"function_spec\(\).*callable.*int 42"):
        function_spec(42)


def test_error_var_args():
    def my_tool(a: int, *rest: int):
        pass

    with pytest.raises(TypeError) as err:
        function_spec(my_tool)
    msg = str(err.value)
    assert "'my_tool'" in msg and "*rest" in msg and "explicit parameters" in msg


def test_error_var_kwargs():
    def my_tool(a: int, **options: Any):
        pass

    with pytest.raises(TypeError) as err:
        function_spec(my_tool)
    msg = str(err.value)
    assert "'my_tool'" in msg and "**options" in msg and "explicit parameters" in msg


@pytest.mark.parametrize(
    "annotation, needle",
    [
        (Plain, "Plain"),
        (Callable[[int], int], "callable"),
        (bytes, "bytes"),
        (List[Plain], "Plain"),
        (Dict[int, str], "keys"),
    ],
)
def test_error_unsupported_annotation(annotation, needle):
    def my_tool(ok: int, bad):
        pass

    my_tool.__annotations__ = {"ok": int, "bad": annotation}
    with pytest.raises(TypeError) as err:
        function_spec(my_tool)
    msg = str(err.value)
    assert "'my_tool'" in msg and "'bad'" in msg and needle in msg
    assert "InjectedState" in msg  # says what to do


def test_error_dataclass_with_unsupported_field():
    @dataclasses.dataclass
    class Holder:
        thing: Plain

    def my_tool(h: Holder):
        pass

    with pytest.raises(TypeError, match=r"'my_tool'.*'h'.*Plain"):
        function_spec(my_tool)


def test_error_unresolvable_forward_reference():
    ns: dict = {}
    exec("def my_tool(a: int, b: 'Nowhere'): pass", ns)
    with pytest.raises(TypeError) as err:
        function_spec(ns["my_tool"])
    msg = str(err.value)
    assert "'my_tool'" in msg and "'b'" in msg and "Nowhere" in msg


def test_error_duplicate_parameter_names():
    class Dup:
        @property
        def __signature__(self) -> inspect.Signature:
            p = inspect.Parameter("x", inspect.Parameter.POSITIONAL_OR_KEYWORD)
            return inspect.Signature([p, p])

        def __call__(self, x: int) -> int:
            return x

    with pytest.raises(TypeError) as err:
        function_spec(Dup(), name="dup_tool")
    msg = str(err.value)
    assert "'dup_tool'" in msg and "'x'" in msg and "unique" in msg


def test_error_messages_name_the_function_for_builtin_name():
    def weird(a: Callable):
        pass

    with pytest.raises(TypeError, match=r"tool function 'weird': parameter 'a'"):
        function_spec(weird)


def test_works_without_pydantic():
    code = (
        "import sys\n"
        "sys.modules['pydantic'] = None\n"
        "from ironloop._schema import function_spec\n"
        "import ironloop._schema, dataclasses\n"
        "@dataclasses.dataclass\n"
        "class P:\n"
        "    x: int\n"
        "def f(p: P, n: int = 1):\n"
        "    pass\n"
        "spec = function_spec(f)\n"
        "assert spec.converters['p']({'x': 2}) == P(2)\n"
        "assert 'pydantic' not in sys.modules or sys.modules['pydantic'] is None\n"
        "print('ok')\n"
    )
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    out = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=False
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "ok"


def test_point_alias_is_the_same_dataclass():
    def f(p: PointAlias):  # type: ignore[valid-type]
        pass

    assert function_spec(f).converters["p"]({"x": 1}) == Point(1)
