"""A call whose arguments do not fit its tool, as LangChain 1.5 reports it: the model
reads LangChain's ``ToolInvocationError`` text (the tool, the call's own arguments as
Python shows them, then one ``loc: msg`` line per JSON Schema error), and a handler,
a hook or ``handle_tool_errors=False`` gets a ``ToolInvalidArgsError`` with LangChain's
fields (``tool_name``, ``tool_kwargs``, ``filtered_errors``, ``message``). Injected
arguments (state, store, runtime) are in neither: the model does not control them.
(The texts were compared with LangChain 1.5.2 / langgraph-prebuilt 1.1.3 running the
same calls.)"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Annotated, Any

import pytest
from agent_support import MODES, call, run, turn

from ironloop import InjectedState, ToolNode, create_agent, tool
from ironloop.errors import ToolInvalidArgsError
from ironloop.messages import AIMessage
from ironloop.middleware import AgentState, wrap_tool_call
from ironloop.models import ScriptedChatModel
from ironloop.prebuilt.tool_node import ToolInvocationError
from ironloop.tools import workspace


@tool
def search(query: str, limit: int) -> str:
    """Searches."""
    return f"{query}:{limit}"


class Secrets(AgentState[Any]):
    api_key: str


@tool
def lookup(key: str, state: Annotated[dict, InjectedState]) -> str:
    """Looks a key up in the state."""
    return str(state.get(key))


def ask(name: str, args: Any) -> dict[str, Any]:
    return {"messages": [AIMessage(content="", tool_calls=[call(name, "c1", **args)])]}


def only_reply(out: Any) -> Any:
    (reply,) = out["messages"]
    return reply


def test_the_model_reads_langchains_text_with_each_error_located() -> None:
    reply = only_reply(ToolNode([search]).invoke(ask("search", {"query": 12345, "extra": None})))
    assert reply.status == "error" and reply.name == "search"
    head, _, errors = reply.content.partition(" with error:\n ")
    # The call's arguments as Python shows them (LangChain's `{tool_kwargs}`).
    assert head == "Error invoking tool 'search' with kwargs {'query': 12345, 'extra': None}"
    lines = errors.removesuffix("\n Please fix the error and try again.").split("\n")
    assert sorted(lines) == [
        'limit: "limit" is a required property',
        'query: 12345 is not of type "string"',
    ]


async def _araise(node: ToolNode, inp: Any) -> ToolInvalidArgsError:
    with pytest.raises(ToolInvalidArgsError) as info:
        await node.ainvoke(inp)
    return info.value


@pytest.mark.parametrize("api", ["invoke", "ainvoke"])
def test_the_raised_error_has_langchains_fields(api: str) -> None:
    node = ToolNode([search], handle_tool_errors=False)
    inp = ask("search", {"query": "q", "limit": "ten"})
    if api == "invoke":
        with pytest.raises(ToolInvocationError) as info:
            node.invoke(inp)
        err = info.value
    else:
        err = asyncio.run(_araise(node, inp))
    assert ToolInvocationError is ToolInvalidArgsError and isinstance(err, ValueError)
    assert err.tool_name == "search"
    assert err.tool_kwargs == {"query": "q", "limit": "ten"}
    assert err.filtered_errors == [
        {"type": "type", "loc": ("limit",), "msg": '"ten" is not of type "integer"', "input": "ten"}
    ]
    assert err.message == str(err)
    assert err.message.startswith("Error invoking tool 'search' with kwargs {'query': 'q', ")
    assert err.source is None


def test_a_handler_function_is_given_the_error_with_its_fields() -> None:
    seen: list[Any] = []

    def handle(e: Exception) -> str:
        seen.append(e)
        return "try again"

    reply = only_reply(ToolNode([search], handle_tool_errors=handle).invoke(ask("search", {})))
    assert reply.content == "try again"
    (err,) = seen
    assert isinstance(err, ToolInvalidArgsError) and err.tool_kwargs == {}
    assert sorted(e["loc"] for e in err.filtered_errors) == [("limit",), ("query",)]


def test_nested_locations_join_names_and_indexes() -> None:
    @tool
    def pick(ids: list[int]) -> str:
        """Picks."""
        return str(ids)

    reply = only_reply(ToolNode([pick]).invoke(ask("pick", {"ids": [1, "two"]})))
    assert '\n ids.1: "two" is not of type "integer"\n' in reply.content


def test_an_error_the_tool_raises_about_its_arguments_is_its_one_error(tmp_path: Path) -> None:
    node = ToolNode(workspace(tmp_path), handle_tool_errors=False)
    with pytest.raises(ToolInvalidArgsError) as info:
        node.invoke(ask("read_file", {"path": "../secret.txt"}))
    err = info.value
    assert err.tool_kwargs == {"path": "../secret.txt"}
    (only,) = err.filtered_errors
    assert only["loc"] == () and "leaves the workspace" in only["msg"]
    assert f"with error:\n {only['msg']}\n Please fix" in err.message


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("wrapped", [False, True])
def test_an_agent_never_shows_injected_state_to_the_model(mode: str, wrapped: bool) -> None:
    @wrap_tool_call
    def passthrough(request: Any, handler: Any) -> Any:
        return handler(request)

    model = ScriptedChatModel([turn(call("lookup", "c1", wrong_arg="value")), "ok"])
    agent = create_agent(
        model, [lookup], state_schema=Secrets, middleware=[passthrough] if wrapped else []
    )
    out = run(agent, {"messages": [("user", "hi")], "api_key": "sk-secret-123"}, mode=mode)
    (reply,) = [m for m in out["messages"] if m.type == "tool"]
    assert reply.status == "error"
    assert reply.content.startswith(
        "Error invoking tool 'lookup' with kwargs {'wrong_arg': 'value'} with error:\n"
    )
    assert 'key: "key" is a required property' in reply.content
    for hidden in ("state", "api_key", "sk-secret-123"):
        assert hidden not in reply.content
