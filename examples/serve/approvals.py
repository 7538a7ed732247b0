"""The second assistant of this example: an agent whose `send_email` tool runs only once
a person approves it (`HumanInTheLoopMiddleware`). The model is scripted (offline,
deterministic), so the project runs with no API key.

Ask it "email ada@example.com about the launch": the run pauses with the pending call;
approve, edit (change the arguments) or reject it from the web UI at
http://127.0.0.1:2024/, or resume it with `langgraph-sdk`:

    client.runs.wait(thread_id, "approvals",
                     command={"resume": {"decisions": [{"type": "approve"}]}})
"""

from __future__ import annotations

import re
from typing import Any

from ironloop import create_agent, tool
from ironloop.messages import BaseMessage
from ironloop.middleware import HumanInTheLoopMiddleware
from ironloop.models import ScriptedChatModel


@tool
def send_email(to: str, subject: str) -> str:
    """Send an email.

    Args:
        to: The recipient's address.
        subject: What the email is about.
    """
    return f"Sent to {to}: {subject!r}."


def model_turn(messages: list[BaseMessage]) -> dict[str, Any] | str:
    """What the model does next (a real model would decide from the conversation)."""
    last = messages[-1]
    if last.type == "tool":
        if getattr(last, "status", None) == "error":
            return f"I did not send it: {last.text}"
        return f"Done. {last.text}"
    match = re.search(r"email (\S+@\S+) about (.+)", last.text)
    if match:
        to, subject = match[1], match[2].strip().rstrip(".")
        return {"content": "", "tool_calls": [{"name": "send_email",
                                               "args": {"to": to, "subject": subject}}]}  # fmt: skip
    return "Ask me to email someone, e.g. 'email ada@example.com about the launch'."


graph = create_agent(
    ScriptedChatModel(model_turn),
    [send_email],
    system_prompt="You send emails for the user, after they approve each one.",
    middleware=[HumanInTheLoopMiddleware(interrupt_on={"send_email": True})],
)
