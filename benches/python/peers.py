"""ironloop against every peer (BENCHMARKS.md): LangGraph, agno, pydantic-ai and the
OpenAI Agents SDK, side by side in one run, on the workloads each can express.
LangGraph runs twice: with ``create_react_agent`` (``langgraph``) and with LangChain
1.x's ``create_agent`` (``langchain-create_agent``), the same model and tools.

- W11, an agent per request: build a ready-to-run agent with a model object and 5
  tools, in a loop (µs per agent; batches of 1,000, fewer for a framework where that
  takes over 0.5 s), and the memory each one holds (Python heap by tracemalloc,
  resident by /proc, 2,000 agents kept alive in a fresh process, fewer where building
  them takes over 5 s). Each
  framework's production model object (ironloop ``OpenAIChat``, LangGraph
  ``langchain_openai.ChatOpenAI``, agno ``OpenAIChat``, pydantic-ai
  ``OpenAIChatModel``, openai-agents ``OpenAIChatCompletionsModel``) is made once,
  the tools are module-level functions (openai-agents: ``function_tool`` objects,
  made once, as its decorator would at import); each agent gets a prompt of its own.
  Before time counts, agents built this way run one conversation against the
  loopback server and must call the tool and give the scripted answer.
- W5, ReAct rounds: one conversation of 50 rounds of one ``add`` call each, against
  each framework's own in-process test model (ironloop ``ScriptedChatModel``,
  LangGraph a ``BaseChatModel`` subclass, pydantic-ai ``FunctionModel``, agno and
  openai-agents a subclass of their ``Model`` interface), all scripted by the same
  rule (call ``add(k, 1)`` while fewer than 50 tool results, then answer), through
  each one's synchronous entry point, no checkpointer. µs per round; every tool
  result and the final answer are checked.
- W6a, memory per conversation: 300 conversations of 5 turns (a 100-byte user
  message, a 100-byte scripted answer) each kept in the framework's own
  conversation memory — ironloop / LangGraph: a ``MemorySaver`` / ``InMemorySaver``
  thread; agno: ``InMemoryDb`` sessions; openai-agents: an in-memory
  ``SQLiteSession`` per conversation; pydantic-ai has no store: the caller keeps
  ``result.all_messages()`` per conversation, as its docs show. KB resident per
  conversation in a fresh process; the stored history of the first and last
  conversation is checked (10 messages). ironloop's ``ScriptedChatModel`` logs every
  call for tests (``.calls``); the log is cleared after each turn, as no production
  model and no peer's test model keeps one.
- W6b, the same with no store on any side: the caller keeps each conversation's
  messages as the run returned them and sends them back with the next turn (what
  pydantic-ai does in W6a too; agno is left out: its history comes from its db).
- W7a, concurrent conversations over real HTTP: 1,000 conversations at once on one
  event loop against the loopback OpenAI-compatible server (``_loopback_openai.py``:
  50 ms per reply, 3 tool rounds of 2 parallel ``lookup`` calls, then the answer),
  each framework through its OpenAI chat-completions client, without persistence
  (none of the peers persists by default). Wall seconds, client CPU seconds and peak
  RSS, in a fresh process per framework; every conversation's answer and tool
  results are checked and the server must have seen 4 requests per conversation.
  Every side's OpenAI client is set as the OpenAI SDK documents for many requests at
  once, the same on every side (:func:`w7_openai_client`): a timeout of
  :data:`W7_TIMEOUT_S` for every phase, no retries, a pool of :data:`W7_POOL`
  connections all kept alive; ironloop's ``OpenAIChat`` gets the same timeout (its
  client keeps every idle connection and retries nothing with ``max_retries=0``).
  ``serve.py``'s W7 is the same traffic with a SQLite checkpointer on ironloop and
  LangGraph.
- S1, import: ``python -c`` importing what building an OpenAI-backed agent needs,
  in fresh subprocesses (wall ms).

Settings as each project documents for production: agno ``telemetry=False`` and
``AGNO_TELEMETRY=false``; openai-agents ``set_tracing_disabled(True)`` and
``OPENAI_AGENTS_DISABLE_TRACING=1``; pydantic-ai without instrumentation (its default);
no debug mode anywhere.

    benches/python/run.sh peers.py [-- --only W11,W5 --frameworks ironloop,agno
                                       --repeat 5 --json PATH]
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import os
import subprocess
import sys
import time
import tracemalloc
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from importlib import metadata
from typing import Any

os.environ.setdefault("AGNO_TELEMETRY", "false")
os.environ.setdefault("OPENAI_AGENTS_DISABLE_TRACING", "1")

import _harness as h
from _loopback_openai import LoopbackOpenAI

FRAMEWORKS = (
    "ironloop",
    "ironloop-create_agent",
    "langgraph",
    "langchain-create_agent",
    "agno",
    "pydantic-ai",
    "openai-agents",
)
DISTS = {
    "ironloop": ("ironloop",),
    "ironloop-create_agent": (),
    "langgraph": ("langgraph", "langchain-core", "langchain-openai"),
    "langchain-create_agent": ("langchain", "langgraph", "langchain-core", "langchain-openai"),
    "agno": ("agno",),
    "pydantic-ai": ("pydantic-ai-slim",),
    "openai-agents": ("openai-agents", "openai"),
}
WORKLOADS = ("W11", "W5", "W6a", "W6b", "W7a", "S1")
ROUNDS_W5 = 50
AGENTS_W11 = 1_000
KEPT_W11 = 2_000
CONVERSATIONS_W6A = 300
CONVERSATIONS_W7A = 1_000
TARGET_W11_US = 10.0
PAYLOAD_100 = "x" * 100
ANSWER = "All done."
MODEL = "gpt-4o-mini"
# W7a's client settings, the same on every side (BENCHMARKS.md, fairness): a request
# may take this long in every phase (connect and pool wait included: with 1,000
# conversations on one event loop a coroutine waits its turn for seconds, and the
# OpenAI SDK's default 5 s connect timeout then fails requests the server never saw);
# no retries (a retry would hide a failure, and the server checks 4 requests per
# conversation); a pool as large as the conversations, every connection kept alive
# between rounds (ironloop's client keeps every idle connection; the SDK's default
# keeps 100 and reconnects the rest each round).
W7_TIMEOUT_S = 300.0
W7_POOL = CONVERSATIONS_W7A


class BenchError(AssertionError):
    """A run gave a wrong result: its time does not count."""


def w7_http_client() -> Any:
    """The httpx client of W7a's OpenAI clients: the OpenAI SDK's own
    ``DefaultAsyncHttpxClient`` (its documented way to set the pool) with
    :data:`W7_POOL` connections, all kept alive, and :data:`W7_TIMEOUT_S`."""
    import httpx
    from openai import DefaultAsyncHttpxClient

    limits = httpx.Limits(max_connections=W7_POOL, max_keepalive_connections=W7_POOL)
    return DefaultAsyncHttpxClient(limits=limits, timeout=httpx.Timeout(W7_TIMEOUT_S))


def w7_openai_client(base_url: str) -> Any:
    """W7a's ``AsyncOpenAI``, given to every peer that takes one (agno, pydantic-ai,
    openai-agents)."""
    import httpx
    from openai import AsyncOpenAI

    return AsyncOpenAI(
        base_url=base_url,
        api_key="loopback",
        max_retries=0,
        timeout=httpx.Timeout(W7_TIMEOUT_S),
        http_client=w7_http_client(),
    )


# --- the tools (the same five functions on every side) ----------------------------------


def lookup(query: str) -> str:
    """Look something up."""
    return f"result {query}"


def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def multiply(a: int, b: int) -> int:
    """Multiply two integers."""
    return a * b


def weather(city: str, unit: str = "celsius") -> str:
    """The weather in a city."""
    return f"sunny in {city}"


def search(query: str, k: int = 3) -> list[str]:
    """Search the web; the first k results."""
    return [query] * k


TOOLS = [lookup, add, multiply, weather, search]


def w5_decision(k: int, rounds: int) -> tuple[str, dict[str, Any]] | str:
    """The scripted model of W5 on every side: after ``k`` tool results, call
    ``add(k, 1)`` while ``k < rounds``, else answer."""
    if k < rounds:
        return f"call_{k}", {"a": k, "b": 1}
    return f"done after {k} rounds"


def check_w5(results: list[str], final: str, rounds: int) -> None:
    if [str(r) for r in results] != [str(k + 1) for k in range(rounds)]:
        raise BenchError(f"tool results {results[:5]}..., expected 1..{rounds}")
    if final != f"done after {rounds} rounds":
        raise BenchError(f"final answer {final!r}")


def check_w7(final: str, results: list[str], rounds: int, calls: int) -> None:
    if final != ANSWER:
        raise BenchError(f"final answer {final!r}, expected {ANSWER!r}")
    want = sorted(f"result {r}.{c}" for r in range(rounds) for c in range(calls))
    if sorted(map(str, results)) != want:
        raise BenchError(f"tool results {sorted(results)}, expected {want}")


# --- the adapters -----------------------------------------------------------------------


class Adapter:
    """One framework: how it builds an agent, runs W5 / W6a / W7a, and what S1 imports."""

    name = ""
    s1_code = ""

    def w11_maker(
        self, base_url: str, prepared: bool = True, concurrent: bool = False
    ) -> Callable[[int], Any]:
        """A function of ``i`` building agent ``i`` (prompt of its own) with the
        framework's OpenAI model object, made once, and the five tools; with
        ``concurrent``, the model's client as W7a sets it (:data:`W7_TIMEOUT_S`, ...)."""
        raise NotImplementedError

    async def w7_run(self, agent: Any, marker: str) -> tuple[str, list[str]]:
        """One conversation; its final answer and the tool results it saw."""
        raise NotImplementedError

    def w7_agent(self, base_url: str) -> Any:
        return self.w11_maker(base_url, concurrent=True)(0)

    def w5_once(self, rounds: int) -> Callable[[], tuple[list[str], str]]:
        """A function running one W5 conversation; returns (tool results, answer)."""
        raise NotImplementedError

    def w6a_store(self) -> tuple[Callable[[int, str], str], Callable[[int], list[str]]]:
        """``turn(i, text) -> answer`` in conversation ``i``, and ``history(i)``: the
        message texts the framework keeps for it."""
        raise NotImplementedError

    def w6b_store(self) -> tuple[Callable[[int, str], str], Callable[[int], list[str]]]:
        """As :meth:`w6a_store`, with no store: the caller keeps each conversation's
        messages as the run returned them and gives them back with the next turn."""
        raise NotImplementedError


def _reply_6a(text: str) -> str:
    return f"{PAYLOAD_100} re {text[-12:]}"


class Ironloop(Adapter):
    name = "ironloop"
    s1_code = "from ironloop import create_react_agent; from ironloop.models import OpenAIChat"

    def w11_maker(
        self, base_url: str, prepared: bool = True, concurrent: bool = False
    ) -> Callable[[int], Any]:
        from ironloop import create_react_agent, tool
        from ironloop.models import OpenAIChat

        w7 = {"timeout": W7_TIMEOUT_S} if concurrent else {}
        model = OpenAIChat(MODEL, base_url=base_url, api_key="loopback", max_retries=0, **w7)
        tools = [tool(f) for f in TOOLS] if prepared else TOOLS

        def make(i: int) -> Any:
            return create_react_agent(model, tools, prompt=f"You help user {i}.")

        return make

    async def w7_run(self, agent: Any, marker: str) -> tuple[str, list[str]]:
        out = await agent.ainvoke({"messages": [("user", marker)]})
        msgs = out["messages"]
        return msgs[-1].text, [m.text for m in msgs if m.type == "tool"]

    def w5_once(self, rounds: int) -> Callable[[], tuple[list[str], str]]:
        from ironloop import create_react_agent
        from ironloop.models import ScriptedChatModel

        def respond(messages: list[Any]) -> Any:
            d = w5_decision(sum(1 for m in messages if m.type == "tool"), rounds)
            if isinstance(d, str):
                return d
            return {"content": "", "tool_calls": [{"name": "add", "args": d[1], "id": d[0]}]}

        model = ScriptedChatModel(respond)
        agent = create_react_agent(model, [add])
        config = {"recursion_limit": 4 * rounds + 20}

        def once() -> tuple[list[str], str]:
            msgs = agent.invoke({"messages": [("user", "count up")]}, config)["messages"]
            model.calls.clear()  # the test model's call log (see _forgetful)
            return [m.text for m in msgs if m.type == "tool"], msgs[-1].text

        return once

    def w6a_store(self) -> tuple[Callable[[int, str], str], Callable[[int], list[str]]]:
        from ironloop import MemorySaver, create_react_agent
        from ironloop.models import ScriptedChatModel

        model = ScriptedChatModel(lambda msgs: _reply_6a(msgs[-1].text))
        agent = create_react_agent(model, [], checkpointer=MemorySaver())

        def turn(i: int, text: str) -> str:
            cfg = {"configurable": {"thread_id": f"c{i}"}}
            answer = agent.invoke({"messages": [("user", text)]}, cfg)["messages"][-1].text
            model.calls.clear()  # the test model's call log (see _forgetful)
            return str(answer)

        def history(i: int) -> list[str]:
            cfg = {"configurable": {"thread_id": f"c{i}"}}
            return [m.text for m in agent.get_state(cfg).values["messages"]]

        return turn, history

    def w6b_store(self) -> tuple[Callable[[int, str], str], Callable[[int], list[str]]]:
        from ironloop import create_react_agent
        from ironloop.models import ScriptedChatModel

        model = ScriptedChatModel(lambda msgs: _reply_6a(msgs[-1].text))
        turn, history = _kept_history(create_react_agent(model, []), lambda m: str(m.text))
        return _forgetful(model, turn), history


def _forgetful(model: Any, turn: Callable[[int, str], str]) -> Callable[[int, str], str]:
    """``turn``, then clearing ``model.calls``: ironloop's ``ScriptedChatModel`` logs
    every call's messages for tests to inspect, which no production model (and no
    peer's test model here) does; W6 would count that log as conversation memory."""

    def forgetting(i: int, text: str) -> str:
        answer = turn(i, text)
        model.calls.clear()
        return answer

    return forgetting


def _kept_history(
    agent: Any, text_of: Callable[[Any], str]
) -> tuple[Callable[[int, str], str], Callable[[int], list[str]]]:
    """W6b for a LangGraph-style agent: no checkpointer, the caller keeps
    ``result["messages"]`` and sends them back with the next user message."""
    kept: dict[int, list[Any]] = {}

    def turn(i: int, text: str) -> str:
        out = agent.invoke({"messages": [*kept.get(i, ()), ("user", text)]})
        kept[i] = out["messages"]
        return text_of(out["messages"][-1])

    def history(i: int) -> list[str]:
        return [text_of(m) for m in kept[i]]

    return turn, history


class IronloopCreateAgent(Ironloop):
    """ironloop's ``create_agent`` (LangChain 1.x's factory) on the same workloads."""

    name = "ironloop-create_agent"
    s1_code = "from ironloop import create_agent; from ironloop.models import OpenAIChat"

    def w11_maker(
        self, base_url: str, prepared: bool = True, concurrent: bool = False
    ) -> Callable[[int], Any]:
        from ironloop import create_agent, tool
        from ironloop.models import OpenAIChat

        w7 = {"timeout": W7_TIMEOUT_S} if concurrent else {}
        model = OpenAIChat(MODEL, base_url=base_url, api_key="loopback", max_retries=0, **w7)
        tools = [tool(f) for f in TOOLS] if prepared else TOOLS

        def make(i: int) -> Any:
            return create_agent(model, tools, system_prompt=f"You help user {i}.")

        return make

    def w5_once(self, rounds: int) -> Callable[[], tuple[list[str], str]]:
        from ironloop import create_agent
        from ironloop.models import ScriptedChatModel

        def respond(messages: list[Any]) -> Any:
            d = w5_decision(sum(1 for m in messages if m.type == "tool"), rounds)
            if isinstance(d, str):
                return d
            return {"content": "", "tool_calls": [{"name": "add", "args": d[1], "id": d[0]}]}

        model = ScriptedChatModel(respond)
        agent = create_agent(model, [add])
        config = {"recursion_limit": 4 * rounds + 20}

        def once() -> tuple[list[str], str]:
            msgs = agent.invoke({"messages": [("user", "count up")]}, config)["messages"]
            model.calls.clear()  # the test model's call log (see _forgetful)
            return [m.text for m in msgs if m.type == "tool"], msgs[-1].text

        return once

    def w6a_store(self) -> tuple[Callable[[int, str], str], Callable[[int], list[str]]]:
        from ironloop import MemorySaver, create_agent
        from ironloop.models import ScriptedChatModel

        model = ScriptedChatModel(lambda msgs: _reply_6a(msgs[-1].text))
        agent = create_agent(model, [], checkpointer=MemorySaver())

        def turn(i: int, text: str) -> str:
            cfg = {"configurable": {"thread_id": f"c{i}"}}
            answer = agent.invoke({"messages": [("user", text)]}, cfg)["messages"][-1].text
            model.calls.clear()  # the test model's call log (see _forgetful)
            return str(answer)

        def history(i: int) -> list[str]:
            cfg = {"configurable": {"thread_id": f"c{i}"}}
            return [m.text for m in agent.get_state(cfg).values["messages"]]

        return turn, history

    def w6b_store(self) -> tuple[Callable[[int, str], str], Callable[[int], list[str]]]:
        from ironloop import create_agent
        from ironloop.models import ScriptedChatModel

        model = ScriptedChatModel(lambda msgs: _reply_6a(msgs[-1].text))
        turn, history = _kept_history(create_agent(model, []), lambda m: str(m.text))
        return _forgetful(model, turn), history


class LangGraph(Adapter):
    name = "langgraph"
    s1_code = (
        "from langgraph.prebuilt import create_react_agent; from langchain_openai import ChatOpenAI"
    )

    def __init__(self) -> None:
        import warnings

        warnings.filterwarnings("ignore", category=DeprecationWarning)
        try:  # create_react_agent is deprecated in LangGraph 1.x (still shipped)
            from langgraph.warnings import LangGraphDeprecatedSinceV10

            warnings.filterwarnings("ignore", category=LangGraphDeprecatedSinceV10)
        except ImportError:  # pragma: no cover
            pass

    def w11_maker(
        self, base_url: str, prepared: bool = True, concurrent: bool = False
    ) -> Callable[[int], Any]:
        from langchain_core.tools import tool
        from langchain_openai import ChatOpenAI

        w7: dict[str, Any] = {}
        if concurrent:
            w7 = {"timeout": W7_TIMEOUT_S, "http_async_client": w7_http_client()}
        model = ChatOpenAI(model=MODEL, base_url=base_url, api_key="loopback", max_retries=0, **w7)
        tools = [tool(f) for f in TOOLS] if prepared else TOOLS

        def make(i: int) -> Any:
            return self._agent(model, tools, prompt=f"You help user {i}.")

        return make

    def _agent(self, model: Any, tools: Any, prompt: str | None = None, **kw: Any) -> Any:
        """The agent factory every workload uses: LangGraph's ``create_react_agent``."""
        from langgraph.prebuilt import create_react_agent

        return create_react_agent(model, tools, prompt=prompt, **kw)

    async def w7_run(self, agent: Any, marker: str) -> tuple[str, list[str]]:
        out = await agent.ainvoke({"messages": [("user", marker)]})
        msgs = out["messages"]
        return str(msgs[-1].content), [str(m.content) for m in msgs if m.type == "tool"]

    def _scripted(self, fn: Callable[[list[Any]], Any]) -> Any:
        from langchain_core.language_models import BaseChatModel
        from langchain_core.messages import AIMessage
        from langchain_core.outputs import ChatGeneration, ChatResult
        from langchain_core.utils.function_calling import convert_to_openai_tool

        class Scripted(BaseChatModel):
            fn: Any

            @property
            def _llm_type(self) -> str:
                return "scripted"

            def bind_tools(self, tools: Any, **kwargs: Any) -> Any:
                return self.bind(tools=[convert_to_openai_tool(t) for t in tools], **kwargs)

            def _generate(
                self, messages: Any, stop: Any = None, run_manager: Any = None, **kw: Any
            ):
                d = self.fn(messages)
                if isinstance(d, str):
                    msg = AIMessage(content=d)
                else:
                    msg = AIMessage(content="", tool_calls=[d])
                return ChatResult(generations=[ChatGeneration(message=msg)])

        return Scripted(fn=fn)

    def w5_once(self, rounds: int) -> Callable[[], tuple[list[str], str]]:
        def respond(messages: list[Any]) -> Any:
            d = w5_decision(sum(1 for m in messages if m.type == "tool"), rounds)
            if isinstance(d, str):
                return d
            return {"name": "add", "args": d[1], "id": d[0], "type": "tool_call"}

        agent = self._agent(self._scripted(respond), [add])
        config = {"recursion_limit": 4 * rounds + 20}

        def once() -> tuple[list[str], str]:
            msgs = agent.invoke({"messages": [("user", "count up")]}, config)["messages"]
            return [str(m.content) for m in msgs if m.type == "tool"], str(msgs[-1].content)

        return once

    def w6a_store(self) -> tuple[Callable[[int, str], str], Callable[[int], list[str]]]:
        from langgraph.checkpoint.memory import InMemorySaver

        agent = self._agent(
            self._scripted(lambda msgs: _reply_6a(str(msgs[-1].content))),
            [],
            checkpointer=InMemorySaver(),
        )

        def turn(i: int, text: str) -> str:
            cfg = {"configurable": {"thread_id": f"c{i}"}}
            return str(agent.invoke({"messages": [("user", text)]}, cfg)["messages"][-1].content)

        def history(i: int) -> list[str]:
            cfg = {"configurable": {"thread_id": f"c{i}"}}
            return [str(m.content) for m in agent.get_state(cfg).values["messages"]]

        return turn, history

    def w6b_store(self) -> tuple[Callable[[int, str], str], Callable[[int], list[str]]]:
        model = self._scripted(lambda msgs: _reply_6a(str(msgs[-1].content)))
        return _kept_history(self._agent(model, []), lambda m: str(m.content))


class LangChainCreateAgent(LangGraph):
    """LangChain 1.x's ``create_agent`` (``langchain.agents``) on the same workloads:
    the factory new LangChain code uses, and the one ironloop's ``create_agent`` ports."""

    name = "langchain-create_agent"
    s1_code = "from langchain.agents import create_agent; from langchain_openai import ChatOpenAI"

    def _agent(self, model: Any, tools: Any, prompt: str | None = None, **kw: Any) -> Any:
        from langchain.agents import create_agent

        return create_agent(model, tools, system_prompt=prompt, **kw)


class Agno(Adapter):
    name = "agno"
    s1_code = "from agno.agent import Agent; from agno.models.openai import OpenAIChat"

    def w11_maker(
        self, base_url: str, prepared: bool = True, concurrent: bool = False
    ) -> Callable[[int], Any]:
        from agno.agent import Agent
        from agno.models.openai import OpenAIChat
        from agno.tools import tool

        if concurrent:
            model = OpenAIChat(id=MODEL, async_client=w7_openai_client(base_url))
        else:
            model = OpenAIChat(id=MODEL, base_url=base_url, api_key="loopback", max_retries=0)
        tools = [tool(f) for f in TOOLS] if prepared else TOOLS

        def make(i: int) -> Any:
            return Agent(
                model=model, tools=tools, instructions=f"You help user {i}.", telemetry=False
            )

        return make

    async def w7_run(self, agent: Any, marker: str) -> tuple[str, list[str]]:
        out = await agent.arun(marker)
        msgs = out.messages or []
        return str(out.content), [str(m.content) for m in msgs if m.role == "tool"]

    def _scripted(self, fn: Callable[[list[Any]], Any]) -> Any:
        from dataclasses import dataclass as dc

        from agno.models.base import Model
        from agno.models.response import ModelResponse

        @dc
        class Scripted(Model):
            """agno's ``Model`` interface answered in process (agno ships no test model)."""

            id: str = "scripted"
            name: str = "Scripted"
            provider: str = "bench"

            def _respond(self, messages: list[Any]) -> Any:
                d = fn(messages)
                if isinstance(d, str):
                    return ModelResponse(role="assistant", content=d)
                call = {
                    "id": d[0],
                    "type": "function",
                    "function": {"name": "add", "arguments": json.dumps(d[1])},
                }
                return ModelResponse(role="assistant", content="", tool_calls=[call])

            def invoke(self, messages: list[Any], *args: Any, **kwargs: Any) -> Any:
                return self._respond(messages)

            async def ainvoke(self, messages: list[Any], *args: Any, **kwargs: Any) -> Any:
                return self._respond(messages)

            def invoke_stream(self, *args: Any, **kwargs: Any) -> Any:
                raise NotImplementedError

            def ainvoke_stream(self, *args: Any, **kwargs: Any) -> Any:
                raise NotImplementedError

            def _parse_provider_response(self, response: Any, **kwargs: Any) -> Any:
                return response

            def _parse_provider_response_delta(self, response: Any) -> Any:
                return response

        return Scripted()

    def w5_once(self, rounds: int) -> Callable[[], tuple[list[str], str]]:
        from agno.agent import Agent

        model = self._scripted(
            lambda msgs: w5_decision(sum(1 for m in msgs if m.role == "tool"), rounds)
        )
        agent = Agent(model=model, tools=[add], telemetry=False, tool_call_limit=rounds + 5)

        def once() -> tuple[list[str], str]:
            out = agent.run("count up")
            msgs = out.messages or []
            return [str(m.content) for m in msgs if m.role == "tool"], str(out.content)

        return once

    def w6a_store(self) -> tuple[Callable[[int, str], str], Callable[[int], list[str]]]:
        from agno.agent import Agent
        from agno.db.in_memory import InMemoryDb

        model = self._scripted(lambda msgs: _reply_6a(str(msgs[-1].content)))
        agent = Agent(model=model, db=InMemoryDb(), add_history_to_context=True, telemetry=False)

        def turn(i: int, text: str) -> str:
            return str(agent.run(text, session_id=f"c{i}").content)

        def history(i: int) -> list[str]:
            return [str(m.content) for m in agent.get_chat_history(session_id=f"c{i}")]

        return turn, history


class PydanticAI(Adapter):
    name = "pydantic-ai"
    s1_code = (
        "from pydantic_ai import Agent; from pydantic_ai.models.openai import OpenAIChatModel; "
        "from pydantic_ai.providers.openai import OpenAIProvider"
    )

    def w11_maker(
        self, base_url: str, prepared: bool = True, concurrent: bool = False
    ) -> Callable[[int], Any]:
        from pydantic_ai import Agent, Tool
        from pydantic_ai.models.openai import OpenAIChatModel
        from pydantic_ai.providers.openai import OpenAIProvider

        if concurrent:
            provider = OpenAIProvider(openai_client=w7_openai_client(base_url))
        else:
            provider = OpenAIProvider(base_url=base_url, api_key="loopback")
        model = OpenAIChatModel(MODEL, provider=provider)
        tools = [Tool(f) for f in TOOLS] if prepared else TOOLS

        def make(i: int) -> Any:
            return Agent(model, tools=tools, instructions=f"You help user {i}.")

        return make

    async def w7_run(self, agent: Any, marker: str) -> tuple[str, list[str]]:
        from pydantic_ai.messages import ToolReturnPart

        out = await agent.run(marker)
        results = [
            str(p.content)
            for m in out.all_messages()
            for p in m.parts
            if isinstance(p, ToolReturnPart)
        ]
        return str(out.output), results

    def w5_once(self, rounds: int) -> Callable[[], tuple[list[str], str]]:
        from pydantic_ai import Agent
        from pydantic_ai.messages import ModelResponse, TextPart, ToolCallPart, ToolReturnPart
        from pydantic_ai.models.function import FunctionModel

        def returns(messages: list[Any]) -> list[Any]:
            return [p for m in messages for p in m.parts if isinstance(p, ToolReturnPart)]

        def respond(messages: list[Any], info: Any) -> Any:
            d = w5_decision(len(returns(messages)), rounds)
            if isinstance(d, str):
                return ModelResponse(parts=[TextPart(d)])
            return ModelResponse(parts=[ToolCallPart("add", d[1], tool_call_id=d[0])])

        from pydantic_ai.usage import UsageLimits

        agent = Agent(FunctionModel(respond), tools=[add])
        limits = UsageLimits(request_limit=rounds + 5)  # its default stops at 50 requests

        def once() -> tuple[list[str], str]:
            out = agent.run_sync("count up", usage_limits=limits)
            return [str(p.content) for p in returns(out.all_messages())], str(out.output)

        return once

    def w6a_store(self) -> tuple[Callable[[int, str], str], Callable[[int], list[str]]]:
        from pydantic_ai import Agent
        from pydantic_ai.messages import ModelResponse, TextPart
        from pydantic_ai.models.function import FunctionModel

        def respond(messages: list[Any], info: Any) -> Any:
            return ModelResponse(parts=[TextPart(_reply_6a(str(messages[-1].parts[-1].content)))])

        agent = Agent(FunctionModel(respond))
        kept: dict[int, list[Any]] = {}  # pydantic-ai keeps no history: the caller does

        def turn(i: int, text: str) -> str:
            out = agent.run_sync(text, message_history=kept.get(i))
            kept[i] = out.all_messages()
            return str(out.output)

        def history(i: int) -> list[str]:
            return [str(p.content) for m in kept[i] for p in m.parts]

        return turn, history

    def w6b_store(self) -> tuple[Callable[[int, str], str], Callable[[int], list[str]]]:
        return self.w6a_store()  # its only way: the caller keeps all_messages()


class OpenAIAgents(Adapter):
    name = "openai-agents"
    s1_code = "from agents import Agent, Runner, OpenAIChatCompletionsModel"

    def __init__(self) -> None:
        from agents import set_tracing_disabled

        set_tracing_disabled(True)

    def w11_maker(
        self, base_url: str, prepared: bool = True, concurrent: bool = False
    ) -> Callable[[int], Any]:
        from agents import Agent, OpenAIChatCompletionsModel, function_tool
        from openai import AsyncOpenAI

        if concurrent:
            client = w7_openai_client(base_url)
        else:
            client = AsyncOpenAI(base_url=base_url, api_key="loopback", max_retries=0)
        model = OpenAIChatCompletionsModel(model=MODEL, openai_client=client)
        # Only FunctionTool objects are taken: what @function_tool makes at import.
        tools = [function_tool(f) for f in TOOLS]

        def make(i: int) -> Any:
            return Agent(name="agent", instructions=f"You help user {i}.", model=model, tools=tools)

        return make

    async def w7_run(self, agent: Any, marker: str) -> tuple[str, list[str]]:
        from agents import Runner

        out = await Runner.run(agent, marker)
        items = out.to_input_list()
        results = [str(it["output"]) for it in items if it.get("type") == "function_call_output"]
        return str(out.final_output), results

    def _scripted(self, fn: Callable[[Any], Any]) -> Any:
        from agents.items import ModelResponse
        from agents.models.interface import Model
        from agents.usage import Usage
        from openai.types.responses import (
            ResponseFunctionToolCall,
            ResponseOutputMessage,
            ResponseOutputText,
        )

        class Scripted(Model):
            """The SDK's ``Model`` interface answered in process (its documented way
            to plug in another model)."""

            async def get_response(self, system_instructions: Any, input: Any, *a: Any, **k: Any):
                d = fn(input)
                if isinstance(d, str):
                    text = ResponseOutputText(type="output_text", text=d, annotations=[])
                    out: Any = ResponseOutputMessage(
                        id="msg",
                        type="message",
                        role="assistant",
                        status="completed",
                        content=[text],
                    )
                else:
                    out = ResponseFunctionToolCall(
                        type="function_call", call_id=d[0], name="add", arguments=json.dumps(d[1])
                    )
                return ModelResponse(output=[out], usage=Usage(), response_id=None)

            def stream_response(self, *args: Any, **kwargs: Any) -> Any:
                raise NotImplementedError

        return Scripted()

    def w5_once(self, rounds: int) -> Callable[[], tuple[list[str], str]]:
        from agents import Agent, Runner, function_tool

        def outputs(items: Any) -> list[Any]:
            if isinstance(items, str):
                return []
            return [it for it in items if it.get("type") == "function_call_output"]

        model = self._scripted(lambda items: w5_decision(len(outputs(items)), rounds))
        agent = Agent(name="bench", model=model, tools=[function_tool(add)])

        def once() -> tuple[list[str], str]:
            out = Runner.run_sync(agent, "count up", max_turns=rounds + 5)
            return [str(it["output"]) for it in outputs(out.to_input_list())], str(out.final_output)

        return once

    def w6a_store(self) -> tuple[Callable[[int, str], str], Callable[[int], list[str]]]:
        from agents import Agent, Runner, SQLiteSession

        def respond(items: Any) -> str:
            last = items if isinstance(items, str) else items[-1]["content"]
            return _reply_6a(last if isinstance(last, str) else str(last))

        agent = Agent(name="bench", model=self._scripted(respond))
        sessions: dict[int, Any] = {}

        def turn(i: int, text: str) -> str:
            session = sessions.get(i)
            if session is None:
                session = sessions[i] = SQLiteSession(f"c{i}")  # in memory by default
            return str(Runner.run_sync(agent, text, session=session).final_output)

        def history(i: int) -> list[str]:
            items = asyncio.run(sessions[i].get_items())
            texts = []
            for it in items:
                c = it.get("content")
                if isinstance(c, list):
                    c = "".join(part.get("text", "") for part in c)
                texts.append(str(c))
            return texts

        return turn, history


def _oa_w6b(self: OpenAIAgents) -> tuple[Callable[[int, str], str], Callable[[int], list[str]]]:
    from agents import Agent, Runner

    def respond(items: Any) -> str:
        last = items if isinstance(items, str) else items[-1]["content"]
        return _reply_6a(last if isinstance(last, str) else str(last))

    agent = Agent(name="bench", model=self._scripted(respond))
    kept: dict[int, list[Any]] = {}

    def turn(i: int, text: str) -> str:
        out = Runner.run_sync(agent, [*kept.get(i, ()), {"role": "user", "content": text}])
        kept[i] = out.to_input_list()
        return str(out.final_output)

    def history(i: int) -> list[str]:
        texts = []
        for it in kept[i]:
            c = it.get("content")
            if isinstance(c, list):
                c = "".join(part.get("text", "") for part in c)
            texts.append(str(c))
        return texts

    return turn, history


OpenAIAgents.w6b_store = _oa_w6b  # type: ignore[method-assign]

ADAPTERS: dict[str, Callable[[], Adapter]] = {
    "ironloop": Ironloop,
    "ironloop-create_agent": IronloopCreateAgent,
    "langgraph": LangGraph,
    "langchain-create_agent": LangChainCreateAgent,
    "agno": Agno,
    "pydantic-ai": PydanticAI,
    "openai-agents": OpenAIAgents,
}


# --- children (one framework per fresh process) ------------------------------------------


def rss_kib(field: str = "VmRSS") -> int:
    """This process's resident KiB (``VmHWM``: its peak; unlike ``ru_maxrss`` it is
    not carried over from the parent across ``exec``)."""
    with open("/proc/self/status", encoding="utf-8") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise RuntimeError(f"no {field} in /proc/self/status")


def batch(make: Callable[[int], Any], most: int, seconds: float = 0.5) -> int:
    """How many agents to build per timed batch: ``most``, or fewer (at least 20) where
    building them would take over ``seconds`` (the frameworks differ 10,000×)."""
    t0 = time.perf_counter()
    for i in range(5):
        make(i)
    each = (time.perf_counter() - t0) / 5
    return max(20, min(most, int(seconds / max(each, 1e-9))))


def w11_memory_child(name: str, base_url: str, kept: int) -> dict[str, Any]:
    """Bytes per agent with ``kept`` agents alive (fewer, at least 20, for a framework
    that would take over 5 s to build them): resident (no tracing), then Python heap
    (tracemalloc) over as many more."""
    make = ADAPTERS[name]().w11_maker(base_url, prepared=False)
    kept = batch(make, kept, 5.0)
    warm = [make(-i) for i in range(1, 51)]
    gc.collect()
    before = rss_kib()
    agents = [make(i) for i in range(kept)]
    gc.collect()
    rss = (rss_kib() - before) * 1024 / kept
    tracemalloc.start()
    gc.collect()
    heap0 = tracemalloc.get_traced_memory()[0]
    more = [make(i) for i in range(kept)]
    gc.collect()
    heap = (tracemalloc.get_traced_memory()[0] - heap0) / kept
    tracemalloc.stop()
    del warm, agents, more
    return {"rss_bytes_per_agent": rss, "heap_bytes_per_agent": heap, "kept": kept}


def w6a_child(name: str, conversations: int, kind: str = "w6a") -> dict[str, Any]:
    adapter = ADAPTERS[name]()
    turn, history = adapter.w6b_store() if kind == "w6b" else adapter.w6a_store()

    def converse(i: int) -> None:
        for t in range(5):
            text = f"{PAYLOAD_100} {i}:{t}"
            answer = turn(i, text)
            if answer != _reply_6a(text):
                raise BenchError(f"conversation {i} turn {t}: answer {answer[-30:]!r}")

    for i in range(-50, 0):  # warm-up conversations: one-time allocations, not counted
        converse(i)
    gc.collect()
    before = rss_kib()
    t0 = time.perf_counter()
    for i in range(conversations):
        converse(i)
    seconds = time.perf_counter() - t0
    gc.collect()
    after = rss_kib()
    for i in (0, conversations - 1):
        texts = history(i)
        if len(texts) != 10 or not texts[0].endswith(f" {i}:0") or not texts[-1].endswith(f"{i}:4"):
            raise BenchError(f"conversation {i}: {len(texts)} messages kept: {texts[:2]}...")
    return {
        "kb_per_conversation": (after - before) * 1024 / 1000 / conversations,
        "us_per_turn": seconds * 1e6 / conversations / 5,
    }


def w7a_child(name: str, base_url: str, conversations: int, rounds: int, calls: int) -> dict:
    adapter = ADAPTERS[name]()
    agent = adapter.w7_agent(base_url)
    tag = uuid.uuid4().hex[:8]

    async def one(i: int) -> None:
        final, results = await adapter.w7_run(agent, f"{name} {tag} conversation {i}")
        check_w7(final, results, rounds, calls)

    async def main() -> None:
        await one(-1)  # warm-up: connections, lazy imports
        t0 = time.perf_counter()
        c0 = time.process_time()
        await asyncio.gather(*(one(i) for i in range(conversations)))
        out["wall_s"] = time.perf_counter() - t0
        out["cpu_s"] = time.process_time() - c0
        out["cpu_ms_per_request"] = out["cpu_s"] * 1e3 / (conversations * (rounds + 1))

    out: dict[str, Any] = {}
    asyncio.run(main())
    out["peak_rss_mib"] = rss_kib("VmHWM") / 1024
    return out


def child(args: list[str]) -> dict[str, Any]:
    """Runs ``[peers.py] --child ARGS...`` and returns the JSON its last line prints."""
    out = subprocess.run(
        [sys.executable, __file__, "--child", *args], capture_output=True, text=True, check=False
    )
    if out.returncode != 0:
        last = out.stderr.strip().splitlines()[-3:]  # the exception, not the traceback's head
        raise BenchError(f"child {args[:2]} failed: {' | '.join(last)}")
    return json.loads(out.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


# --- the table -----------------------------------------------------------------------------


@dataclass
class Row:
    workload: str
    unit: str
    what: str
    stats: dict[str, h.Stats]
    notes: dict[str, str]
    lower_is_better: bool = True

    def cell(self, name: str) -> str:
        if name in self.notes and name not in self.stats:
            return self.notes[name]
        s = self.stats.get(name)
        if s is None:
            return "-"
        text = f"{h._fmt(s.median)} ({h._fmt(s.min)}–{h._fmt(s.max)})"
        il = self.stats.get("ironloop")
        if name != "ironloop" and il is not None and il.median > 0:
            text += f" {s.median / il.median:.1f}×"
        return text


def print_rows(rows: list[Row], names: list[str]) -> None:
    header = ["workload", "unit", *names]
    table = [header] + [[r.workload, r.unit, *(r.cell(n) for n in names)] for r in rows]
    widths = [max(len(line[i]) for line in table) for i in range(len(header))]
    for n, line in enumerate(table):
        print("  ".join(c.ljust(w) for c, w in zip(line, widths, strict=False)).rstrip())
        if n == 0:
            print("  ".join("-" * w for w in widths))
    print("(median (min–max) over the repetitions; N× = this framework's median ÷ ironloop's)")
    for r in rows:
        print(f"{r.workload}: {r.what}")
        for name, note in r.notes.items():
            if name in names:
                print(f"  {name}: {note}")


def versions(names: list[str]) -> dict[str, str]:
    out = {}
    for n in names:
        for d in DISTS[n]:
            try:
                out[d] = metadata.version(d)
            except metadata.PackageNotFoundError:
                out[d] = "not installed"
    return out


# --- main ----------------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] == "--child":
        kind, name, *rest = argv[1:]
        if kind == "w11":
            result = w11_memory_child(name, rest[0], int(rest[1]))
        elif kind in ("w6a", "w6b"):
            result = w6a_child(name, int(rest[0]), kind)
        elif kind == "w7a":
            result = w7a_child(name, rest[0], int(rest[1]), int(rest[2]), int(rest[3]))
        else:
            raise SystemExit(f"unknown child {kind}")
        print(json.dumps(result))
        return 0

    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--only", default=",".join(WORKLOADS), help="workloads, comma-separated")
    p.add_argument("--frameworks", default=",".join(FRAMEWORKS))
    p.add_argument("--repeat", type=int, default=5)
    p.add_argument("--agents", type=int, default=AGENTS_W11, help="W11 agents per repetition")
    p.add_argument("--kept", type=int, default=KEPT_W11, help="W11 agents kept for memory")
    p.add_argument("--rounds", type=int, default=ROUNDS_W5)
    p.add_argument("--conversations-w6a", type=int, default=CONVERSATIONS_W6A)
    p.add_argument("--conversations", type=int, default=CONVERSATIONS_W7A, help="W7a")
    p.add_argument("--repeat-w7a", type=int, default=3, help="W7a runs per framework")
    p.add_argument("--s1-runs", type=int, default=10)
    h.add_json_arg(p)
    args = p.parse_args(argv)
    only = set(args.only.split(","))
    names = [n for n in args.frameworks.split(",") if n]
    for n in names:
        if n not in ADAPTERS:
            p.error(f"unknown framework {n!r}: one of {', '.join(FRAMEWORKS)}")

    info = h.machine_info()
    info["packages"] = versions(names)
    h.print_header("ironloop and its peers: W11, W5, W6a, W7a, S1", info, argv)
    rows: list[Row] = []
    details: dict[str, Any] = {}

    def attempt(row: Row, name: str, fn: Callable[[], h.Stats]) -> None:
        try:
            row.stats[name] = fn()
        except Exception as e:  # a broken run is reported, never timed
            row.notes[name] = f"FAILED: {type(e).__name__}: {str(e)[:300]}"
        print(f"  {row.workload} {name}: {row.cell(name)}", flush=True)

    adapters = {n: ADAPTERS[n]() for n in names}

    if "W11" in only:
        plain = Row(
            "W11",
            "µs/agent",
            "build a ready-to-run agent: a model object and 5 tools given as plain functions",
            {},
            {},
        )
        objects = Row(
            "W11 tools",
            "µs/agent",
            "the same with the 5 tools as the framework's own tool objects, made once "
            "(ironloop / agno @tool, LangChain @tool, pydantic-ai Tool, openai-agents "
            "function_tool)",
            {},
            {},
        )
        mem_rows = (
            Row(
                "W11 heap",
                "bytes/agent",
                "Python heap per agent (tracemalloc), W11's agents",
                {},
                {},
            ),
            Row(
                "W11 RSS", "bytes/agent", f"resident memory per agent ({args.kept:,} kept)", {}, {}
            ),
        )
        # Before time counts, an agent built the same way runs one conversation against
        # the loopback server (a tool round, then the answer).
        check_loop = asyncio.new_event_loop()
        with LoopbackOpenAI(delay=0.0, rounds=1, calls=1) as srv:
            for row, prepared in ((plain, False), (objects, True)):
                for n, a in adapters.items():

                    def build(a: Adapter = a, n: str = n, prepared: bool = prepared) -> h.Stats:
                        make = a.w11_maker(srv.base_url, prepared)
                        agent = make(7)
                        # One loop for every check: clients cached across agents
                        # (langchain-openai's) stay bound to the loop they first ran on.
                        final, results = check_loop.run_until_complete(
                            a.w7_run(agent, f"w11 {n} {prepared}")
                        )
                        check_w7(final, results, 1, 1)
                        k = batch(make, args.agents)
                        stats = h.measure(lambda: [make(i) for i in range(k)], repeat=args.repeat)
                        return stats.scaled(1e6 / k)

                    attempt(row, n, build)
            plain.notes["openai-agents"] = "takes FunctionTool objects only: same as W11 tools"
            for n in names:
                try:
                    runs = [child(["w11", n, srv.base_url, str(args.kept)]) for _ in range(3)]
                    details.setdefault("W11 memory", {})[n] = runs
                    mem_rows[0].stats[n] = h.Stats.of([r["heap_bytes_per_agent"] for r in runs])
                    mem_rows[1].stats[n] = h.Stats.of([r["rss_bytes_per_agent"] for r in runs])
                except Exception as e:
                    for r in mem_rows:
                        r.notes[n] = f"FAILED: {type(e).__name__}: {str(e)[:300]}"
                print(f"  W11 memory {n}: heap {mem_rows[0].cell(n)}, RSS {mem_rows[1].cell(n)}")
        rows += [plain, objects, *mem_rows]

    if "W5" in only:
        row = Row("W5", "µs/round", f"ReAct rounds, scripted model, {args.rounds} rounds", {}, {})
        for n, a in adapters.items():

            def w5(a: Adapter = a) -> h.Stats:
                once = a.w5_once(args.rounds)

                def check(result: Any) -> None:
                    check_w5(result[0], result[1], args.rounds)

                return h.measure(once, repeat=args.repeat, check=check).scaled(1e6 / args.rounds)

            attempt(row, n, w5)
        rows.append(row)

    if "W6a" in only:
        row = Row(
            "W6a",
            "KB/conv.",
            f"memory per 5-turn conversation kept ({args.conversations_w6a:,} conversations)",
            {},
            {},
        )
        for n in names:

            def w6a(n: str = n) -> h.Stats:
                runs = [child(["w6a", n, str(args.conversations_w6a)]) for _ in range(3)]
                details.setdefault("W6a", {})[n] = runs
                return h.Stats.of([r["kb_per_conversation"] for r in runs])

            attempt(row, n, w6a)
        rows.append(row)

    if "W6b" in only:
        row = Row(
            "W6b",
            "KB/conv.",
            f"W6a with no store: the caller keeps each conversation's messages "
            f"({args.conversations_w6a:,} conversations)",
            {},
            {},
        )
        for n in names:
            if n == "agno":
                row.notes[n] = "not measured (agno's history comes from its db)"
                continue

            def w6b(n: str = n) -> h.Stats:
                runs = [child(["w6b", n, str(args.conversations_w6a)]) for _ in range(3)]
                details.setdefault("W6b", {})[n] = runs
                return h.Stats.of([r["kb_per_conversation"] for r in runs])

            attempt(row, n, w6b)
        rows.append(row)

    if "W7a" in only:
        rounds, calls = 3, 2
        wall = Row(
            "W7a wall",
            "s",
            f"{args.conversations:,} concurrent conversations over HTTP, 50 ms replies, "
            f"{rounds} rounds of {calls} calls (ideal {(rounds + 1) * 0.05:.2f} s)",
            {},
            {},
        )
        cpu = Row("W7a CPU", "s", "client CPU seconds for those conversations", {}, {})
        rss = Row("W7a RSS", "MiB", "client peak resident memory", {}, {})
        with LoopbackOpenAI(delay=0.05, rounds=rounds, calls=calls) as srv:
            for n in names:
                try:
                    runs = []
                    for _ in range(args.repeat_w7a):
                        srv.stats(reset=True)
                        r = child(
                            [
                                "w7a",
                                n,
                                srv.base_url,
                                str(args.conversations),
                                str(rounds),
                                str(calls),
                            ]
                        )
                        served = srv.stats()["requests"]
                        want = (args.conversations + 1) * (rounds + 1)
                        if served != want:
                            raise BenchError(f"the server saw {served} requests, expected {want}")
                        runs.append(r)
                    details.setdefault("W7a", {})[n] = runs
                    wall.stats[n] = h.Stats.of([r["wall_s"] for r in runs])
                    cpu.stats[n] = h.Stats.of([r["cpu_s"] for r in runs])
                    rss.stats[n] = h.Stats.of([r["peak_rss_mib"] for r in runs])
                except Exception as e:
                    for r_ in (wall, cpu, rss):
                        r_.notes[n] = f"FAILED: {type(e).__name__}: {str(e)[:300]}"
                print(f"  W7a {n}: wall {wall.cell(n)}, CPU {cpu.cell(n)}, RSS {rss.cell(n)}")
                if n in cpu.stats:
                    per = [f"{r['cpu_ms_per_request']:.2f}" for r in details["W7a"][n]]
                    load = "/".join(f"{x:.1f}" for x in os.getloadavg())
                    print(f"    client CPU ms per request: {', '.join(per)} (load {load})")
        rows += [wall, cpu, rss]

    if "S1" in only:
        import graph as g

        row = Row("S1", "ms", "import what an OpenAI-backed agent needs (fresh process)", {}, {})
        peak = Row("S1 RSS", "MiB", "peak resident memory of that import", {}, {})
        for n, a in adapters.items():

            def s1(a: Adapter = a, n: str = n) -> h.Stats:
                walls, peaks = g.s1(a.s1_code, args.s1_runs)
                peak.stats[n] = peaks
                return walls

            attempt(row, n, s1)
        rows += [row, peak]

    print()
    print_rows(rows, names)
    if args.json:
        payload = {
            **info,
            "details": details,
            "results": [
                {
                    "workload": r.workload,
                    "unit": r.unit,
                    "what": r.what,
                    "stats": {
                        k: vars(v) | {"samples": list(v.samples)} for k, v in r.stats.items()
                    },
                    "notes": r.notes,
                }
                for r in rows
            ],
        }
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump(payload, f, indent=2, ensure_ascii=False, default=str)
        print(f"\nresults written to {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
