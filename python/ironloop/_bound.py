"""``graph.with_config(config)``: a graph whose calls all start from ``config``, as
LangChain's ``Runnable.with_config`` (which LangGraph's compiled graphs have). Not
public API: the object is reached through ``with_config``."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator, Sequence
from typing import Any


def merge_configs(base: dict[str, Any], config: Any) -> dict[str, Any]:
    """``config`` over ``base``: its keys win, ``configurable`` and ``metadata`` are
    merged key by key, ``tags`` and ``callbacks`` lists are joined."""
    merged = dict(base)
    for key, value in (config or {}).items():
        have = merged.get(key)
        if isinstance(value, dict) and isinstance(have, dict):
            merged[key] = {**have, **value}
        elif key in ("tags", "callbacks") and isinstance(value, list) and isinstance(have, list):
            merged[key] = [*have, *value]
        else:
            merged[key] = value
    return merged


class BoundConfig:
    """``inner`` with ``config`` under every call's config."""

    def __init__(self, inner: Any, config: dict[str, Any]) -> None:
        self.bound = inner
        self.config = config

    def _c(self, config: Any) -> dict[str, Any]:
        return merge_configs(self.config, config)

    def with_config(self, config: Any = None, **kwargs: Any) -> BoundConfig:
        return BoundConfig(self.bound, merge_configs(self.config, {**(config or {}), **kwargs}))

    def invoke(self, input: Any, config: Any = None, **kwargs: Any) -> Any:
        return self.bound.invoke(input, self._c(config), **kwargs)

    async def ainvoke(self, input: Any, config: Any = None, **kwargs: Any) -> Any:
        return await self.bound.ainvoke(input, self._c(config), **kwargs)

    def stream(self, input: Any, config: Any = None, **kwargs: Any) -> Iterator[Any]:
        return self.bound.stream(input, self._c(config), **kwargs)  # type: ignore[no-any-return]

    def astream(self, input: Any, config: Any = None, **kwargs: Any) -> AsyncIterator[Any]:
        return self.bound.astream(input, self._c(config), **kwargs)  # type: ignore[no-any-return]

    def stream_events(self, input: Any, config: Any = None, **kwargs: Any) -> Any:
        return self.bound.stream_events(input, self._c(config), **kwargs)

    def astream_events(self, input: Any, config: Any = None, **kwargs: Any) -> Any:
        return self.bound.astream_events(input, self._c(config), **kwargs)

    def batch(self, inputs: Sequence[Any], config: Any = None, **kwargs: Any) -> list[Any]:
        return self.bound.batch(inputs, self._c(config), **kwargs)  # type: ignore[no-any-return]

    async def abatch(self, inputs: Sequence[Any], config: Any = None, **kwargs: Any) -> list[Any]:
        return await self.bound.abatch(inputs, self._c(config), **kwargs)  # type: ignore[no-any-return]

    def get_state(self, config: Any = None, **kwargs: Any) -> Any:
        return self.bound.get_state(self._c(config), **kwargs)

    async def aget_state(self, config: Any = None, **kwargs: Any) -> Any:
        return await self.bound.aget_state(self._c(config), **kwargs)

    def get_state_history(self, config: Any = None, **kwargs: Any) -> Iterator[Any]:
        return self.bound.get_state_history(self._c(config), **kwargs)  # type: ignore[no-any-return]

    def aget_state_history(self, config: Any = None, **kwargs: Any) -> AsyncIterator[Any]:
        return self.bound.aget_state_history(self._c(config), **kwargs)  # type: ignore[no-any-return]

    def update_state(self, config: Any, values: Any, as_node: str | None = None) -> Any:
        return self.bound.update_state(self._c(config), values, as_node=as_node)

    async def aupdate_state(self, config: Any, values: Any, as_node: str | None = None) -> Any:
        return await self.bound.aupdate_state(self._c(config), values, as_node=as_node)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.bound, name)

    def __repr__(self) -> str:
        return f"{self.bound!r}.with_config({self.config!r})"
