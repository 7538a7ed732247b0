"""``with`` and ``async with`` for objects that hold a session, a pool or a file."""

from __future__ import annotations

from typing_extensions import Self


class ClosingContext:
    """Closes the object when a ``with`` or ``async with`` block it opened ends: by
    ``close()``, or in ``async with`` by ``aclose()`` when the class has one (so the
    event loop is not blocked while it closes)."""

    __slots__ = ()

    def close(self) -> None:
        raise NotImplementedError(f"{type(self).__name__} must define close()")

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc: object) -> None:
        aclose = getattr(self, "aclose", None)
        if aclose is None:
            self.close()
        else:
            await aclose()
