"""The built-in middleware LangChain 1.5 ships that ironloop added: ``PIIMiddleware``
(detectors in Rust), ``FilesystemFileSearchMiddleware`` (the workspace tools' glob and
grep), ``LLMToolSelectorMiddleware`` and ``LLMToolEmulator``."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

import pytest
from agent_support import MODES, call, run, turn

from ironloop import create_agent, tool
from ironloop.messages import AIMessage, HumanMessage, ToolMessage
from ironloop.middleware import (
    FilesystemFileSearchMiddleware,
    LLMToolEmulator,
    LLMToolSelectorMiddleware,
    PIIDetectionError,
    PIIMiddleware,
    wrap_model_call,
)
from ironloop.middleware.pii import detect_credit_card, detect_email, detect_ip, detect_url
from ironloop.models import ScriptedChatModel


def test_detectors_give_python_character_offsets_and_validate() -> None:
    text = "naïve → mail bob@corp.io, card 4532 0151 1283 0366, bad 1234 5678 9012 3456"
    [email] = detect_email(text)
    assert text[email["start"] : email["end"]] == "bob@corp.io" == email["value"]
    assert [m["value"] for m in detect_credit_card(text)] == ["4532 0151 1283 0366"]
    assert [m["value"] for m in detect_ip("10.0.0.1 256.1.1.1 1.2.3")] == ["10.0.0.1"]
    urls = [m["value"] for m in detect_url("go https://a.io/x or www.b.com, not c.com")]
    assert urls == ["https://a.io/x", "www.b.com"]


_CORPUS = [
    "Contact john.doe@example.com or a@b.c, not @x.com / user@ / user@domain",
    "Cards 4532015112830366, 4532-0151-1283-0366, 4532 0151 1283 0366, 1234567812345678",
    "IPs 192.168.1.1 10.0.0.256 01.2.3.4 1.2.3.4.5 v1.2.3 and 255.255.255.255.",
    "MACs 00:1A:2B:3C:4D:5E 00-1a-2b-3c-4d-5e 00:1A:2B:3C:4D and 001A2B3C4D5E",
    "Links https://example.com/a?b=1#c http:///x www.test.org api.site.io/v1/users a.b",
    "Mixed: é@ü.de héllo → bob@corp.io at https://ü.example/ñ (4111 1111 1111 1111)",
]


@pytest.mark.parametrize("kind", ["email", "credit_card", "ip", "mac_address", "url"])
def test_rust_detectors_find_what_langchains_find(kind: str) -> None:
    from langchain.agents.middleware import _redaction as redaction

    from ironloop.middleware._redaction import BUILTIN_DETECTORS

    for text in _CORPUS:
        assert BUILTIN_DETECTORS[kind](text) == redaction.BUILTIN_DETECTORS[kind](text), text


@pytest.mark.parametrize(
    ("strategy", "expected"),
    [
        ("redact", "card [REDACTED_CREDIT_CARD] please"),
        ("mask", "card ****-****-****-0366 please"),
        ("hash", "card <credit_card_hash:"),
    ],
)
def test_pii_strategies_rewrite_the_last_user_message(strategy: Any, expected: str) -> None:
    m = PIIMiddleware("credit_card", strategy=strategy)
    out = m.before_model({"messages": [HumanMessage("card 4532-0151-1283-0366 please")]}, None)
    assert out is not None and out["messages"][0].content.startswith(expected)


@pytest.mark.parametrize("mode", MODES)
def test_pii_in_an_agent_the_model_never_sees_the_address(mode: str) -> None:
    seen: list[str] = []

    @wrap_model_call
    def spy(request: Any, handler: Any) -> Any:
        seen.append(request.messages[-1].text)
        return handler(request)

    agent = create_agent(
        ScriptedChatModel(["write to ann@x.org"]),
        [],
        middleware=[PIIMiddleware("email", apply_to_output=True), spy],
    )
    out = run(agent, {"messages": [("user", "I am bob@y.com")]}, mode=mode)
    assert seen == ["I am [REDACTED_EMAIL]"]
    assert out["messages"][-1].content == "write to [REDACTED_EMAIL]"


def test_pii_block_stops_the_run_and_custom_detectors_work() -> None:
    agent = create_agent(
        ScriptedChatModel(["never"]),
        [],
        middleware=[PIIMiddleware("api_key", detector=r"sk-[a-z0-9]{8}", strategy="block")],
    )
    with pytest.raises(PIIDetectionError, match="1 instance\\(s\\) of api_key"):
        agent.invoke({"messages": [("user", "my key is sk-abcd1234")]})
    with pytest.raises(ValueError, match="Unknown PII type: ssn"):
        PIIMiddleware("ssn")
    with pytest.raises(ValueError, match="strategy must be"):
        PIIMiddleware("email", strategy="erase")  # type: ignore[arg-type]


def test_pii_tool_results_of_the_last_turn_are_checked() -> None:
    @tool
    def lookup(who: str) -> str:
        """Looks a person up."""
        return f"{who}: 192.168.0.7"

    seen: list[Any] = []

    @wrap_model_call
    def spy(request: Any, handler: Any) -> Any:
        seen.append([m.content for m in request.messages if isinstance(m, ToolMessage)])
        return handler(request)

    model = ScriptedChatModel([turn(call("lookup", "c1", who="ann")), "done"])
    mw = PIIMiddleware("ip", strategy="mask", apply_to_input=False, apply_to_tool_results=True)
    create_agent(model, [lookup], middleware=[mw, spy]).invoke({"messages": [("user", "go")]})
    assert seen == [[], ["ann: *.*.*.7"]]


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "a.py").write_text("import os\nprint('hi')\n")
    (tmp_path / "src" / "b.pyi").write_text("def f() -> None: ...\nprint\n")
    (tmp_path / "notes.md").write_text("print me\n")
    old = time.time() - 100
    os.utime(tmp_path / "src" / "b.pyi", (old, old))
    outside = tmp_path.parent / f"{tmp_path.name}-secret.txt"
    outside.write_text("print secret\n")
    (tmp_path / "src" / "link.py").symlink_to(outside)
    return tmp_path


def test_file_search_glob_sorts_by_mtime_and_stays_in_the_root(tree: Path) -> None:
    m = FilesystemFileSearchMiddleware(root_path=str(tree))
    assert m.glob_search.invoke({"pattern": "**/*.py*"}) == "/src/a.py\n/src/b.pyi"
    assert m.glob_search.invoke({"pattern": "*.md", "path": "/"}) == "/notes.md"
    assert m.glob_search.invoke({"pattern": "../*"}) == "No files found"
    assert m.glob_search.invoke({"pattern": "*", "path": "/../"}) == "No files found"


def test_file_search_grep_modes_include_and_errors(tree: Path) -> None:
    grep = FilesystemFileSearchMiddleware(root_path=str(tree)).grep_search
    assert grep.invoke({"pattern": "print"}) == "/notes.md\n/src/a.py\n/src/b.pyi"
    assert (
        grep.invoke({"pattern": "print", "include": "*.{py,pyi}", "output_mode": "content"})
        == "/src/a.py:2:print('hi')\n/src/b.pyi:2:print"
    )
    assert grep.invoke({"pattern": "print|import", "output_mode": "count", "path": "src"}) == (
        "/src/a.py:2\n/src/b.pyi:1"
    )
    assert grep.invoke({"pattern": "secret"}) == "No matches found"
    assert grep.invoke({"pattern": "("}).startswith("Invalid regex pattern:")
    assert grep.invoke({"pattern": "x", "include": "*.{py"}) == "Invalid include pattern"


class _Selector:
    """A selection model: answers each structured call with the next of ``answers``."""

    def __init__(self, answers: list[Any]) -> None:
        self.answers = answers
        self.schemas: list[Any] = []
        self.configs: list[Any] = []

    def with_structured_output(self, schema: Any) -> _Selector:
        self.schemas.append(schema)
        return self

    def invoke(self, messages: Any, config: Any = None) -> Any:
        self.configs.append(config)
        return self.answers.pop(0)

    async def ainvoke(self, messages: Any, config: Any = None) -> Any:
        return self.invoke(messages, config)


def _tools() -> list[Any]:
    @tool
    def weather(city: str) -> str:
        """Weather in a city."""
        return "sunny"

    @tool
    def stocks(ticker: str) -> str:
        """A stock price."""
        return "42"

    @tool
    def news(topic: str) -> str:
        """Headlines."""
        return "none"

    return [weather, stocks, news]


@pytest.mark.parametrize("mode", ["invoke", "ainvoke"])
def test_tool_selector_narrows_the_tools_of_the_call(mode: str) -> None:
    offered: list[list[str]] = []

    @wrap_model_call
    def spy(request: Any, handler: Any) -> Any:
        offered.append(sorted(t.name for t in request.tools))
        return handler(request)

    selector = _Selector([{"tools": "oops"}, {"tools": ["stocks", "weather", "stocks"]}])
    mw = LLMToolSelectorMiddleware(model=selector, max_tools=1, always_include=["news"])
    agent = create_agent(ScriptedChatModel(["ok"]), _tools(), middleware=[mw, spy])
    run(agent, {"messages": [("user", "AAPL?")]}, mode=mode)
    assert offered == [["news", "stocks"]]
    assert selector.configs[0]["tags"] == ["nostream"]
    assert "news" not in str(selector.schemas[0])


def test_tool_selector_failures() -> None:
    agent = create_agent(
        ScriptedChatModel(["ok"]),
        _tools(),
        middleware=[LLMToolSelectorMiddleware(model=_Selector([{"tools": ["nope"]}]))],
    )
    with pytest.raises(ValueError, match=r"invalid tools: \['nope'\]"):
        agent.invoke({"messages": [("user", "x")]})
    bad = LLMToolSelectorMiddleware(model=_Selector([None, None]), max_retries=1)
    agent = create_agent(ScriptedChatModel(["ok"]), _tools(), middleware=[bad])
    with pytest.raises(ValueError, match="malformed response after 1 retries"):
        agent.invoke({"messages": [("user", "x")]})
    with pytest.raises(ValueError, match="max_retries must be >= 0"):
        LLMToolSelectorMiddleware(max_retries=-1)


@pytest.mark.parametrize("mode", MODES)
def test_tool_emulator_answers_chosen_tools_and_runs_the_rest(mode: str) -> None:
    ran: list[str] = []

    @tool
    def real(x: int) -> str:
        """Runs."""
        ran.append("real")
        return "real result"

    @tool
    def fake(x: int) -> str:
        """Never runs."""
        ran.append("fake")
        return "no"

    emulator = LLMToolEmulator(tools=[fake], model=ScriptedChatModel(["made up"]))
    model = ScriptedChatModel([turn(call("fake", "1", x=1), call("real", "2", x=2)), "done"])
    out = run(
        create_agent(model, [real, fake], middleware=[emulator]),
        {"messages": [("user", "go")]},
        mode=mode,
    )
    results = {m.name: m.content for m in out["messages"] if isinstance(m, ToolMessage)}
    assert results == {"fake": "made up", "real": "real result"} and ran == ["real"]
    assert isinstance(out["messages"][-1], AIMessage)


def test_emulator_model_string_needs_its_key_only_when_it_emulates(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from ironloop.errors import ModelError

    for var in ("ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL"):
        monkeypatch.delenv(var, raising=False)
    # As LangChain's init_chat_model("anthropic:..."): made without a key, it fails
    # at its first call, with the fix named. So does the deprecated default model.
    emulator = LLMToolEmulator(tools=["fake"], model="anthropic:claude-sonnet-4-5-20250929")
    with pytest.warns(DeprecationWarning, match="deprecated"):
        default = LLMToolEmulator(tools=["fake"])
    assert emulator.model.model == default.model.model == "claude-sonnet-4-5-20250929"
    model = ScriptedChatModel([turn(call("fake", "1", x=1)), "done"])
    agent = create_agent(model, [fake_tool], middleware=[emulator])
    out = agent.invoke({"messages": [("user", "go")]})
    # The failed emulation is the call's error result (ironloop's default tool error
    # policy), naming the fix.
    (reply,) = [m for m in out["messages"] if isinstance(m, ToolMessage)]
    assert reply.status == "error" and reply.content.startswith("Error: ModelError(")
    assert "without an API key" in reply.content and "ANTHROPIC_API_KEY" in reply.content
    with pytest.raises(ModelError, match=r"without an API key.*ANTHROPIC_API_KEY"):
        emulator.model.invoke("hi")


@tool("fake")
def fake_tool(x: int) -> str:
    """Not written yet."""
    raise AssertionError("an emulated tool never runs")


def test_provider_tool_search_defers_langchain_tools_behind_the_providers_search() -> None:
    from langchain_core.tools import tool as lc_tool

    from ironloop.middleware import ModelRequest, ModelResponse, ProviderToolSearchMiddleware

    @lc_tool
    def lookup(order: str) -> str:
        """Look an order up."""
        return order

    @lc_tool(extras={"defer_loading": True})
    def refund(order: str) -> str:
        """Refund an order."""
        return order

    class ChatAnthropic:  # what LangChain's Anthropic model is called
        pass

    sent: list[Any] = []

    def handler(request: Any) -> Any:
        sent.append(request.tools)
        return ModelResponse(result=[AIMessage("ok")])

    mw = ProviderToolSearchMiddleware(searchable_tools=[lookup])
    request = ModelRequest(
        model=ChatAnthropic(), messages=[HumanMessage("hi")], tools=[lookup, refund]
    )
    mw.wrap_model_call(request, handler)
    *tools, search = sent[0]
    assert [t.extras for t in tools] == [{"defer_loading": True}] * 2
    assert search == {"type": "tool_search_tool_bm25_20251119", "name": "tool_search_tool_bm25"}
    assert lookup.extras is None  # the user's tool is not changed
    with pytest.raises(ValueError, match="not bound to the model: nope"):
        ProviderToolSearchMiddleware(searchable_tools=["nope"]).wrap_model_call(request, handler)
    mystery = ModelRequest(model=object(), messages=[HumanMessage("hi")], tools=[refund])
    with pytest.raises(ValueError, match="could not determine the provider"):
        ProviderToolSearchMiddleware().wrap_model_call(mystery, handler)
    from ironloop.models import AnthropicChat

    ours = ModelRequest(
        model=AnthropicChat("claude-sonnet-4-5", api_key="k"), messages=[], tools=[refund]
    )
    with pytest.raises(ValueError, match="does not send deferred tools yet"):
        ProviderToolSearchMiddleware().wrap_model_call(ours, handler)


@pytest.mark.parametrize("mode", ["invoke", "ainvoke"])
def test_model_router_sends_the_runs_calls_to_the_classifiers_choice(mode: str) -> None:
    from langchain_core.decisions import BaseDecisionModel, ChoiceAnswer, ClassifierResponse
    from pydantic import ValidationError

    from ironloop.middleware import ModelChoice, ModelRouterMiddleware

    asked: list[Any] = []

    class Classifier(BaseDecisionModel):
        model: str = "fake"

        @property
        def _provider(self) -> str:
            return "fake"

        def _classify(self, state: Any, questions: Any) -> Any:
            asked.append((state.content, questions["model_route"].criteria))
            answer = ChoiceAnswer(
                type="choice", choice="big", probabilities={"big": 1.0}, confidence=1.0
            )
            return ClassifierResponse(model=self.model, answers={"model_route": answer})

    router = ModelRouterMiddleware(
        choices={
            "small": ModelChoice(model=ScriptedChatModel(["small"]), criteria="easy"),
            "big": ModelChoice(model=ScriptedChatModel(["big", "big"]), criteria="hard"),
        },
        instructions="Pick the cheapest that fits.",
        classifier=Classifier(),
    )
    agent = create_agent(ScriptedChatModel(["default"]), [], middleware=[router])
    out = run(agent, {"messages": [("user", "prove it")]}, mode=mode)
    assert out["messages"][-1].content == "big" and out["model_route"].choice == "big"
    assert asked == [("prove it", {"small": "easy", "big": "hard"})]
    with pytest.raises(ValidationError):
        ModelRouterMiddleware(choices={}, instructions="x", classifier=Classifier())


@pytest.mark.parametrize("mode", ["invoke", "ainvoke"])
def test_auto_mode_blocks_risky_calls_of_listed_tools_only(mode: str) -> None:
    from langchain_core.decisions import BaseDecisionModel, ClassifierResponse, NoulAnswer
    from pydantic import ValidationError

    from ironloop.middleware import AutoModeMiddleware

    ran: list[str] = []
    seen: list[Any] = []

    @tool
    def delete_file(path: str) -> str:
        """Deletes a file."""
        ran.append(path)
        return "deleted"

    @tool
    def read_file(path: str) -> str:
        """Reads a file."""
        ran.append("read " + path)
        return "text"

    class Risk(BaseDecisionModel):
        model: str = "fake"

        @property
        def _provider(self) -> str:
            return "fake"

        def _classify(self, state: Any, questions: Any) -> Any:
            seen.append(state["tool_call"]["args"]["path"])
            risky = 0.9 if state["tool_call"]["args"]["path"] == "/etc" else 0.1
            return ClassifierResponse(
                model=self.model, answers={"is_risky": NoulAnswer(type="noul", noul=risky)}
            )

    model = ScriptedChatModel(
        [
            turn(
                call("delete_file", "1", path="/etc"),
                call("delete_file", "2", path="tmp"),
                call("read_file", "3", path="/etc"),
            ),
            "done",
        ]
    )
    mw = AutoModeMiddleware(tools=[delete_file], classifier=Risk())
    out = run(
        create_agent(model, [delete_file, read_file], middleware=[mw]),
        {"messages": [("user", "clean")]},
        mode=mode,
    )
    results = {
        m.tool_call_id: (m.status, m.content) for m in out["messages"] if isinstance(m, ToolMessage)
    }
    assert (
        results["1"][0] == "error" and "classified as risky (probability: 0.90)" in results["1"][1]
    )
    assert results["2"] == ("success", "deleted") and results["3"] == ("success", "text")
    assert sorted(ran) == ["read /etc", "tmp"] and sorted(seen) == ["/etc", "tmp"]
    with pytest.raises(ValidationError):
        AutoModeMiddleware(tools=[], classifier=Risk())


def test_shell_session_persists_between_commands_and_ends_with_the_run(tmp_path: Path) -> None:
    from ironloop.middleware import HostExecutionPolicy, ShellToolMiddleware
    from ironloop.middleware._redaction import RedactionRule

    work = tmp_path / "ws"
    shell = ShellToolMiddleware(
        workspace_root=work,
        startup_commands=("export GREETING=hello",),
        shutdown_commands=("touch done.txt",),
        execution_policy=HostExecutionPolicy(command_timeout=2.0, max_output_lines=3),
        redaction_rules=[RedactionRule(pii_type="email")],
        env={"TEAM": "blue"},
    )
    os.environ["IRONLOOP_TEST_SECRET"] = "s3cret"
    try:
        model = ScriptedChatModel(
            [
                turn(call("shell", "1", command="mkdir sub && cd sub && echo $GREETING $TEAM")),
                turn(call("shell", "2", command="pwd; echo ${IRONLOOP_TEST_SECRET:-unset}")),
                turn(call("shell", "3", command="echo a@b.io; seq 10")),
                turn(call("shell", "4", command="sleep 5")),
                turn(call("shell", "5", command="exit 3")),
                "done",
            ]
        )
        agent = create_agent(model, [], middleware=[shell])
        out = agent.invoke({"messages": [("user", "go")]})
    finally:
        del os.environ["IRONLOOP_TEST_SECRET"]
    got = {
        m.tool_call_id: (m.status, m.content) for m in out["messages"] if isinstance(m, ToolMessage)
    }
    assert got["1"] == ("success", "hello blue")
    assert got["2"] == ("success", f"{work.resolve()}/sub\nunset")  # cd kept; env allow-listed
    assert got["3"][1].startswith("[REDACTED_EMAIL]\n1\n2\n\n... Output truncated")
    assert got["4"] == ("error", "Error: Command timed out after 2.0 seconds.")
    assert got["5"][0] == "error" and got["5"][1].endswith("Exit code: 3")
    assert (work / "done.txt").exists() and (work / "sub").is_dir()


def test_shell_startup_failure_and_bad_settings_are_refused(tmp_path: Path) -> None:
    from ironloop.middleware import DockerExecutionPolicy, ShellToolMiddleware

    failing = ShellToolMiddleware(workspace_root=tmp_path, startup_commands=["false"])
    with pytest.raises(RuntimeError, match=r"Startup command 'false' failed \(exit code 1\)"):
        failing.before_agent({"messages": []}, None)
    with pytest.raises(ValueError, match="at least one argument"):
        ShellToolMiddleware(shell_command=[])
    with pytest.raises(TypeError, match="must be strings"):
        ShellToolMiddleware(env={1: "x"})  # type: ignore[dict-item]
    with pytest.raises(RuntimeError, match="does not support cpu_time_seconds"):
        DockerExecutionPolicy(cpu_time_seconds=1)
    missing = DockerExecutionPolicy(binary="ironloop-no-such-docker")
    with pytest.raises(RuntimeError, match="needs the 'ironloop-no-such-docker' program"):
        missing.spawn(workspace=tmp_path, env={}, command=["/bin/sh"])


def test_a_langchain_summary_models_tokens_stay_off_the_messages_stream() -> None:
    from langchain_core.language_models.fake_chat_models import GenericFakeChatModel

    from ironloop.middleware import SummarizationMiddleware

    summarizer = GenericFakeChatModel(messages=iter([AIMessage(content="SUMMARY")]))
    mw = SummarizationMiddleware(model=summarizer, trigger=("messages", 3), keep=("messages", 1))
    agent = create_agent(ScriptedChatModel(["Final."]), [], middleware=[mw])
    history = {"messages": [HumanMessage("hi"), AIMessage("hello"), HumanMessage("again")]}
    parts = [p for p, _ in agent.stream(history, stream_mode="messages")]
    assert "".join(p.text for p in parts if isinstance(p, AIMessage)) == "Final."
    assert any("SUMMARY" in p.text for p in parts if isinstance(p, HumanMessage))
