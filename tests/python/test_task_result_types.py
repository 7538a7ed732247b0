"""A ``@task``'s result found again in the checkpoint (the entrypoint resumed after an
``interrupt()``) is the pydantic model or dataclass the task returned, as LangGraph
gives it back, not the plain data the checkpoint keeps."""

from __future__ import annotations

import dataclasses
import warnings

from pydantic import BaseModel

from ironloop import Command, MemorySaver, interrupt
from ironloop.func import entrypoint, task


class Draft(BaseModel):
    text: str


@dataclasses.dataclass
class Count:
    n: int


def test_a_saved_task_result_comes_back_as_the_type_the_task_returns() -> None:
    calls: list[str] = []

    @task
    def write(text: str) -> Draft:
        calls.append(text)
        return Draft(text=text + "!")

    @task
    def count(n: int) -> Count:
        return Count(n)

    @task
    def untyped(n: int):  # type: ignore[no-untyped-def]
        return {"n": n}

    @entrypoint(checkpointer=MemorySaver())
    def flow(text: str) -> dict[str, object]:
        draft, counted, plain = write(text), count(2), untyped(3)
        answer = interrupt("ok?")
        return {
            "draft": draft.result(),
            "count": counted.result(),
            "plain": plain.result(),
            "answer": answer,
        }

    config = {"configurable": {"thread_id": "1"}}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the checkpoint's own note on the plain data
        flow.invoke("hi", config)
        out = flow.invoke(Command(resume="yes"), config)
    assert out == {
        "draft": Draft(text="hi!"),
        "count": Count(2),
        "plain": {"n": 3},
        "answer": "yes",
    }
    assert calls == ["hi"]  # found again, not run again


def test_a_resumed_entrypoint_gets_its_input_as_the_type_it_takes() -> None:
    seen: list[object] = []

    @entrypoint(checkpointer=MemorySaver())
    def flow(draft: Draft) -> str:
        seen.append(draft)
        return draft.text + interrupt("ok?")

    config = {"configurable": {"thread_id": "1"}}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        flow.invoke(Draft(text="a"), config)
        assert flow.invoke(Command(resume="b"), config) == "ab"
    assert seen == [Draft(text="a"), Draft(text="a")]
