"""LangGraph's deprecation warnings, under the same names (``langgraph.warnings``).

ironloop keeps the deprecated spellings LangGraph 1.2 still accepts (``add_node(retry=)``,
``StateGraph(input=, output=, config_schema=)``, ``GraphOutput[key]``, …) and warns about
them with the class LangGraph uses, so code that filters or asserts LangGraph's
warnings ports unchanged::

    >>> import warnings
    >>> from ironloop.warnings import LangGraphDeprecatedSinceV10
    >>> str(LangGraphDeprecatedSinceV10("`x` is deprecated."))
    '`x` is deprecated. Deprecated in LangGraph V1.0 to be removed in V2.0.'
"""

from __future__ import annotations

__all__ = [
    "LangGraphDeprecatedSinceV05",
    "LangGraphDeprecatedSinceV10",
    "LangGraphDeprecatedSinceV11",
    "LangGraphDeprecationWarning",
]


class LangGraphDeprecationWarning(DeprecationWarning):
    """A deprecated LangGraph spelling: ``since`` is the version (major, minor) that
    deprecated it, ``expected_removal`` the one that drops it (by default the next
    major)."""

    message: str
    since: tuple[int, int]
    expected_removal: tuple[int, int]

    def __init__(
        self,
        message: str,
        *args: object,
        since: tuple[int, int],
        expected_removal: tuple[int, int] | None = None,
    ) -> None:
        super().__init__(message, *args)
        self.message = message.rstrip(".")
        self.since = since
        self.expected_removal = expected_removal or (since[0] + 1, 0)

    def __str__(self) -> str:
        (major, minor), (until_major, until_minor) = self.since, self.expected_removal
        return (
            f"{self.message}. Deprecated in LangGraph V{major}.{minor} "
            f"to be removed in V{until_major}.{until_minor}."
        )


class LangGraphDeprecatedSinceV05(LangGraphDeprecationWarning):
    """Deprecated since LangGraph 0.5, to be removed in 2.0."""

    def __init__(self, message: str, *args: object) -> None:
        super().__init__(message, *args, since=(0, 5), expected_removal=(2, 0))


class LangGraphDeprecatedSinceV10(LangGraphDeprecationWarning):
    """Deprecated since LangGraph 1.0, to be removed in 2.0."""

    def __init__(self, message: str, *args: object) -> None:
        super().__init__(message, *args, since=(1, 0), expected_removal=(2, 0))


class LangGraphDeprecatedSinceV11(LangGraphDeprecationWarning):
    """Deprecated since LangGraph 1.1, to be removed in 3.0."""

    def __init__(self, message: str, *args: object) -> None:
        super().__init__(message, *args, since=(1, 1), expected_removal=(3, 0))
