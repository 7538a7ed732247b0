"""Child program for ``test_guarantees.py``'s SIGKILL cases: one run of a shape of
``guarantee_support.durable_app`` that the parent kills once a task finished.

Usage::

    python guarantee_child.py SHAPE MODE SAVER WHERE LOG

``SAVER`` is ``sqlite`` (``WHERE`` the database file) or ``postgres`` (``WHERE`` the
schema, on the server ``IRONLOOP_TEST_POSTGRES_URL`` names, as application
``WHERE``). The run is thread ``t``, under ``MODE`` (``invoke``, ``ainvoke``,
``stream``, ``astream``); its side effects go to ``LOG``. The slow task sleeps 3 s;
the parent kills the process long before.
"""

from __future__ import annotations

import sys

from guarantee_support import Effects, durable_app, durable_input, run


def saver(kind: str, where: str) -> object:
    if kind == "sqlite":
        from ironloop import SqliteSaver

        return SqliteSaver(where)
    assert kind == "postgres", kind
    from pg_support import new_saver, url_named

    return new_saver(where, url=url_named(where))


def main() -> None:
    shape, mode, kind, where, log = sys.argv[1:6]
    app = durable_app(shape, Effects(log), 3.0, saver(kind, where))
    run(app, mode, durable_input(shape), {"configurable": {"thread_id": "t"}})
    print("FINISHED", flush=True)


if __name__ == "__main__":
    main()
