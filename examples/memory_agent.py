"""An agent that remembers a user's preference across a process restart, offline.

``create_react_agent(..., store=SqliteStore(path, index=...))``: the agent's tools
reach the long-term store through ``InjectedStore``. In the first process the user
says what they like and the agent saves it as a memory; the process ends. A second
process, on a new thread, asks for a recommendation: the agent searches its
memories by meaning (exact cosine similarity over the stored vectors) and answers
from what the first process saved.

The model is scripted (it decides from the conversation, as a real one would) and
the embedding function is a deterministic bag of words, so the example runs without
a network; pass ``"openai:text-embedding-3-small"`` as ``embed`` (and a real model)
to use OpenAI's.

    pip install . && python examples/memory_agent.py
    python examples/memory_agent.py --db memories.db     # keep the store's file
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import uuid
from pathlib import Path
from typing import Annotated, Any

from ironloop import InjectedStore, create_react_agent, tool
from ironloop.messages import BaseMessage
from ironloop.models import ScriptedChatModel
from ironloop.store import SqliteStore

WORDS = ["tea", "coffee", "green", "black", "drink", "prefer", "like", "music", "jazz", "rock"]


def embed(texts: list[str]) -> list[list[float]]:
    """A deterministic embedding: how often each of ``WORDS`` occurs (plus a floor, so
    that no vector is zero). Stands in for a real embedding model."""
    out = []
    for text in texts:
        words = [w.strip(".,!?\"'") for w in text.lower().split()]
        out.append([words.count(w) + 0.05 for w in WORDS])
    return out


USER = ("memories", "user-42")


@tool
def remember(fact: str, store: Annotated[Any, InjectedStore()]) -> str:
    """Save a fact about the user for later conversations.

    Args:
        fact: The fact, in a short sentence.
    """
    store.put(USER, uuid.uuid4().hex, {"text": fact})
    return "saved"


@tool
def recall(query: str, store: Annotated[Any, InjectedStore()]) -> list[str]:
    """Search what is known about the user.

    Args:
        query: What to look for.
    """
    return [m.value["text"] for m in store.search(USER, query=query, limit=2)]


def model_turn(messages: list[BaseMessage]) -> dict[str, Any] | str:
    """The scripted model: saves what the user states, looks up what they ask about."""
    last = messages[-1]
    if last.type == "human" and "?" not in str(last.content):
        return {"content": "", "tool_calls": [{"name": "remember", "args": {"fact": last.content}}]}
    if last.type == "human":
        return {
            "content": "",
            "tool_calls": [{"name": "recall", "args": {"query": "drink prefer"}}],
        }
    if last.type == "tool" and last.name == "remember":
        return "Noted: I'll keep that in mind."
    found = str(last.content)
    if "tea" in found:
        return "You told me you prefer green tea, so: a pot of sencha?"
    return "I don't know your taste yet: tea or coffee?"


def agent(db: str) -> Any:
    store = SqliteStore(db, index={"dims": len(WORDS), "embed": embed, "fields": ["text"]})
    return create_react_agent(ScriptedChatModel(model_turn), [remember, recall], store=store)


def session(db: str, text: str, thread: str) -> None:
    out = agent(db).invoke({"messages": [("user", text)]}, {"configurable": {"thread_id": thread}})
    print(f"[{thread}] user: {text}")
    print(f"[{thread}] agent: {out['messages'][-1].content}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--db", help="the store's SQLite file (default: a scratch file)")
    ap.add_argument("--session", nargs=2, metavar=("THREAD", "TEXT"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.session:
        session(args.db, args.session[1], args.session[0])
        return
    with tempfile.TemporaryDirectory() as tmp:
        db = args.db or str(Path(tmp) / "memories.db")
        # Two processes: nothing but the store's file carries over.
        for thread, text in [
            ("monday", "I prefer green tea, I don't like coffee."),
            ("friday", "What should I drink this afternoon?"),
        ]:
            subprocess.run(
                [sys.executable, __file__, "--db", db, "--session", thread, text], check=True
            )


if __name__ == "__main__":
    main()
