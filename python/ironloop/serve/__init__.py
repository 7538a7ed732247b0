"""``ironloop serve``: LangGraph's Agent Server API for the graphs a ``langgraph.json``
names, driven by ``langgraph-sdk`` unchanged.

Needs the ``serve`` extra (``pip install "ironloop[serve]"``): Starlette, uvicorn and
sse-starlette. ``create_app`` gives the ASGI app for another server or a test."""

from __future__ import annotations

from .app import ServeOptions, create_app
from .project import Project, ProjectError

__all__ = ["Project", "ProjectError", "ServeOptions", "create_app"]
