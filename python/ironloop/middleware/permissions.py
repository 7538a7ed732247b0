"""``ToolPermissions``: which tools an agent may run (agentsm's blacklist, yoagent's
permission rules), enforced by the Rust tools node."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ironloop.middleware.types import AgentMiddleware

__all__ = ["ToolPermissions"]


class ToolPermissions(AgentMiddleware):
    """Denies tools to an agent: a denied tool is not offered to the model, and a call
    to it (a model may still name it) gets an error ``ToolMessage`` saying it is not
    allowed — the tool never runs. ``allow_only`` names the only tools that may run;
    ``deny`` wins over it.

    ``create_agent`` hands the lists to its ``ToolNode`` (``ToolNode(deny=,
    allow_only=)``), where the Rust executor checks every call; several
    ``ToolPermissions`` add up (denies joined, allow lists intersected). Change them on
    a running agent through the node (``tool_node.deny = [...]``): the next step sees
    the new lists.

    Example:
        >>> ToolPermissions(deny=["bash"]).deny
        ['bash']
    """

    def __init__(
        self, *, deny: Sequence[str] = (), allow_only: Sequence[str] | None = None
    ) -> None:
        for what, names in (("deny", deny), ("allow_only", allow_only or ())):
            if isinstance(names, str) or not all(isinstance(n, str) for n in names):
                raise TypeError(f"ToolPermissions({what}=) takes a list of tool names")
        self.deny = list(deny)
        self.allow_only = None if allow_only is None else list(allow_only)

    @property
    def name(self) -> str:
        return f"ToolPermissions[{id(self):x}]"

    def apply(self, node: Any) -> None:
        """Adds these lists to ``node``'s (a ``ToolNode``)."""
        unknown = sorted(
            n for n in [*self.deny, *(self.allow_only or ())] if n not in node.tools_by_name
        )
        if unknown:
            raise ValueError(
                f"ToolPermissions names tools the agent does not have: {unknown}; its "
                f"tools are {sorted(node.tools_by_name)}"
            )
        deny = sorted({*node.deny, *self.deny})
        allow = node.allow_only
        if self.allow_only is not None:
            allow = sorted(
                set(self.allow_only) & set(allow) if allow is not None else self.allow_only
            )
        node._core.set_permissions(deny, allow)
