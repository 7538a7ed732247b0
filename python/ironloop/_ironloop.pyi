"""The native module (Rust, PyO3). Public names are re-exported by ``ironloop``."""

import asyncio
import builtins
import os
from collections.abc import (
    AsyncIterator,
    Awaitable,
    Callable,
    Iterable,
    Iterator,
    Mapping,
    Sequence,
)
from typing import Any, Final, Literal, final, overload

from typing_extensions import Self, disjoint_base

from ironloop._saver_api import CheckpointTuple
from ironloop.messages import ToolCall

__all__ = [
    "AIMessage",
    "AIMessageChunk",
    "BaseMessage",
    "HumanMessage",
    "MemorySaver",
    "NativeTool",
    "PostgresSaver",
    "RemoveMessage",
    "SqliteSaver",
    "SystemMessage",
    "ToolContext",
    "ToolMessage",
    "_AsyncGraphStream",
    "_ChatModelCore",
    "_ChatStream",
    "_Drain",
    "_AgentModel",
    "_GraphCore",
    "_RunOptions",
    "_START",
    "_END",
    "_INTERRUPT",
    "_ROOT",
    "_DURABILITIES",
    "_STREAM_MODES",
    "_DEBUG_VIEWS",
    "_GraphStream",
    "_McpToolset",
    "_MCP_MAX_MESSAGE_BYTES",
    "_TaskScratch",
    "_ToolDefs",
    "_ToolNodeCore",
    "__version__",
    "_coerce_message",
    "_coerce_messages",
    "add_messages",
    "tools_condition",
    "_after_model",
    "_has_invalid_calls",
    "_AfterModelRoute",
    "_install_helpers",
    "_install_task_runtime",
    "_task_runtime",
    "_shape_key",
    "_json_schema_errors",
    "_reset_log_cache",
    "_enable_tracing",
    "_child_ns",
    "_checkpoint_decode",
    "_checkpoint_encode",
    "_checkpoint_encode_pieces",
    "_saver_thread_keys",
    "_saver_get",
    "_saver_list",
    "_saver_writes",
    "_saver_put",
    "_saver_delete_checkpoints",
    "_use_langchain_messages",
    "_choose_messages_on_first_use",
    "_openapi_defaults",
    "_openapi_toolset",
    "_openapi_toolset_from_url_async",
    "_timeout_seconds",
    "_Backoff",
    "_vectorcall_fallback",
    "_workspace_tools",
    "_BASH_ENV_ALLOWED",
    "_workspace_glob",
    "_workspace_grep",
    "_pii_detect",
    "_check_tool_name",
    "_StoreCore",
    "_OpenAIEmbeddings",
]

__version__: str

#: The names the core reserves: LangGraph's graph entry and exit, the key of a pause in
#: a result, the channel of a graph whose state is one bare value.
_START: Final = "__start__"
_END: Final = "__end__"
_INTERRUPT: Final = "__interrupt__"
_ROOT: Final = "__root__"
#: LangGraph's ``durability`` values.
_DURABILITIES: tuple[str, ...]
#: The stream modes the engine streams (LangGraph's, and ironloop's own ``tools``).
_STREAM_MODES: tuple[str, ...]
#: LangGraph's stream modes shown from ``debug`` events: ``tasks``, ``checkpoints``.
_DEBUG_VIEWS: tuple[str, ...]

@final
class _RunOptions:
    """A run's options (LangGraph's run keywords), checked when made: an unknown
    durability or stream mode raises ``ValueError``; the breakpoints' node names are
    checked against the graph when the run starts."""

    def __new__(
        cls,
        *,
        durability: str | None = None,
        stream_mode: str | Sequence[str] | None = None,
        subgraphs: bool = False,
        interrupt_before: str | Sequence[str] | None = None,
        interrupt_after: str | Sequence[str] | None = None,
        step_timeout: float | None = None,
    ) -> _RunOptions: ...

@disjoint_base
class BaseMessage:
    """Base class of all messages; wraps a shared immutable value."""

    content: str | list[Any]
    id: str
    name: str | None
    @property
    def additional_kwargs(self) -> dict[str, Any]: ...
    @additional_kwargs.setter
    def additional_kwargs(self, value: Mapping[str, Any] | None) -> None: ...
    @property
    def response_metadata(self) -> dict[str, Any]: ...
    @response_metadata.setter
    def response_metadata(self, value: Mapping[str, Any] | None) -> None: ...
    @property
    def type(self) -> str: ...
    @property
    def text(self) -> str: ...
    def model_dump(self) -> dict[str, Any]: ...
    def model_copy(
        self, update: dict[str, Any] | None = None, deep: bool = False
    ) -> BaseMessage: ...
    @property
    def _key(self) -> int: ...
    def _shared(self) -> BaseMessage: ...
    def pretty_repr(self) -> str: ...
    def pretty_print(self) -> None: ...
    def __eq__(self, value: object, /) -> bool: ...
    def __hash__(self) -> int: ...
    # Set by ``ironloop.messages``: pydantic models may hold messages.
    @classmethod
    def __get_pydantic_core_schema__(cls, source: Any, handler: Any) -> Any: ...
    @classmethod
    def __get_pydantic_json_schema__(cls, core_schema: Any, handler: Any) -> dict[str, Any]: ...

@final
class HumanMessage(BaseMessage):
    def __new__(
        cls,
        content: str | list[Any] | None = None,
        *,
        id: str | None = None,
        name: str | None = None,
        additional_kwargs: Mapping[str, Any] | None = None,
        response_metadata: Mapping[str, Any] | None = None,
        **kwargs: Any,
    ) -> HumanMessage: ...

@final
class SystemMessage(BaseMessage):
    def __new__(
        cls,
        content: str | list[Any] | None = None,
        *,
        id: str | None = None,
        name: str | None = None,
        additional_kwargs: Mapping[str, Any] | None = None,
        response_metadata: Mapping[str, Any] | None = None,
        **kwargs: Any,
    ) -> SystemMessage: ...

class AIMessage(BaseMessage):
    def __new__(
        cls,
        content: str | list[Any] | None = None,
        *,
        tool_calls: Iterable[dict[str, Any]] | None = None,
        invalid_tool_calls: Iterable[dict[str, Any]] | None = None,
        usage_metadata: dict[str, int] | None = None,
        id: str | None = None,
        name: str | None = None,
        additional_kwargs: Mapping[str, Any] | None = None,
        response_metadata: Mapping[str, Any] | None = None,
        **kwargs: Any,
    ) -> AIMessage: ...
    @property
    def tool_calls(self) -> list[ToolCall]: ...
    @property
    def invalid_tool_calls(self) -> list[dict[str, Any]]: ...
    @property
    def usage_metadata(self) -> dict[str, int] | None: ...

@final
class AIMessageChunk(AIMessage):
    """A streamed piece of an AI message; ``chunk + chunk`` joins pieces."""

    def __new__(
        cls,
        content: str | list[Any] | None = None,
        *,
        tool_call_chunks: Iterable[dict[str, Any]] | None = None,
        tool_calls: Iterable[dict[str, Any]] | None = None,
        invalid_tool_calls: Iterable[dict[str, Any]] | None = None,
        usage_metadata: dict[str, int] | None = None,
        id: str | None = None,
        name: str | None = None,
        additional_kwargs: Mapping[str, Any] | None = None,
        response_metadata: Mapping[str, Any] | None = None,
        **kwargs: Any,
    ) -> AIMessageChunk: ...
    @property
    def tool_call_chunks(self) -> list[dict[str, Any]]: ...
    def __add__(self, other: AIMessageChunk | list[AIMessageChunk], /) -> AIMessageChunk: ...
    def __radd__(self, other: AIMessageChunk, /) -> AIMessageChunk: ...
    def model_copy(
        self, update: dict[str, Any] | None = None, deep: bool = False
    ) -> AIMessageChunk: ...

@final
class ToolMessage(BaseMessage):
    def __new__(
        cls,
        content: str | list[Any] | None = None,
        *,
        tool_call_id: str,
        name: str | None = None,
        status: Literal["success", "error"] = "success",
        artifact: Any = None,
        id: str | None = None,
        additional_kwargs: Mapping[str, Any] | None = None,
        response_metadata: Mapping[str, Any] | None = None,
        **kwargs: Any,
    ) -> ToolMessage: ...
    @property
    def tool_call_id(self) -> str: ...
    @property
    def status(self) -> Literal["success", "error"]: ...
    @property
    def artifact(self) -> Any: ...

@final
class RemoveMessage(BaseMessage):
    def __new__(cls, *, id: str) -> RemoveMessage: ...

@final
class ToolContext:
    """What a tool parameter typed ``ToolContext`` receives (hidden from the schema)."""

    __ironloop_inject__: str
    @property
    def tool_call_id(self) -> str: ...
    @property
    def tool_name(self) -> str: ...
    @property
    def cancelled(self) -> bool: ...
    @property
    def state(self) -> Any: ...
    @property
    def store(self) -> Any: ...
    @property
    def label(self) -> str | None: ...
    @property
    def child_loop_id(self) -> str | None: ...
    def set_child_loop_id(self, run_id: str) -> None: ...
    def progress(self, payload: Any) -> None: ...
    def update(self, partial: Any) -> None: ...

@final
class _ToolNodeCore:
    def __new__(
        cls,
        tools: Iterable[Any],
        *,
        strategy: Any,
        max_concurrency: int | None = None,
        handle_tool_errors: Any,
        messages_key: str | None = None,
        deny: list[str] | None = None,
        allow_only: list[str] | None = None,
    ) -> _ToolNodeCore: ...
    def invoke(
        self,
        input: Any,
        *,
        store: Any = None,
        on_progress: Callable[[Any], None] | None = None,
        call: Any = None,
        handle_tool_errors: Any = None,
    ) -> Any: ...
    def ainvoke(
        self,
        input: Any,
        event_loop: asyncio.AbstractEventLoop,
        *,
        store: Any = None,
        on_progress: Callable[[Any], None] | None = None,
        call: Any = None,
        handle_tool_errors: Any = None,
    ) -> Awaitable[Any]: ...
    def tool_names(self) -> list[str]: ...
    def set_permissions(self, deny: list[str], allow_only: list[str] | None = None) -> None: ...
    def permissions(self) -> tuple[list[str], list[str] | None]: ...
    def runnable_names(self) -> list[str]: ...

def add_messages(left: Any = None, right: Any = None, *, format: str | None = None) -> Any: ...
def tools_condition(state: Any, messages_key: str = "messages") -> Literal["tools", "__end__"]: ...
def _after_model(
    messages: Sequence[Any],
) -> tuple[Literal["tools", "back", "done"], list[dict[str, Any]]]:
    """The agents' rule after the model (``src/prebuilt/after_model.rs``): the pending
    calls of the last AI message (``ToolCall`` dicts) to the tools, ``"back"`` when every
    call is answered, else ``"done"``."""

def _has_invalid_calls(messages: Sequence[Any]) -> bool:
    """Whether an AI message of ``messages`` has invalid tool calls (what
    ``create_agent``'s model node answers before calling the model)."""

@final
class _AfterModelRoute:
    """The mark (``__ironloop_router__``) on an agent's routing function after the
    model: ``compile`` runs the same rule in Rust over the graph's messages channel."""

    def __new__(cls, tools: str, per_call: bool, back: str, done: str) -> _AfterModelRoute: ...

def _coerce_message(obj: Any) -> Any: ...
def _coerce_messages(seq: Iterable[Any]) -> list[Any]: ...
def _child_ns(parent_ns: str, node: str, task_id: str) -> str: ...
def _checkpoint_encode(obj: Any) -> bytes: ...
def _checkpoint_encode_pieces(obj: Any) -> list[bytes]: ...
def _saver_thread_keys(saver: Any) -> list[str]: ...
def _saver_get(saver: Any, key: str, id: str | None = None) -> tuple[str, str] | None: ...
def _saver_list(
    saver: Any, key: str, limit: int | None = None, before: str | None = None
) -> list[str]: ...
def _saver_writes(saver: Any, key: str, id: str) -> str: ...
def _saver_put(saver: Any, key: str, records: list[str], writes: list[tuple[str, str]]) -> None: ...
def _saver_delete_checkpoints(saver: Any, key: str, ids: list[str]) -> None: ...
def _checkpoint_decode(
    text: bytes | str, allowlist: dict[str, type | None] | None = None
) -> Any: ...
def _use_langchain_messages(classes: dict[str, type] | None) -> None: ...
def _choose_messages_on_first_use(choose: Callable[[], None]) -> None: ...
def _json_schema_errors(schema: Any, value: Any) -> list[str]: ...
def _install_helpers(helpers: dict[str, Any]) -> None: ...
def _install_task_runtime(
    scope: Any, attempt: Any, progress: Any, new: Any, cls: Any, set_of: Any
) -> None: ...
def _task_runtime() -> Any: ...
def _shape_key(tag: str, flags: tuple[Any, ...], objects: list[Any]) -> tuple[Any, ...] | None:
    """An agent shape's cache key: ``(tag, flags, ids of objects)``, or None when one
    of ``objects`` is a dict or a list."""

def _reset_log_cache() -> None: ...
def _enable_tracing(var: Any) -> None: ...
def _vectorcall_fallback() -> bool: ...
def _timeout_seconds(value: float | None, name: str = "timeout") -> float | None:
    """``value`` checked as a time limit (a positive, finite number of seconds; not a
    bool) and returned as a float; None stays None. Raises
    ``ironloop.errors.InvalidArgumentError`` (a ``ValueError``) whose message starts
    with ``name``."""

@final
class _Backoff:
    """The core's retry schedule (``src/retry.rs``), shared by node ``RetryPolicy`` s,
    the retry middleware and model calls: retry ``n`` (0 for the first) waits
    ``initial * factor ** n`` seconds (``initial`` every time when ``factor`` is 0), at
    most ``max``, spread by ``jitter``: ``"none"``, ``"up_to_one_second"`` (plus
    ``unit`` seconds, LangGraph's), ``"quarter"`` (±25%, LangChain's) or ``"equal"``
    (half fixed, half random). Negative numbers raise
    ``ironloop.errors.InvalidArgumentError`` named by ``names`` (the caller's names of
    ``initial``, ``factor``, ``max`` and ``max_retries``); a ``max_retries`` that is
    not an int raises ``TypeError``."""

    def __new__(
        cls,
        initial: float,
        factor: float,
        max: float,
        max_retries: int,
        jitter: Literal["none", "up_to_one_second", "quarter", "equal"],
        names: tuple[str, str, str, str] | None = None,
    ) -> _Backoff: ...
    def wait(self, retry: int, unit: float) -> float | None:
        """Seconds to wait before retry ``retry``, or None when the retries are spent;
        ``unit`` is the caller's random draw in [0, 1) for the jitter."""
    @property
    def max_retries(self) -> int: ...

class _SaverAPI:
    """LangGraph's ``BaseCheckpointSaver`` API, put on every saver class by
    ``ironloop.checkpoint`` (``ironloop._saver_api``): LangGraph's shapes over
    ironloop's storage."""

    def get_tuple(self, config: dict[str, Any]) -> CheckpointTuple | None: ...
    def get(self, config: dict[str, Any]) -> dict[str, Any] | None: ...
    def list(
        self,
        config: dict[str, Any] | None,
        *,
        filter: dict[str, Any] | None = None,
        before: dict[str, Any] | None = None,
        limit: int | None = None,
    ) -> Iterator[CheckpointTuple]: ...
    def put(
        self,
        config: dict[str, Any],
        checkpoint: dict[str, Any],
        metadata: dict[str, Any],
        new_versions: dict[str, Any],
    ) -> dict[str, Any]: ...
    def put_writes(
        self,
        config: dict[str, Any],
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None: ...
    def copy_thread(self, source_thread_id: str, target_thread_id: str) -> None: ...
    def delete_for_runs(self, run_ids: Sequence[str]) -> None: ...
    def prune(self, thread_ids: Sequence[str], *, strategy: str = "keep_latest") -> None: ...
    def sweep(self, *, ttl: float, strategy: str = "delete") -> builtins.list[str]: ...
    async def aget_tuple(self, config: dict[str, Any]) -> CheckpointTuple | None: ...
    async def aget(self, config: dict[str, Any]) -> dict[str, Any] | None: ...
    def alist(
        self,
        config: dict[str, Any] | None,
        *,
        filter: dict[str, Any] | None = None,
        before: dict[str, Any] | None = None,
        limit: int | None = None,
    ) -> AsyncIterator[CheckpointTuple]: ...
    async def aput(
        self,
        config: dict[str, Any],
        checkpoint: dict[str, Any],
        metadata: dict[str, Any],
        new_versions: dict[str, Any],
    ) -> dict[str, Any]: ...
    async def aput_writes(
        self,
        config: dict[str, Any],
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None: ...
    async def adelete_thread(self, thread_id: str) -> None: ...
    async def acopy_thread(self, source_thread_id: str, target_thread_id: str) -> None: ...
    async def adelete_for_runs(self, run_ids: Sequence[str]) -> None: ...
    async def aprune(self, thread_ids: Sequence[str], *, strategy: str = "keep_latest") -> None: ...
    async def asweep(self, *, ttl: float, strategy: str = "delete") -> builtins.list[str]: ...
    # Every saver's own methods (``saver_methods!`` in src/bindings/graph/savers.rs).
    def delete_thread(self, thread_id: str) -> None:
        """Deletes the thread's checkpoints and writes, its subgraphs' included."""
    def list_stalled(
        self, *, stale_after: float = 60.0, limit: int | None = None
    ) -> builtins.list[str]:
        """The ids of the threads whose last run stopped mid-step (a crashed worker),
        idle longest first: the latest checkpoint has tasks to run, none of them waits
        on an unanswered ``interrupt()``, nothing was saved for ``stale_after`` seconds
        (a live run saves every step, so make it longer than your longest step), and no
        live claim holds the thread. A run whose node raised, or that paused at an
        ``interrupt_before`` / ``interrupt_after`` breakpoint, is listed too (its
        checkpoint looks the same). Resume one with ``invoke(None, config)``."""
    def claim_stalled(
        self,
        owner: str,
        *,
        stale_after: float = 60.0,
        lease: float | None = None,
        limit: int = 1,
    ) -> builtins.list[str]:
        """Claims up to ``limit`` stalled threads (as ``list_stalled`` finds them) for
        ``owner`` (a name for the worker) for ``lease`` seconds (default
        ``stale_after``) and returns their ids. Atomic, also between processes and
        machines: while a claim lives no other caller gets the thread. Resume each with
        ``invoke(None, config)``; once the lease is over the thread is stalled again
        only if the run saved nothing since (its claimer died too)."""

class _ClosingSaver(_SaverAPI):
    """The savers that hold connections or a file: closed by ``close()``, or as a
    context manager (``with`` / ``async with``)."""

    def close(self) -> None:
        """Lets the work under way finish, then releases the connections or the file;
        the saver can no longer be used. Idempotent."""
    def __enter__(self) -> Self: ...
    def __exit__(self, a: object, b: object, c: object) -> bool: ...
    def __aenter__(self) -> Awaitable[Self]: ...
    def __aexit__(self, a: object, b: object, c: object) -> Awaitable[bool]: ...

@final
class MemorySaver(_SaverAPI):
    """Keeps checkpoints in memory, as deltas (each step's writes).

    ``key`` (32 bytes, or a str: 32 bytes in UTF-8 or 64 hex digits; default: the
    environment variable ``IRONLOOP_CHECKPOINT_KEY`` when set) authenticates every
    record with HMAC-SHA256, and ``encrypt=True`` also encrypts it (AES-256-GCM). A
    keyed saver refuses records without a valid code (``CheckpointIntegrityError``);
    ``accept_unkeyed=True`` reads records written before the key was set. The same
    arguments work on ``SqliteSaver`` and ``PostgresSaver``.
    """

    def __new__(
        cls,
        *,
        key: bytes | str | None = None,
        encrypt: bool = False,
        accept_unkeyed: bool = False,
    ) -> MemorySaver: ...
    def approx_bytes(self) -> int: ...

@final
class SqliteSaver(_ClosingSaver):
    """Checkpoints in a SQLite file (WAL): durable across crashes, shareable between
    processes; one object serves ``invoke`` and ``ainvoke``. ``key``, ``encrypt`` and
    ``accept_unkeyed`` as for ``MemorySaver``: with a key, a record edited in the file
    behind the saver's back is refused (``CheckpointIntegrityError``)."""

    def __new__(
        cls,
        path: str | os.PathLike[str],
        *,
        key: bytes | str | None = None,
        encrypt: bool = False,
        accept_unkeyed: bool = False,
    ) -> SqliteSaver: ...
    @classmethod
    def from_conn_string(
        cls,
        conn: str,
        *,
        key: bytes | str | None = None,
        encrypt: bool = False,
        accept_unkeyed: bool = False,
    ) -> SqliteSaver: ...
    @property
    def path(self) -> str: ...

@final
class PostgresSaver(_ClosingSaver):
    """Checkpoints in PostgreSQL, shared by every process and machine that uses the
    database: any worker can continue any thread. One object serves ``invoke`` and
    ``ainvoke``; database calls run with the GIL released.

    ``conn_string`` is ``postgresql://user:password@host:port/db`` (``sslmode=`` and the
    other libpq keywords work as query parameters). The constructor connects and fails
    with ``CheckpointStorageError`` when the server cannot be reached. ``setup()``
    creates or migrates the tables (in ``schema`` when given); call it once per
    database, or on every start: it is safe from several workers at once. ``key``,
    ``encrypt`` and ``accept_unkeyed`` as for ``MemorySaver``.
    """

    def __new__(
        cls,
        conn_string: str,
        *,
        schema: str | None = None,
        pool_size: int = 8,
        connect_timeout: float | None = None,
        key: bytes | str | None = None,
        encrypt: bool = False,
        accept_unkeyed: bool = False,
    ) -> PostgresSaver: ...
    @classmethod
    def from_conn_string(
        cls,
        conn_string: str,
        *,
        schema: str | None = None,
        pool_size: int = 8,
        connect_timeout: float | None = None,
        key: bytes | str | None = None,
        encrypt: bool = False,
        accept_unkeyed: bool = False,
    ) -> PostgresSaver: ...
    @property
    def server(self) -> str:
        """``host:port/database`` (never the password)."""
    def setup(self) -> None: ...
    def asetup(self) -> Awaitable[None]: ...
    def aclose(self) -> Awaitable[None]: ...

@final
class _TaskScratch:
    def interrupt(self, value: Any) -> Any: ...
    def restart_interrupts(self) -> None: ...
    def write(self, payload: Any) -> None: ...
    @property
    def node(self) -> str: ...
    @property
    def task_id(self) -> str: ...
    @property
    def remaining_steps(self) -> int: ...
    def read_state(self) -> Any: ...
    def call_saved(self, id: str) -> tuple[bool, Any]: ...
    def record_call(self, id: str, name: str, value: Any, answers: int = 0) -> None: ...
    def mark_cached(self) -> None: ...
    def write_message(self, chunk: Any, metadata: dict[str, Any] | None = None) -> None: ...
    def write_tool(self, event: str, tool_call_id: str, tool_name: str, value: Any) -> None: ...
    def push(self, channel: str, value: Any) -> None: ...
    @property
    def streams_custom(self) -> bool: ...
    @property
    def streams_messages(self) -> bool: ...
    @property
    def streams_tools(self) -> bool: ...
    @property
    def streams_debug(self) -> bool: ...
    def debug_call_start(self, id: str, name: str, input: Any) -> None: ...
    def debug_call_result(
        self, id: str, name: str, value: Any, error: BaseException | None = None
    ) -> None: ...
    @property
    def nests(self) -> bool: ...
    def heartbeat(self) -> None: ...
    @property
    def nest(self) -> tuple[str, str] | None: ...
    @property
    def node_error(self) -> tuple[str, BaseException] | None: ...

@final
class _Drain:
    def __new__(cls) -> _Drain: ...
    def request(self, reason: str) -> None: ...
    @property
    def reason(self) -> str | None: ...

@final
class _GraphStream:
    def __iter__(self) -> _GraphStream: ...
    def __next__(self) -> Any: ...

@final
class _AsyncGraphStream:
    def next(self) -> Awaitable[Any]: ...
    def cancel(self) -> None: ...

@final
class _GraphCore:
    def __new__(
        cls,
        *,
        channels: list[dict[str, Any]],
        nodes: list[dict[str, Any]],
        edges: list[tuple[str, str]],
        joins: list[tuple[list[str], str]],
        branches: list[dict[str, Any]],
        checkpointer: Any = None,
        interrupt_before: list[str] = ...,
        interrupt_after: list[str] = ...,
        store: Any = None,
        input_keys: list[str] | None = None,
        output_keys: list[str] | None = None,
        serde_allowlist: dict[str, type | None] | None = None,
        direct_input: bool = False,
    ) -> _GraphCore: ...
    def invoke(
        self,
        input: Any,
        config: Any = None,
        *,
        options: _RunOptions | None = None,
        agent: _AgentModel | None = None,
    ) -> Any: ...
    def ainvoke(
        self,
        input: Any,
        config: Any,
        event_loop: asyncio.AbstractEventLoop,
        *,
        options: _RunOptions | None = None,
        agent: _AgentModel | None = None,
        stopped: asyncio.Event | None = None,
    ) -> Awaitable[Any]: ...
    def stream(
        self,
        input: Any,
        config: Any,
        options: _RunOptions,
        event_loop: asyncio.AbstractEventLoop | None = None,
        *,
        agent: _AgentModel | None = None,
    ) -> Any: ...
    def get_state(self, config: Any, saver: Any = None) -> Any: ...
    def get_state_history(
        self, config: Any, limit: int | None = None, before: Any = None, saver: Any = None
    ) -> list[Any]: ...
    def update_state(
        self, config: Any, values: Any, as_node: str | None = None
    ) -> dict[str, Any]: ...
    def bulk_update_state(
        self,
        config: Any,
        supersteps: list[list[tuple[Any, str | None]]],
        saver: Any = None,
    ) -> dict[str, Any]: ...
    def node_names(self) -> list[str]: ...

@final
class _ChatModelCore:
    def __new__(
        cls,
        provider: str,
        model: str,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        temperature: float | None = None,
        max_tokens: int | None = None,
        timeout: float | None = ...,  # 60.0
        max_retries: int = 2,
        parallel_tool_calls: bool | None = None,
        headers: list[tuple[str, str]] | None = None,
        thinking: Mapping[str, Any] | None = None,
        prompt_caching: bool | None = None,
    ) -> _ChatModelCore: ...
    @property
    def provider(self) -> str: ...
    @property
    def model(self) -> str: ...
    @property
    def url(self) -> str: ...
    @overload
    def invoke(
        self,
        messages: Any,
        tools: Any = None,
        tool_choice: Any = None,
        *,
        asynchronous: Literal[False] = False,
        parallel_tool_calls: bool | None = None,
        response_format: Any = None,
        temperature: float | None = None,
        max_tokens: int | None = None,
        stop: Any = None,
        extra: Any = None,
        **options: Any,  # any other keyword: a top-level request field
    ) -> AIMessage: ...
    @overload
    def invoke(
        self,
        messages: Any,
        tools: Any = None,
        tool_choice: Any = None,
        *,
        asynchronous: Literal[True],
        parallel_tool_calls: bool | None = None,
        response_format: Any = None,
        temperature: float | None = None,
        max_tokens: int | None = None,
        stop: Any = None,
        extra: Any = None,
        **options: Any,  # any other keyword: a top-level request field
    ) -> Awaitable[AIMessage]: ...
    def stream(
        self,
        messages: Any,
        tools: Any = None,
        tool_choice: Any = None,
        *,
        parallel_tool_calls: bool | None = None,
        response_format: Any = None,
        temperature: float | None = None,
        max_tokens: int | None = None,
        stop: Any = None,
        extra: Any = None,
        **options: Any,  # any other keyword: a top-level request field
    ) -> _ChatStream: ...

@final
class _ToolDefs:
    """An agent shape's tools as the model's requests carry them."""

    def __new__(cls, tools: Any = None) -> _ToolDefs: ...
    def __len__(self) -> int: ...

@final
class _AgentModel:
    """One agent's model step as the engine runs it without Python."""

    @staticmethod
    def of(
        model: Any,
        base: type,
        call_path: tuple[str, ...],
        tools: _ToolDefs,
        system: Any = None,
        name: str | None = None,
    ) -> _AgentModel | None:
        """``model``'s step, or None when ``model`` is not a ``base`` or its class or
        itself has its own version of one of ``call_path``."""

@final
class _ChatStream:
    def __iter__(self) -> _ChatStream: ...
    def __next__(self) -> AIMessageChunk: ...
    def anext(self) -> Awaitable[AIMessageChunk | None]: ...
    @property
    def final_message(self) -> AIMessage | None: ...
    def collect(self) -> AIMessage: ...

@final
class NativeTool:
    """A tool implemented in Rust (e.g. from ``ironloop.tools.workspace``). It goes
    into ``ToolNode`` / ``create_react_agent`` like any tool; called directly it runs
    with the GIL released and raises ``ironloop.errors.ToolError`` on failure."""

    @property
    def name(self) -> str: ...
    @property
    def description(self) -> str: ...
    @property
    def parameters(self) -> dict[str, Any]: ...
    @property
    def args_schema(self) -> dict[str, Any]: ...
    @property
    def return_direct(self) -> bool: ...
    @property
    def timeout(self) -> float | None: ...
    def to_openai(self) -> dict[str, Any]: ...
    def to_anthropic(self) -> dict[str, Any]: ...
    def to_langchain(self) -> Any: ...
    def invoke(self, input: dict[str, Any] | None = None, config: Any = None) -> Any: ...
    def ainvoke(
        self, input: dict[str, Any] | None = None, config: Any = None
    ) -> Awaitable[Any]: ...
    def __call__(self, *args: Any, **kwargs: Any) -> Any: ...

def _check_tool_name(name: str) -> None: ...
def _workspace_tools(
    root: str | os.PathLike[str],
    *,
    allow_bash: bool,
    bash_timeout: float,
    max_bash_timeout: float,
    max_output_bytes: int,
    timeout: float | None = None,
    env: list[tuple[str, str]] = ...,
) -> list[NativeTool]: ...

_BASH_ENV_ALLOWED: list[str]

def _pii_detect(kind: str, text: str) -> list[tuple[str, int, int]]: ...
def _workspace_glob(
    root: str | os.PathLike[str], start: str, pattern: str
) -> list[tuple[str, float]]: ...
def _workspace_grep(
    root: str | os.PathLike[str],
    start: str,
    pattern: str,
    include: str | None,
    max_file_bytes: int,
) -> list[tuple[str, int, str]]: ...

#: The default ``max_message_bytes`` of an MCP session (``ironloop.mcp.MAX_MESSAGE_BYTES``).
_MCP_MAX_MESSAGE_BYTES: int

@final
class _McpToolset:
    """An open MCP session and its tools (see ``ironloop.mcp.McpToolset``)."""

    @overload
    @staticmethod
    def stdio(
        command: str,
        args: list[str],
        env: list[tuple[str, str]],
        cwd: str | None,
        prefix: str | None,
        timeout: float | None,
        max_message_bytes: int,
        connect_timeout: float | None = None,
        *,
        asynchronous: Literal[False] = False,
    ) -> _McpToolset: ...
    @overload
    @staticmethod
    def stdio(
        command: str,
        args: list[str],
        env: list[tuple[str, str]],
        cwd: str | None,
        prefix: str | None,
        timeout: float | None,
        max_message_bytes: int,
        connect_timeout: float | None = None,
        *,
        asynchronous: Literal[True],
    ) -> Awaitable[_McpToolset]: ...
    @overload
    @staticmethod
    def http(
        url: str,
        headers: list[tuple[str, str]],
        prefix: str | None,
        timeout: float | None,
        max_message_bytes: int,
        connect_timeout: float | None = None,
        *,
        asynchronous: Literal[False] = False,
    ) -> _McpToolset: ...
    @overload
    @staticmethod
    def http(
        url: str,
        headers: list[tuple[str, str]],
        prefix: str | None,
        timeout: float | None,
        max_message_bytes: int,
        connect_timeout: float | None = None,
        *,
        asynchronous: Literal[True],
    ) -> Awaitable[_McpToolset]: ...
    @property
    def tools(self) -> list[NativeTool]: ...
    @property
    def server(self) -> str: ...
    @property
    def pid(self) -> int | None: ...
    def list_resources(self, *, asynchronous: bool = False) -> Any: ...
    def read_resource(self, uri: str, *, asynchronous: bool = False) -> Any: ...
    def list_prompts(self, *, asynchronous: bool = False) -> Any: ...
    def get_prompt(
        self, name: str, arguments: Mapping[str, str] | None = None, *, asynchronous: bool = False
    ) -> Any: ...
    @property
    def closed(self) -> bool: ...
    def close(self) -> None: ...
    def aclose(self) -> Awaitable[None]: ...

def _openapi_defaults() -> tuple[float, int, int, int]:
    """``(timeout, max_output_bytes, max_spec_bytes, max_spec_nodes)``: the core's defaults."""

def _openapi_toolset(
    kind: Literal["str", "file", "url"], source: str, options: dict[str, Any]
) -> tuple[list[NativeTool], str | None, str, str, list[str]]: ...
def _openapi_toolset_from_url_async(
    url: str, options: dict[str, Any]
) -> Awaitable[tuple[list[NativeTool], str | None, str, str, list[str]]]: ...

@final
class _StoreCore:
    @staticmethod
    def memory(dims: int | None = None) -> _StoreCore: ...
    @staticmethod
    def sqlite(path: str, dims: int | None = None) -> _StoreCore: ...
    @staticmethod
    def postgres(
        dsn: str,
        dims: int | None = None,
        pool_size: int = 4,
        distance: str = "cosine",
        vector_type: str | None = None,
        ann_kind: str | None = None,
        ann_params: list[tuple[str, int]] = ...,
    ) -> _StoreCore: ...
    @staticmethod
    def sqlite_migrations() -> list[str]: ...
    @staticmethod
    def postgres_migrations() -> list[str]: ...
    def batch(self, ops: Any) -> list[Any]: ...
    def abatch(self, ops: Any) -> Awaitable[list[Any]]: ...
    def setup(self) -> None: ...
    def asetup(self) -> Awaitable[None]: ...
    def sweep(self) -> int: ...
    def asweep(self) -> Awaitable[int]: ...
    def start_sweeper(self, seconds: float) -> None: ...
    def stop_sweeper(self) -> bool: ...
    def sweeper_running(self) -> bool: ...
    def close(self) -> None: ...

@final
class _OpenAIEmbeddings:
    def __new__(
        cls,
        model: str,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        dimensions: int | None = None,
        batch_size: int = 512,
        timeout: float = 60.0,
        max_retries: int = 2,
    ) -> _OpenAIEmbeddings: ...
    def embed(self, texts: list[str]) -> list[list[float]]: ...
    def aembed(self, texts: list[str]) -> Awaitable[list[list[float]]]: ...
