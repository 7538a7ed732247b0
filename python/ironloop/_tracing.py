"""OpenTelemetry spans for runs, steps, model calls (ironloop's models and LangChain
chat models alike) and tool calls, with the GenAI semantic conventions' attributes.

Optional: nothing here imports ``opentelemetry`` unless ``opentelemetry-api`` is
installed (``ON``), and a run whose span does not record (no SDK configured, or a
sampler said no) hands the Rust side no tracer, so its steps and tool calls cost
nothing more than an untraced run's.

Parenting follows OpenTelemetry's ``contextvars`` context: a run's span is current
while the Rust side captures the run's context; each step's span is made current in
that same context (``RunTrace.step_start``, called by the step loop through
``src/bindings/tracing.rs``), so the step's tasks — copies of it — open their spans
under it; a Python tool's span is current while its function runs (``call_tool``),
so a sub-agent the tool starts opens its run span under the tool call's. Every tool
call's span — a Python function's, or an MCP, OpenAPI or workspace tool's that runs in
Rust — is opened by the Rust executor when it takes the call (``tool_start``, in a copy
of the task's context, so parallel calls are siblings under their step) and closed with
the call's outcome (``tool_end``). Attributes
never carry message content, tool arguments or results: no prompt or credential
leaves through a span.
"""

from __future__ import annotations

import importlib.util
import os
from collections.abc import Awaitable, Callable, Iterator
from contextlib import ExitStack, contextmanager
from contextvars import ContextVar
from typing import Any

from ironloop import _ironloop

#: True when ``opentelemetry-api`` is importable; checked once per run and per model
#: call, before :func:`tracer` asks whether a provider is set.
ON: bool = importlib.util.find_spec("opentelemetry") is not None and (
    importlib.util.find_spec("opentelemetry.trace") is not None
)

#: The tracer of the run being started; the Rust side reads it once per run.
_run_var: ContextVar[RunTrace | None] = ContextVar("ironloop_run_trace", default=None)

_tracer: Any = None
#: ``opentelemetry.trace``, once imported.
_trace: Any = None
#: Whether every run must ask ``get_tracer_provider()``: the environment names a
#: provider (``OTEL_PYTHON_TRACER_PROVIDER``, read once, when the first run asks:
#: OpenTelemetry's environment is the process's start-up configuration), or the API
#: keeps no ``_TRACER_PROVIDER`` global to read. Otherwise a run reads that global:
#: ``get_tracer_provider()`` reads ``os.environ`` whenever no provider is set, and a
#: missing key raises and catches a ``KeyError`` (a microsecond every untraced run).
_ask_each_run = True


def tracer() -> Any:
    """ironloop's OpenTelemetry tracer, or ``None`` while no tracer provider is set
    (``opentelemetry-api`` alone, the common case of a library that pulled it in): a
    run then makes no span at all. A provider set by code (``set_tracer_provider``) is
    seen by the next run whenever it is set; one the environment names, from the first
    run on. The global provider can be set only once, so the tracer is kept once there
    is one."""
    global _tracer, _trace, _ask_each_run
    if _tracer is None:
        if _trace is None:  # imported once: every run asks
            from opentelemetry import trace as _trace

            _ask_each_run = "OTEL_PYTHON_TRACER_PROVIDER" in os.environ or not hasattr(
                _trace, "_TRACER_PROVIDER"
            )
        trace = _trace
        if not _ask_each_run and trace._TRACER_PROVIDER is None:
            return None
        provider = trace.get_tracer_provider()
        if isinstance(provider, (trace.ProxyTracerProvider, trace.NoOpTracerProvider)):
            return None
        _tracer = provider.get_tracer("ironloop", _ironloop.__version__)
    return _tracer


def start_run(name: str) -> RunTrace | None:
    """The trace of a run about to start, or ``None`` when nothing is traced."""
    return RunTrace(name) if tracer() is not None else None


def _fail(span: Any, exc: BaseException) -> None:
    from opentelemetry.trace import Status, StatusCode

    span.set_attribute("error.type", type(exc).__qualname__)
    span.record_exception(exc)
    span.set_status(Status(StatusCode.ERROR, str(exc)[:200]))


class RunTrace:
    """One run's span and its steps' spans. The step loop calls ``step_start`` and
    ``step_end`` inside the run's own context, one step at a time."""

    def __init__(self, name: str) -> None:
        from opentelemetry import context, trace

        self.span = tracer().start_span(
            f"invoke_agent {name}",
            attributes={"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": name},
        )
        #: Undoes what is set here, once (``detach``).
        self._attached = ExitStack()
        self._attached.callback(
            context.detach, context.attach(trace.set_span_in_context(self.span))
        )
        # A run that does not record hands the Rust side no tracer (and hides its
        # parent's from its own steps).
        self._attached.callback(
            _run_var.reset, _run_var.set(self if self.span.is_recording() else None)
        )
        self._step: tuple[Any, Any] | None = None

    def detach(self) -> None:
        """The run's context is captured: the caller's context is its own again."""
        self._attached.close()

    def end(self, exc: BaseException | None = None) -> None:
        self.detach()
        if exc is not None and not _is_pause(exc):
            _fail(self.span, exc)
        self.span.end()

    def step_start(self, step: int, nodes: list[str]) -> None:
        from opentelemetry import context, trace

        span = tracer().start_span(
            f"step {step}",
            attributes={"ironloop.step": step, "ironloop.step.nodes": list(nodes)},
        )
        self._step = (span, context.attach(trace.set_span_in_context(span)))

    def step_end(self, step: int, error_type: str | None) -> None:
        from opentelemetry import context
        from opentelemetry.trace import Status, StatusCode

        if self._step is None:
            return
        span, token = self._step
        self._step = None
        context.detach(token)
        if error_type is not None:
            span.set_attribute("error.type", error_type)
            span.set_status(Status(StatusCode.ERROR))
        span.end()

    @staticmethod
    def tool_start(name: str, call_id: str) -> Any:
        """Opens the ``execute_tool`` span of a call the executor took (any tool's:
        Python, MCP, OpenAPI, workspace); called in a copy of the calling task's
        context, so the span's parent is the step's span."""
        return tracer().start_span(
            f"execute_tool {name}", attributes=_tool_attributes(name, call_id)
        )

    @staticmethod
    def tool_end(
        span: Any, error_type: str | None, description: str | None, raised: BaseException | None
    ) -> None:
        """Closes a call's span: ``raised`` is the exception a Python tool raised,
        else ``error_type`` names the ``ironloop.errors`` class of the failure."""
        if raised is not None:
            if not _is_pause(raised):
                _fail(span, raised)
        elif error_type is not None:
            from opentelemetry.trace import Status, StatusCode

            span.set_attribute("error.type", error_type)
            span.set_status(Status(StatusCode.ERROR, description))
        span.end()

    @staticmethod
    def call_tool(
        span: Any, name: str, call_id: str, fn: Callable[..., Any], kwargs: dict[str, Any]
    ) -> Any:
        """Runs a sync tool's function with its call's span current (the executor's
        ``span``, or one of its own when the call came without one)."""
        with _current(span, name, call_id):
            return fn(**kwargs)

    @staticmethod
    async def call_tool_async(
        span: Any,
        name: str,
        call_id: str,
        fn: Callable[..., Awaitable[Any]],
        kwargs: dict[str, Any],
    ) -> Any:
        """Awaits an async tool with its call's span current."""
        with _current(span, name, call_id):
            return await fn(**kwargs)


def _current(span: Any, name: str, call_id: str) -> Any:
    """``span`` made current (the executor ends it), or a span of the tool's own."""
    if span is None:
        return tool_span(name, call_id)
    from opentelemetry.trace import use_span

    return use_span(span, record_exception=False, set_status_on_exception=False)


def _is_pause(exc: BaseException) -> bool:
    """An ``interrupt()`` pausing a nested run is control flow, not a failure."""
    from ironloop.errors import GraphInterrupt

    return isinstance(exc, GraphInterrupt)


def _tool_attributes(name: str, call_id: str) -> dict[str, Any]:
    return {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": name,
        "gen_ai.tool.call.id": call_id,
        "gen_ai.tool.type": "function",
    }


@contextmanager
def tool_span(name: str, call_id: str) -> Iterator[Any]:
    with tracer().start_as_current_span(
        f"execute_tool {name}",
        attributes=_tool_attributes(name, call_id),
        record_exception=False,
        set_status_on_exception=False,
    ) as span:
        try:
            yield span
        except BaseException as e:
            if not _is_pause(e):
                _fail(span, e)
            raise


def _chat_attributes(provider: str, model: str) -> dict[str, Any]:
    return {
        "gen_ai.operation.name": "chat",
        "gen_ai.provider.name": provider,
        "gen_ai.request.model": model,
    }


def _answered(span: Any, message: Any) -> Any:
    """Records an answer's model, id and token usage on its ``chat`` span (an ironloop
    or a langchain-core message); returns the answer."""
    usage = getattr(message, "usage_metadata", None) or {}
    if "input_tokens" in usage:
        span.set_attribute("gen_ai.usage.input_tokens", usage["input_tokens"])
    if "output_tokens" in usage:
        span.set_attribute("gen_ai.usage.output_tokens", usage["output_tokens"])
    meta = getattr(message, "response_metadata", None) or {}
    served = meta.get("model_name") or meta.get("model")
    if isinstance(served, str):
        span.set_attribute("gen_ai.response.model", served)
    if getattr(message, "id", None):
        span.set_attribute("gen_ai.response.id", str(message.id))
    return message


@contextmanager
def model_span(provider: str, model: str) -> Iterator[Callable[[Any], Any]]:
    """A ``chat`` span around one model call; the callable it yields records the
    answer's model and token usage and returns the answer."""
    with tracer().start_as_current_span(
        f"chat {model}",
        kind=_client_kind(),
        attributes=_chat_attributes(provider, model),
        record_exception=False,
        set_status_on_exception=False,
    ) as span:
        try:
            yield lambda message: _answered(span, message)
        except BaseException as e:
            _fail(span, e)
            raise


def start_model_stream(provider: str, model: str) -> Any:
    """The ``chat`` span of a streamed model call, under the span current where the
    stream starts; not made current, as a generator may be closed in another context.
    :func:`end_model_stream` ends it."""
    return tracer().start_span(
        f"chat {model}", kind=_client_kind(), attributes=_chat_attributes(provider, model)
    )


def end_model_stream(span: Any, last: Any = None, exc: BaseException | None = None) -> None:
    """Ends a streamed call's span with its last chunk (the one carrying the usage) or
    the exception that ended the stream."""
    if last is not None:
        _answered(span, last)
    if exc is not None and not isinstance(exc, GeneratorExit):
        _fail(span, exc)
    span.end()


def _client_kind() -> Any:
    from opentelemetry.trace import SpanKind

    return SpanKind.CLIENT


if ON:
    _ironloop._enable_tracing(_run_var)
