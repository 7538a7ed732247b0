"""The ``ironloop`` command. ``ironloop serve --config langgraph.json`` serves a
LangGraph project's graphs over LangGraph's Agent Server API."""

from __future__ import annotations

import argparse
import logging
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="ironloop", description=__doc__)
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    serve = commands.add_parser(
        "serve",
        help="serve a langgraph.json project over LangGraph's Agent Server API",
        description="Serve the graphs a langgraph.json names over LangGraph's Agent Server "
        "API (what langgraph-sdk calls). Threads, runs and checkpoints are kept in a SQLite "
        "database in the project folder unless --postgres is given.",
    )
    for flag, options in _serve_options():
        serve.add_argument(flag, **options)
    return parser


def _serve_options() -> list[tuple[str, dict[str, Any]]]:
    """``ironloop serve``'s options, one row each: the flag and ``add_argument``'s
    keywords. Made when the parser is, so the environment's defaults are read then."""
    env = os.environ.get
    return [
        ("--config", {"default": "langgraph.json", "metavar": "FILE",
         "help": "the project's langgraph.json (default: ./langgraph.json)"}),
        ("--host", {"default": "127.0.0.1", "help": "address to listen on (default: 127.0.0.1)"}),
        ("--port", {"type": int, "default": 2024, "help": "port to listen on (default: 2024)"}),
        ("--postgres", {"metavar": "URL", "default": env("DATABASE_URI"),
         "help": "keep checkpoints in this PostgreSQL database (default: $DATABASE_URI; "
         "without either, SQLite in the project folder)"}),
        ("--postgres-schema", {"metavar": "NAME", "default": None,
         "help": "with --postgres: the schema of the server's tables and of the checkpoints "
         "(default: ironloop_serve for the server's tables, the connection's own for the "
         "checkpoints); servers sharing one schema share threads and the run queue"}),
        ("--run-lease-seconds", {"type": float, "default": 10.0, "metavar": "S",
         "help": "with --postgres: a server renews its hold on its runs every S/3 seconds; the "
         "runs of a server that died are taken over by another after S (default: 10)"}),
        ("--data-dir", {"metavar": "DIR", "type": Path, "default": None,
         "help": "folder of the SQLite databases (default: .ironloop/ beside langgraph.json)"}),
        ("--max-running", {"type": int, "default": 32, "metavar": "N",
         "help": "runs executed at once; more wait as pending (default: 32)"}),
        ("--max-body-mb", {"type": float, "default": 16.0, "metavar": "MB",
         "help": "largest request body accepted, in MiB; larger ones get a 413 (default: 16)"}),
        ("--api-key", {"metavar": "KEY", "default": env("IRONLOOP_API_KEY"),
         "help": "require this key in every request's x-api-key header, as langgraph-sdk's "
         "api_key= sends it (default: $IRONLOOP_API_KEY; none: open, or the project's "
         '"auth" handler)'}),
        ("--drain-seconds", {"type": float, "default": 10.0, "metavar": "S",
         "help": "on SIGTERM, how long running runs may take to finish before they are stopped "
         "at their last saved step, for the next server to resume (default: 10)"}),
        ("--log-level", {"default": "info", "choices": ["debug", "info", "warning", "error"],
         "help": "server log level (default: info)"}),
    ]  # fmt: skip


def serve(args: argparse.Namespace) -> int:
    try:
        import uvicorn

        from ironloop.serve import Project, ProjectError, ServeOptions, create_app
    except ImportError as e:
        print(f'ironloop serve needs the serve extra: pip install "ironloop[serve]" ({e})',
              file=sys.stderr)  # fmt: skip
        return 2
    logging.basicConfig(level=args.log_level.upper(), format="%(levelname)s %(name)s: %(message)s")
    try:
        project = Project.load(args.config)
        app = create_app(
            project,
            ServeOptions(
                data_dir=args.data_dir,
                postgres=args.postgres,
                max_running=args.max_running,
                max_body_bytes=int(args.max_body_mb * 1024 * 1024),
                drain_seconds=args.drain_seconds,
                api_key=args.api_key or None,
                postgres_schema=args.postgres_schema,
                run_lease_seconds=args.run_lease_seconds,
            ),
        )
    except ProjectError as e:
        print(f"ironloop serve: {e}", file=sys.stderr)
        return 2
    from ironloop.serve.app import tune_gc

    tune_gc()
    # Access lines are INFO records: above that level uvicorn would still format each
    # request's client and path for a line nobody keeps (a cost on every request).
    uvicorn.run(app, host=args.host, port=args.port, log_level=args.log_level,
                access_log=args.log_level in ("debug", "info"), http=_http_protocol(),
                timeout_graceful_shutdown=max(5, int(args.drain_seconds)))  # fmt: skip
    return 0


def _http_protocol() -> Any:
    """uvicorn's httptools protocol with one send a response (``serve.http``), or
    uvicorn's choice without httptools (its h11 protocol)."""
    try:
        from ironloop.serve.http import ServeProtocol
    except ImportError:
        return "auto"
    return ServeProtocol


def main(argv: Sequence[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    if args.command == "serve":
        return serve(args)
    parser.print_help()
    return 2


if __name__ == "__main__":
    sys.exit(main())
