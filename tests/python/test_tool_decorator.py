"""`@tool` and `Tool`: the forms of the decorator, the tool object's surface, the
wrapped function staying callable, injected parameters, raw-schema tools, errors at
decoration time and argument conversion."""

from __future__ import annotations

import asyncio
import dataclasses
import enum
import inspect
from typing import Annotated, Any

import pydantic
import pytest

from ironloop import (
    InjectedState,
    InjectedStore,
    InjectedToolCallId,
    Tool,
    ToolContext,
    ToolNode,
    tool,
)

# ----------------------------------------------------------------------------- forms


def test_bare_decorator() -> None:
    @tool
    def add(a: int, b: int = 2) -> int:
        """Adds two integers.

        Args:
            a: The first addend.
            b: The second addend.
        """
        return a + b

    assert isinstance(add, Tool)
    assert add.name == "add"
    assert add.description == "Adds two integers."
    params = add.parameters
    assert params["type"] == "object"
    assert params["properties"]["a"]["type"] == "integer"
    assert params["properties"]["a"]["description"] == "The first addend."
    assert params["properties"]["b"]["type"] == "integer"
    assert params["required"] == ["a"]
    assert add.return_direct is False
    assert add.timeout is None


def test_named_decorator() -> None:
    @tool("web_search")
    def search(query: str) -> str:
        """Searches."""
        return query

    assert search.name == "web_search"
    assert search.description == "Searches."
    assert search("q") == "q"


def test_decorator_with_options() -> None:
    @tool(return_direct=True, timeout=5.0)
    def final(answer: str) -> str:
        """Gives the final answer."""
        return answer

    assert final.name == "final"
    assert final.return_direct is True
    assert final.timeout == 5.0
    assert final("x") == "x"


@pytest.mark.parametrize("timeout", [0, -1, float("inf"), "5"])
def test_decorator_rejects_bad_timeout(timeout) -> None:
    with pytest.raises(ValueError, match="timeout"):

        @tool(timeout=timeout)
        def f(x: int) -> int:
            """F."""
            return x


def test_decorator_on_async_function() -> None:
    @tool("fetch", timeout=1.5)
    async def fetch(url: str) -> str:
        """Fetches a URL."""
        await asyncio.sleep(0)
        return url.upper()

    assert fetch.name == "fetch"
    assert fetch.timeout == 1.5
    assert fetch.parameters["properties"]["url"]["type"] == "string"
    coro = fetch("http://x")
    assert inspect.iscoroutine(coro)
    assert asyncio.run(coro) == "HTTP://X"


def test_to_openai_and_to_anthropic() -> None:
    @tool
    def add(a: int, b: int) -> int:
        """Adds."""
        return a + b

    assert add.to_openai() == {
        "type": "function",
        "function": {"name": "add", "description": "Adds.", "parameters": add.parameters},
    }
    assert add.to_anthropic() == {
        "name": "add",
        "description": "Adds.",
        "input_schema": add.parameters,
    }


# ------------------------------------------------------------------ stays callable


def test_decorated_function_keeps_signature_and_behaviour() -> None:
    def scale(x: float, factor: float = 2.0, *, offset: float = 0.0) -> float:
        """Scales x."""
        return x * factor + offset

    t = tool(scale)
    assert inspect.signature(t) == inspect.signature(scale)
    assert t(3) == 6.0
    assert t(3, 3) == 9.0
    assert t(x=1, factor=1, offset=0.5) == 1.5
    assert t.__name__ == "scale"
    assert t.__doc__ == "Scales x."
    with pytest.raises(TypeError):
        t()  # the original signature is enforced


def test_async_decorated_function_keeps_signature() -> None:
    async def twice(x: int) -> int:
        """Doubles."""
        return 2 * x

    t = tool(twice)
    assert inspect.signature(t) == inspect.signature(twice)
    assert asyncio.run(t(x=4)) == 8


def test_decorator_applied_twice_is_rejected() -> None:
    @tool
    def f(x: int) -> int:
        """F."""
        return x

    with pytest.raises(TypeError, match="'f'"):
        tool(f)


# --------------------------------------------------------------------- injection


def _make_injected_tool(is_async: bool) -> Tool:
    def body(q, state, messages, user, store, store2, call_id, ctx) -> dict:
        return {
            "q": q,
            "state_keys": sorted(state),
            "messages": len(messages),
            "user": user,
            "store_value": store["k"],
            "same_store": store is store2,
            "call_id": call_id,
            "ctx": {
                "tool_call_id": ctx.tool_call_id,
                "tool_name": ctx.tool_name,
                "cancelled": ctx.cancelled,
                "state_is_state": ctx.state is state,
                "store_is_store": ctx.store is store,
            },
        }

    if is_async:

        @tool("lookup")
        async def lookup(
            q: str,
            state: Annotated[dict, InjectedState],
            messages: Annotated[list, InjectedState("messages")],
            user: Annotated[str, InjectedState("user")],
            store: Annotated[Any, InjectedStore()],
            store2: Annotated[Any, InjectedStore],
            call_id: Annotated[str, InjectedToolCallId],
            ctx: ToolContext,
        ) -> dict:
            """Looks something up."""
            await asyncio.sleep(0)
            return body(q, state, messages, user, store, store2, call_id, ctx)

        return lookup

    @tool("lookup")
    def lookup_sync(
        q: str,
        state: Annotated[dict, InjectedState],
        messages: Annotated[list, InjectedState("messages")],
        user: Annotated[str, InjectedState("user")],
        store: Annotated[Any, InjectedStore()],
        store2: Annotated[Any, InjectedStore],
        call_id: Annotated[str, InjectedToolCallId],
        ctx: ToolContext,
    ) -> dict:
        """Looks something up."""
        return body(q, state, messages, user, store, store2, call_id, ctx)

    return lookup_sync


@pytest.mark.parametrize("is_async", [False, True], ids=["sync", "async"])
def test_injected_parameters_are_hidden_from_the_schema(is_async) -> None:
    t = _make_injected_tool(is_async)
    assert t.parameters["properties"] == {"q": {"type": "string"}}
    assert t.parameters["required"] == ["q"]
    assert t.to_openai()["function"]["parameters"] == t.parameters


@pytest.mark.parametrize("is_async", [False, True], ids=["sync", "async"])
def test_injected_parameters_are_filled_at_run_time(is_async, make_ai) -> None:
    t = _make_injected_tool(is_async)
    store = {"k": "stored"}
    state = {"messages": [make_ai(("lookup", {"q": "hi"}))], "user": "bob"}
    (msg,) = ToolNode([t]).invoke(state, store=store)["messages"]
    assert msg.status == "success", msg.content
    assert msg.artifact == {
        "q": "hi",
        "state_keys": ["messages", "user"],
        "messages": 1,
        "user": "bob",
        "store_value": "stored",
        "same_store": True,
        "call_id": "c0",
        "ctx": {
            "tool_call_id": "c0",
            "tool_name": "lookup",
            "cancelled": False,
            "state_is_state": True,
            "store_is_store": True,
        },
    }


async def test_injected_parameters_under_ainvoke(make_ai) -> None:
    t = _make_injected_tool(True)
    store = {"k": "s2"}
    state = {"messages": [make_ai(("lookup", {"q": "x"}))], "user": "ann"}
    (msg,) = (await ToolNode([t]).ainvoke(state, store=store))["messages"]
    assert msg.status == "success", msg.content
    assert msg.artifact["user"] == "ann"
    assert msg.artifact["store_value"] == "s2"


def test_injected_state_is_the_input_dict(make_ai) -> None:
    seen = {}

    @tool
    def peek(state: Annotated[dict, InjectedState]) -> str:
        """Peeks."""
        seen["state"] = state
        return "ok"

    state = {"messages": [make_ai(("peek", {}))], "counter": 3}
    ToolNode([peek]).invoke(state)
    assert seen["state"] == state
    assert seen["state"]["counter"] == 3


def test_an_injected_store_needs_a_store(make_ai) -> None:
    @tool
    def peek(store: Annotated[Any, InjectedStore()]) -> str:
        """Peeks."""
        return repr(store)

    @tool
    def look(ctx: ToolContext) -> str:
        """Looks."""
        return repr(ctx.store)

    # As LangGraph's ToolNode: raised to the caller, not reported to the model.
    with pytest.raises(ValueError, match="compile your graph with a store"):
        ToolNode([peek]).invoke([make_ai(("peek", {}))])
    # ToolContext.store is optional: None without one.
    (msg,) = ToolNode([look]).invoke([make_ai(("look", {}))])
    assert msg.content == "None"


def test_injected_tool_is_still_callable_directly() -> None:
    @tool
    def greet(name: str, call_id: Annotated[str, InjectedToolCallId]) -> str:
        """Greets."""
        return f"hi {name} ({call_id})"

    assert greet("ann", "c9") == "hi ann (c9)"


def test_tool_invoke_outside_an_agent_takes_an_injected_parameters_default() -> None:
    """Run with ``invoke`` (no agent to inject), an injected parameter with a default
    keeps it; one without a default must be given, and the error says so."""

    @tool
    def maybe(x: int, ctx: ToolContext | None = None) -> str:
        """Reports whether it ran under an agent."""
        return f"{x}: {'agent' if ctx is not None else 'alone'}"

    @tool
    def needs(x: int, state: Annotated[dict[str, Any], InjectedState]) -> int:
        """Reads the state."""
        return x + len(state)

    assert maybe.invoke({"x": 1}) == "1: alone"
    assert needs.invoke({"x": 1, "state": {"a": 1}}) == 2
    with pytest.raises(TypeError, match=r"parameter 'state' is injected.*run the tool in an agent"):
        needs.invoke({"x": 1})


# ------------------------------------------------------------------------ Tool(...)

RAW_SCHEMA = {
    "type": "object",
    "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
    "required": ["a", "b"],
}


def test_tool_from_raw_schema_calls_func_with_keywords(make_ai) -> None:
    calls = []

    def func(*, a, b):
        calls.append((a, b))
        return a - b

    t = Tool("sub", "Subtracts.", parameters=RAW_SCHEMA, func=func)
    assert (t.name, t.description, t.parameters) == ("sub", "Subtracts.", RAW_SCHEMA)
    assert t.to_openai()["function"] == {
        "name": "sub",
        "description": "Subtracts.",
        "parameters": RAW_SCHEMA,
    }
    assert t.to_anthropic()["input_schema"] == RAW_SCHEMA
    (msg,) = ToolNode([t]).invoke([make_ai(("sub", {"a": 5, "b": 3}))])
    assert msg.content == "2"
    assert calls == [(5, 3)]


def test_tool_from_raw_schema_validates_arguments(make_ai) -> None:
    t = Tool("sub", "Subtracts.", parameters=RAW_SCHEMA, func=lambda a, b: a - b)
    (msg,) = ToolNode([t]).invoke([make_ai(("sub", {"a": 5}))])
    assert msg.status == "error"
    assert "sub" in msg.content
    assert "b" in msg.content


def test_tool_from_raw_schema_with_async_func(make_ai) -> None:
    async def func(a, b):
        await asyncio.sleep(0)
        return a * b

    t = Tool("mul", "Multiplies.", parameters=RAW_SCHEMA, func=func)
    (msg,) = ToolNode([t]).invoke([make_ai(("mul", {"a": 6, "b": 7}))])
    assert msg.content == "42"


def test_tool_parameters_and_func_are_keyword_only() -> None:
    with pytest.raises(TypeError):
        Tool("sub", "Subtracts.", RAW_SCHEMA, lambda a, b: a - b)  # type: ignore[misc]


def test_tool_rejects_a_non_object_schema() -> None:
    with pytest.raises(TypeError, match="parameters"):
        Tool("t", "T.", parameters={"type": "string"}, func=lambda: None)


# ------------------------------------------------------------- decoration errors


@pytest.mark.parametrize("value", [3, "not a function", object()], ids=repr)
def test_non_function_is_a_type_error(value) -> None:
    with pytest.raises(TypeError) as ei:
        tool("name")(value)
    assert type(value).__name__ in str(ei.value)


def test_non_function_bare_is_a_type_error() -> None:
    with pytest.raises(TypeError, match="int"):
        tool(42)  # type: ignore[call-overload]


def test_unsupported_annotation_names_function_and_parameter() -> None:
    class Opaque:
        pass

    with pytest.raises(TypeError) as ei:

        @tool
        def render(widget: Opaque, size: int) -> str:
            """Renders."""
            return ""

    text = str(ei.value)
    assert "render" in text
    assert "widget" in text


def test_star_args_names_function_and_parameter() -> None:
    with pytest.raises(TypeError) as ei:

        @tool
        def total(*numbers: int) -> int:
            """Sums."""
            return sum(numbers)

    text = str(ei.value)
    assert "total" in text
    assert "numbers" in text


def test_star_kwargs_names_function_and_parameter() -> None:
    with pytest.raises(TypeError) as ei:

        @tool
        def configure(**options: str) -> str:
            """Configures."""
            return ""

    text = str(ei.value)
    assert "configure" in text
    assert "options" in text


# ------------------------------------------------------------------- conversion


class Color(enum.Enum):
    RED = "red"
    BLUE = "blue"


class Level(enum.IntEnum):
    LOW = 1
    HIGH = 2


@dataclasses.dataclass
class Point:
    x: float
    y: float = 0.0


class Person(pydantic.BaseModel):
    name: str
    age: int = 0


@pytest.mark.parametrize("is_async", [False, True], ids=["sync", "async"])
def test_dataclass_pydantic_and_enum_arguments_arrive_converted(is_async, make_ai) -> None:
    seen: dict[str, Any] = {}

    def body(color, level, point, person, points):
        seen.update(color=color, level=level, point=point, person=person, points=points)
        return "ok"

    if is_async:

        @tool
        async def describe(
            color: Color, level: Level, point: Point, person: Person, points: list[Point]
        ) -> str:
            """Describes."""
            return body(color, level, point, person, points)

    else:

        @tool
        def describe(
            color: Color, level: Level, point: Point, person: Person, points: list[Point]
        ) -> str:
            """Describes."""
            return body(color, level, point, person, points)

    props = describe.parameters["properties"]
    assert props["color"]["enum"] == ["red", "blue"]
    assert props["point"]["type"] == "object"
    args = {
        "color": "blue",
        "level": 2,
        "point": {"x": 1.5},
        "person": {"name": "Ann", "age": 7},
        "points": [{"x": 1, "y": 2}],
    }
    (msg,) = ToolNode([describe]).invoke([make_ai(("describe", args))])
    assert msg.status == "success", msg.content
    assert seen["color"] is Color.BLUE
    assert seen["level"] is Level.HIGH
    assert seen["point"] == Point(1.5, 0.0)
    assert isinstance(seen["person"], Person)
    assert seen["person"] == Person(name="Ann", age=7)
    assert seen["points"] == [Point(1, 2)]


def test_enum_value_outside_the_enum_is_rejected(make_ai) -> None:
    @tool
    def paint(color: Color) -> str:
        """Paints."""
        return color.value

    (msg,) = ToolNode([paint]).invoke([make_ai(("paint", {"color": "green"}))])
    assert msg.status == "error"
    assert "paint" in msg.content


# ----------------------------------------------------------------------------- names

BAD_NAMES = [
    ("has\0nul", "'\\0' at position 3", "has_nul"),
    ("has space", "' ' at position 3", "has_space"),
    ("../etc/passwd", "'.' at position 0", "___etc_passwd"),
    ("ns.tool", "'.' at position 2", "ns_tool"),
    ("x" * 10_000, "10000 characters long, over the limit of 64", None),
    ("bad\ud800", "a lone surrogate at position 3", "bad_"),
    ("", "it is empty", "tool"),
]


@pytest.mark.parametrize(("name", "problem", "suggestion"), BAD_NAMES)
def test_a_name_providers_reject_is_refused_at_definition(
    name: str, problem: str, suggestion: str | None
) -> None:
    """OpenAI and Anthropic accept ^[a-zA-Z0-9_-]{1,64}$ only (and answer anything
    else with an opaque HTTP 400): the error comes at definition, naming the rule and
    a name that would do."""

    def f(x: int) -> int:
        return x

    makers = [lambda: Tool(name, "d", parameters={"type": "object"}, func=f)]
    if name:  # `@tool("")` names the tool after the function, as LangChain does
        makers.append(lambda: tool(name)(f))
    for make in makers:
        with pytest.raises(ValueError) as raised:
            make()
        text = str(raised.value)
        assert problem in text, text
        assert "^[a-zA-Z0-9_-]{1,64}$" in text, text
        if suggestion is not None:
            assert f"e.g. to {suggestion!r}".replace("'", '"') in text, text
        assert len(text) < 600, "the message shows a shortened name"


def test_a_langchain_tool_with_a_bad_name_is_refused_when_wrapped() -> None:
    from langchain_core.tools import StructuredTool

    def add(a: int, b: int) -> int:
        return a + b

    lc = StructuredTool.from_function(add, name="math.add", description="Adds.")
    with pytest.raises(ValueError, match=r"'\.' at position 4.*\"math_add\""):
        ToolNode([lc])
    with pytest.raises(ValueError, match="math_add"):
        Tool.from_langchain(lc)


def test_names_the_providers_accept_pass() -> None:
    for name in ("add", "get-weather_v2", "A" * 64):
        assert tool(name)(lambda: 1).name == name


def test_bind_tools_refuses_a_bad_name_in_a_dict_definition() -> None:
    from ironloop.models import OpenAIChat

    model = OpenAIChat("m", api_key="k", base_url="http://127.0.0.1:9")
    bad = {"type": "function", "function": {"name": "a b", "parameters": {"type": "object"}}}
    with pytest.raises(ValueError, match="' ' at position 1"):
        model.bind_tools([bad]).invoke("hi")
