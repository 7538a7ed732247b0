"""``stream_events`` / ``astream_events`` as compiled graphs and entrypoints have
them: LangGraph 1.2's v3 run streams, and LangChain's v1 / v2 events."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

__all__ = ["StreamEvents"]


class StreamEvents:
    """The two methods, for a class with ``stream`` / ``astream`` (v2 parts with
    ``subgraphs=True``); ``_events_name`` names the run in v1 / v2 events."""

    name: str

    def _events_name(self) -> str:
        return self.name

    def astream_events(
        self,
        input: Any,
        config: dict[str, Any] | None = None,
        *,
        version: str = "v2",
        context: Any = None,
        durability: str | None = None,
        transformers: Sequence[Any] | None = None,
        **kwargs: Any,
    ) -> Any:
        """LangChain's ``astream_events`` (``version="v2"``), as chat UIs consume it:
        the run's ``on_chain_start``, an ``on_chain_stream`` per update, each task's
        ``on_chain_start`` / ``on_chain_end`` (subgraphs' too), the models' tokens as
        ``on_chat_model_stream``, and the run's ``on_chain_end`` with its output.
        ``version="v1"`` (deprecated by LangChain) gives them as LangChain's v1 does:
        empty ``parent_ids``, and the run's last update as its output. Other keywords
        (``interrupt_before``, ``control``...) go to the run.
        ``version="v3"``: LangGraph 1.2's protocol, an awaitable of an
        ``ironloop.stream.AsyncGraphRunStream`` (see ``stream_events``)."""
        if version == "v3":
            from ironloop.stream._entry import astream_v3

            kwargs.update(context=context, durability=durability)
            return astream_v3(self.astream, self, input, config, transformers, kwargs)  # type: ignore[attr-defined]
        if version == "v2" and transformers is None:
            run = {"context": context, "durability": durability, **kwargs}
            events = self._own_v2_events(input, config, run)
            if events is not None:
                return events
        from ironloop._compiled import stream_events

        name = self._events_name()
        return stream_events(self, name, input, config, version, context, durability, **kwargs)

    def _own_v2_events(self, input: Any, config: Any, run: dict[str, Any]) -> Any:
        """v2 events made some other way than from the run's stream (an entrypoint's,
        from its callback runs), or ``None``: from the stream."""
        return None

    def stream_events(
        self,
        input: Any,
        config: dict[str, Any] | None = None,
        *,
        version: str = "v2",
        transformers: Sequence[Any] | None = None,
        **kwargs: Any,
    ) -> Any:
        """LangGraph 1.2's stream-events protocol (``version="v3"``): a
        ``GraphRunStream`` the caller drives by iterating its projections
        (``run.values``, ``run.messages``, ``run.lifecycle``, ``run.subgraphs``, those
        of ``transformers=`` and of ``compile(transformers=)``), its raw events, or by
        reading ``run.output``. Other keywords go to ``stream`` (``context``,
        ``durability``, ``interrupt_before``...); ``stream_mode`` and ``subgraphs``
        are v3's own."""
        from ironloop.stream._entry import check_version, stream_v3

        check_version(version)
        return stream_v3(self.stream, self, input, config, transformers, kwargs)  # type: ignore[attr-defined]
