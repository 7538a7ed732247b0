"""The stream half of ``PIIMiddleware`` (LangChain 1.5's ``_PIIStreamTransformer``):
its hooks rewrite the messages in the agent's state, but a consumer of
``stream_events(version="v3")`` sees text while it is produced — model deltas, tool
arguments and results, state snapshots — before any hook runs. This transformer
applies the same rule to every one of those surfaces as the events pass, ahead of the
built-in projections (``run.messages``, ``run.tool_calls``, ``run.values``), so none of
them ever holds the raw value.

Streamed text is released with a delay: per content block (and per streamed tool
output) the last ``lookback`` characters are held back, so that a value split across
two deltas is whole when the detector sees it. The held tail is released by the
block's ``content-block-finish`` event, whose full text is checked again. Under the
``block`` strategy a match raises ``PIIDetectionError`` from the transformer: the run
stops and every projection fails with it, nothing of the value having been shown.

Values are rewritten on copies: a message in a snapshot or a tool event is replaced by
a redacted copy, so the state the hooks act on keeps its original."""

from __future__ import annotations

from typing import Any, ClassVar

from ironloop.middleware._redaction import ResolvedRedactionRule, apply_strategy
from ironloop.stream._types import ProtocolEvent, StreamTransformer

__all__ = ["DEFAULT_LOOKBACK", "PIIStreamTransformer"]

#: Characters held back per streamed block: longer than any built-in detector's match
#: (a URL or email address in practice, a card number is 19 at most), short enough
#: that text still streams.
DEFAULT_LOOKBACK = 128

#: The content blocks whose ``args`` are a call's arguments (a dict, or the raw JSON
#: string of an invalid call).
_CALL_BLOCKS = frozenset({"tool_call", "server_tool_call", "invalid_tool_call"})
#: A ``block-delta``'s field types carrying a call's arguments so far (whole, each
#: delta replacing the previous).
_CALL_CHUNKS = frozenset({"tool_call_chunk", "server_tool_call_chunk"})
#: The ``content-block-delta`` types whose text appends, with the field holding it.
_APPENDING = {"text-delta": "text", "reasoning-delta": "reasoning", "tool-call-delta": "args"}


class PIIStreamTransformer(StreamTransformer):
    """Redacts one rule's values in the ``messages``, ``tools`` and ``values`` events
    of a run, in place, before the built-in transformers see them."""

    before_builtins: ClassVar[bool] = True
    required_stream_modes: ClassVar[tuple[str, ...]] = ("messages", "tools", "values")

    def __init__(
        self,
        scope: tuple[str, ...] = (),
        *,
        rule: ResolvedRedactionRule,
        lookback: int = DEFAULT_LOOKBACK,
    ) -> None:
        super().__init__(scope)
        self._rule = rule
        self._lookback = lookback
        #: The held tail of each streamed block, by (model run id, block index).
        self._buffers: dict[tuple[str, int], str] = {}
        #: The held tail of each streamed tool output, by tool call id (apart from the
        #: blocks: a model run ending must not drop a tool's).
        self._tool_buffers: dict[str, str] = {}
        #: The messages of the last ``values`` snapshot, by message id, each with what
        #: it became: the next snapshot repeats the conversation, and only a message
        #: new or changed since is checked again (see :meth:`_snapshot`).
        self._snapshot_messages: dict[str, tuple[Any, Any]] = {}

    def init(self) -> dict[str, Any]:
        return {}  # it rewrites events; it projects nothing

    def process(self, event: ProtocolEvent) -> bool:
        method, params = event["method"], event["params"]
        if method == "messages":
            self._messages(params)
        elif method == "tools" and isinstance(params.get("data"), dict):
            self._tools(params["data"])
        elif method == "values" and params.get("data") is not None:
            params["data"] = self._snapshot(params["data"])
        return True

    def finalize(self) -> None:
        self._buffers.clear()
        self._tool_buffers.clear()
        self._snapshot_messages.clear()

    def fail(self, err: BaseException) -> None:
        self.finalize()

    # --- values ------------------------------------------------------------------------

    def _scrub(self, text: str) -> str:
        """``text`` with the rule applied (raises under ``block`` when it matches)."""
        if not text:
            return text
        matches = self._rule.detector(text)
        return apply_strategy(text, matches, self._rule.strategy) if matches else text

    def redact(self, value: Any, memo: _Memo | None = None) -> Any:
        """``value`` with every string in it redacted: dicts, lists and tuples walked,
        a message replaced by a redacted copy; the value itself when nothing matched.
        ``memo``: what the messages of the last snapshot became (see
        :meth:`_snapshot`)."""
        if isinstance(value, str):
            return self._scrub(value)
        if isinstance(value, dict):
            out = {k: self.redact(v, memo) for k, v in value.items()}
            return value if all(out[k] is value[k] for k in value) else out
        if isinstance(value, (list, tuple)):
            items = [self.redact(v, memo) for v in value]
            if all(a is b for a, b in zip(items, value, strict=True)):
                return value
            return items if isinstance(value, list) else tuple(items)
        if _is_message(value):
            return self._message(value) if memo is None else memo.message(self, value)
        return value

    def _snapshot(self, data: Any) -> Any:
        """A ``values`` event's state, redacted. Each snapshot holds the whole
        conversation again: a message the last one held, unchanged (the same object,
        or an equal one under the same id), becomes what it became then, unchecked, so
        a run of n model turns checks each message once, not n times."""
        memo = _Memo(self._snapshot_messages)
        out = self.redact(data, memo)
        self._snapshot_messages = memo.now
        return out

    def _message(self, msg: Any) -> Any:
        """A copy of ``msg`` with its content and its calls' arguments redacted (the
        surfaces the hooks rewrite in the state); ``msg`` when nothing matched."""
        update: dict[str, Any] = {}
        content = self.redact(msg.content)
        if content is not msg.content:
            update["content"] = content
        for field in ("tool_calls", "invalid_tool_calls"):
            calls = getattr(msg, field, None)
            if not calls:
                continue
            redacted = [
                {**c, "args": args}
                if isinstance(c, dict) and (args := self.redact(c.get("args"))) is not c.get("args")
                else c
                for c in calls
            ]
            if any(a is not b for a, b in zip(redacted, calls, strict=True)):
                update[field] = redacted
        return msg.model_copy(update=update) if update else msg

    # --- messages ----------------------------------------------------------------------

    def _messages(self, params: Any) -> None:
        """A ``messages`` event's ``params``: its payload redacted in place."""
        data = params.get("data")
        if not isinstance(data, tuple) or len(data) != 2:
            return
        payload, metadata = data
        if _is_message(payload):
            redacted = self._message(payload)
            if redacted is not payload:
                params["data"] = (redacted, metadata)
            return
        if not isinstance(payload, dict):
            return
        run = str((metadata or {}).get("run_id") or "")
        kind = payload.get("event")
        if kind == "content-block-delta":
            self._delta(payload, run)
        elif kind == "content-block-finish":
            self._finish_block(payload, run)
        elif kind in ("message-finish", "error"):
            for key in [k for k in self._buffers if k[0] == run]:
                del self._buffers[key]

    def _slide(self, held: dict[Any, str], key: Any, piece: str) -> str:
        """What may be shown of ``held[key] + piece``: the whole checked, all but its
        last ``lookback`` characters released, those kept for the next piece."""
        combined = self._scrub(held.get(key, "") + piece)
        cut = max(0, len(combined) - self._lookback)
        held[key] = combined[cut:]
        return combined[:cut]

    def _delta(self, payload: dict[str, Any], run: str) -> None:
        delta, index = payload.get("delta"), payload.get("index")
        if not isinstance(delta, dict) or not isinstance(index, int):
            return
        field = _APPENDING.get(delta.get("type", ""))
        if field is not None:
            piece = delta.get(field)
            if isinstance(piece, str) and piece:
                delta[field] = self._slide(self._buffers, (run, index), piece)
            return
        fields = delta.get("fields")
        if delta.get("type") == "block-delta" and isinstance(fields, dict):
            args = fields.get("args")
            if fields.get("type") in _CALL_CHUNKS and isinstance(args, str) and args:
                # The arguments so far, replacing the last delta's: checked whole, the
                # tail held (later appending slices continue from it).
                self._buffers.pop((run, index), None)
                fields["args"] = self._slide(self._buffers, (run, index), args)

    def _finish_block(self, payload: dict[str, Any], run: str) -> None:
        index = payload.get("index")
        if isinstance(index, int):  # the finished block shows its whole text
            self._buffers.pop((run, index), None)
        content = payload.get("content")
        if not isinstance(content, dict):
            return
        kind = content.get("type")
        if kind in ("text", "reasoning") and isinstance(content.get(kind), str):
            content[kind] = self._scrub(content[kind])
        elif kind in _CALL_BLOCKS and content.get("args") is not None:
            content["args"] = self.redact(content["args"])

    # --- tools -------------------------------------------------------------------------

    def _tools(self, data: dict[str, Any]) -> None:
        kind, call_id = data.get("event"), data.get("tool_call_id")
        key = call_id if isinstance(call_id, str) else ""
        if kind == "tool-started" and "input" in data:
            data["input"] = self.redact(data["input"])
        elif kind == "tool-output-delta":
            delta = data.get("delta")
            if isinstance(delta, str):
                data["delta"] = self._slide(self._tool_buffers, key, delta)
            elif isinstance(delta, (dict, list)):
                data["delta"] = self.redact(delta)
        elif kind in ("tool-finished", "tool-error"):
            self._tool_buffers.pop(key, None)
            field = "output" if kind == "tool-finished" else "message"
            if field in data:
                data[field] = self.redact(data[field])


class _Memo:
    """What the messages of one ``values`` snapshot become, given the last one's."""

    __slots__ = ("before", "now")

    def __init__(self, before: dict[str, tuple[Any, Any]]) -> None:
        self.before = before
        self.now: dict[str, tuple[Any, Any]] = {}

    def message(self, transformer: PIIStreamTransformer, msg: Any) -> Any:
        key = getattr(msg, "id", None)
        if not isinstance(key, str):
            return transformer._message(msg)
        seen = self.before.get(key)
        if seen is not None and (seen[0] is msg or seen[0] == msg):
            # Unchanged: its redacted copy again, or the message itself when it had
            # nothing to redact.
            out = msg if seen[1] is seen[0] else seen[1]
        else:
            out = transformer._message(msg)
        self.now[key] = (msg, out)
        return out


def _is_message(value: Any) -> bool:
    """Whether ``value`` is a chat message (langchain-core's, or ironloop's own)."""
    from ironloop.messages import BaseMessage

    return isinstance(value, BaseMessage)
