"""The built-in transformers: each makes one projection of the run stream."""

from __future__ import annotations

from typing import Any, ClassVar

from ironloop.stream._lifecycle import (
    LifecyclePayload,
    LifecycleTransformer,
    SubgraphStatus,
    SubgraphTransformer,
)
from ironloop.stream._messages import MessagesTransformer
from ironloop.stream._types import ProtocolEvent, StreamTransformer
from ironloop.stream.stream_channel import StreamChannel

__all__ = [
    "CheckpointsTransformer",
    "CustomTransformer",
    "DebugTransformer",
    "LifecyclePayload",
    "LifecycleTransformer",
    "MessagesTransformer",
    "SubgraphStatus",
    "SubgraphTransformer",
    "TasksTransformer",
    "UpdatesTransformer",
    "ValuesTransformer",
]


class _ModeTransformer(StreamTransformer):
    """The data of one stream mode's events at the transformer's own scope (a
    subgraph's are on its handle), as the projection of the same name."""

    _native = True
    mode: ClassVar[str]

    def __init_subclass__(cls, **kwargs: Any) -> None:
        # The one stream mode a mode's projection needs is that mode (unless the
        # class says otherwise).
        super().__init_subclass__(**kwargs)
        if "required_stream_modes" not in vars(cls):
            cls.required_stream_modes = (cls.mode,)

    def __init__(self, scope: tuple[str, ...] = ()) -> None:
        super().__init__(scope)
        self._log: StreamChannel[Any] = StreamChannel()
        self._scope_list = list(scope)

    def init(self) -> dict[str, Any]:
        return {self.mode: self._log}

    def _own(self, event: ProtocolEvent) -> bool:
        return event["method"] == self.mode and event["params"]["namespace"] == self._scope_list

    def process(self, event: ProtocolEvent) -> bool:
        if self._own(event):
            self._log.push(event["params"]["data"])
        return True


class ValuesTransformer(_ModeTransformer):
    """``run.values``: the state after each step of the run's own graph."""

    mode = "values"

    def __init__(self, scope: tuple[str, ...] = ()) -> None:
        super().__init__(scope)
        self._latest: Any = None
        self._interrupted = False
        self._interrupts: list[Any] = []

    @property
    def error(self) -> BaseException | None:
        """The error the run failed with, ``None`` while it has not."""
        return self._log._error

    def process(self, event: ProtocolEvent) -> bool:
        if self._own(event):
            params = event["params"]
            self._latest = params["data"]
            if interrupts := params.get("interrupts", ()):
                self._interrupted = True
                self._interrupts.extend(interrupts)
            self._log.push(params["data"])
        return True


class CustomTransformer(_ModeTransformer):
    """``run.custom``: what the run's nodes wrote with ``get_stream_writer()``."""

    mode = "custom"


class UpdatesTransformer(_ModeTransformer):
    """``run.updates``: ``{node: update}`` after each node of the run's graph."""

    mode = "updates"


class CheckpointsTransformer(_ModeTransformer):
    """``run.checkpoints``: each checkpoint saved, shaped as ``get_state()`` (none
    without a checkpointer)."""

    mode = "checkpoints"


class DebugTransformer(_ModeTransformer):
    """``run.debug``: the ``debug`` stream mode's events."""

    mode = "debug"


class TasksTransformer(_ModeTransformer):
    """``run.tasks``: each task's start and result payloads."""

    mode = "tasks"
