"""A coding agent with the built-in workspace tools, offline.

``ironloop.tools.workspace(root, allow_bash=True)`` gives an agent ``read_file``,
``write_file``, ``edit_file``, ``list_files``, ``search`` and ``bash``, all confined
to ``root`` and run in Rust. Here a scripted "model" (no network, no API key) plays
the agent's turns on a scratch project: it looks around, finds a bug, fixes it with
an exact edit, runs the program, and tries — and fails — to read outside the
workspace.

    pip install . && python examples/workspace_agent.py
    python examples/workspace_agent.py --keep      # keep the scratch workspace

To let a real model drive, pass ``OpenAIChat(...)`` or ``AnthropicChat(...)`` from
``ironloop.models`` to ``create_react_agent`` instead of the scripted model.
"""

from __future__ import annotations

import argparse
import shlex
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

from ironloop import create_react_agent
from ironloop.messages import AIMessage, BaseMessage, ToolMessage
from ironloop.models import ScriptedChatModel
from ironloop.tools import workspace

PROJECT = {
    "greet.py": (
        "import sys\n"
        "\n"
        "\n"
        "def greet(name):\n"
        "    # TODO: greet people properly\n"
        '    return "Hello, " + nme + "!"\n'
        "\n"
        "\n"
        'print(greet(sys.argv[1] if len(sys.argv) > 1 else "world"))\n'
    ),
    "README.md": "A tiny project. TODO: write docs.\n",
    ".gitignore": "*.log\n",
    "debug.log": "TODO: this file is ignored by .gitignore\n",
}


def call(name: str, **args: Any) -> dict[str, Any]:
    return {"name": name, "args": args}


def script() -> ScriptedChatModel:
    """The turns a model would take (a real one decides them from the conversation)."""
    python = shlex.quote(sys.executable)
    return ScriptedChatModel(
        [
            # Look around: what is there, and what is left to do?
            {"content": "", "tool_calls": [call("list_files"), call("search", pattern="TODO")]},
            {"content": "", "tool_calls": [call("read_file", path="greet.py")]},
            # Fix the typo: `old` must occur exactly once in the file.
            {
                "content": "",
                "tool_calls": [
                    call(
                        "edit_file",
                        path="greet.py",
                        old='    # TODO: greet people properly\n    return "Hello, " + nme + "!"',
                        new='    return f"Hello, {name}!"',
                    )
                ],
            },
            # Run it; and (a mistake a model might make) look outside the workspace.
            {
                "content": "",
                "tool_calls": [
                    call("bash", command=f"{python} greet.py Ada"),
                    call("read_file", path="../../etc/passwd"),
                ],
            },
            "Fixed the NameError in greet.py (`nme` -> `name`); `python greet.py Ada` now "
            "prints `Hello, Ada!`.",
        ]
    )


def show(m: BaseMessage) -> None:
    if isinstance(m, AIMessage):
        for c in m.tool_calls:
            print(f"  -> {c['name']}({', '.join(f'{k}={v!r}' for k, v in c['args'].items())})")
        if m.text:
            print(f"agent: {m.text}")
    elif isinstance(m, ToolMessage):
        lines = m.text.splitlines() or [""]
        print(f"  [{m.status}] {m.name}: {lines[0]}")
        for line in lines[1:8]:
            print(f"      {line}")
        if len(lines) > 8:
            print(f"      ... ({len(lines) - 8} more lines)")
    else:
        print(f"{m.type}: {m.text}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--keep", action="store_true", help="keep the scratch workspace")
    opts = parser.parse_args()

    root = Path(tempfile.mkdtemp(prefix="ironloop-ws-"))
    for name, text in PROJECT.items():
        (root / name).write_text(text)

    tools = workspace(root, allow_bash=True, bash_timeout=20.0)
    print("tools:", ", ".join(t.name for t in tools))
    agent = create_react_agent(script(), tools, prompt="You are a careful coding agent.")
    out = agent.invoke({"messages": [("user", "greet.py crashes; please fix it.")]})
    for m in out["messages"]:
        show(m)

    print("\ngreet.py is now:")
    print((root / "greet.py").read_text())
    if opts.keep:
        print(f"workspace kept at {root}")
    else:
        shutil.rmtree(root)


if __name__ == "__main__":
    main()
