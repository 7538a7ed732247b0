"""The HTTP protocol ``ironloop serve`` runs under uvicorn: uvicorn's own (httptools),
with a response's writes sent together.

uvicorn writes a response's status line and headers when the app starts the response
and its body when the app sends it: two sends on the socket for every JSON answer,
though Starlette sends both in the same turn of the loop. Here a request's writes are
gathered and sent once that turn ends (``call_soon``): one send a response, and
a streamed (SSE) response's parts each still go out in the turn they are written."""

from __future__ import annotations

import asyncio
from typing import Any

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol


class _Gathered:
    """The transport a request's response is written to: writes made in one turn of
    the loop go to ``transport`` as one, at the end of that turn; ``close`` sends
    what is gathered first. Everything else is ``transport``'s own."""

    __slots__ = ("_loop", "_parts", "_transport")

    def __init__(self, transport: asyncio.Transport, loop: asyncio.AbstractEventLoop) -> None:
        self._transport = transport
        self._loop = loop
        self._parts: list[bytes] = []

    def write(self, data: bytes) -> None:
        if not self._parts:
            self._loop.call_soon(self._send)
        self._parts.append(data)

    def send_now(self) -> None:
        """Sends what is gathered at once (before the connection is closed)."""
        self._send()

    def _send(self) -> None:
        parts, self._parts = self._parts, []
        # A connection closed meanwhile (the client left, the server stops) takes
        # nothing more: what was gathered has nobody to go to.
        if parts and not self._transport.is_closing():
            self._transport.write(parts[0] if len(parts) == 1 else b"".join(parts))

    def close(self) -> None:
        self.send_now()
        self._transport.close()

    def is_closing(self) -> bool:
        return self._transport.is_closing()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._transport, name)


class ServeProtocol(HttpToolsProtocol):
    """uvicorn's httptools protocol, each request's response written through
    ``_Gathered`` (one send a response instead of two)."""

    def on_headers_complete(self) -> None:
        super().on_headers_complete()
        cycle = self.cycle
        # A new request's cycle (not a WebSocket upgrade, which makes none): its task
        # has not run yet, so every write it makes goes through the gathering one.
        if cycle is not None and cycle.transport is self.transport:
            cycle.transport = _Gathered(self.transport, self.loop)  # type: ignore[assignment]

    def shutdown(self) -> None:
        # The server stops: a response finished in this turn goes out before uvicorn
        # closes an idle connection.
        cycle = self.cycle
        if cycle is not None and isinstance(cycle.transport, _Gathered):
            cycle.transport.send_now()
        super().shutdown()
