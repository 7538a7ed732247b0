"""The web UI in a real headless Chromium, driven through WebDriver (selenium), against
``ironloop serve`` on a project whose scripted model streams slowly and whose
``send_email`` tool waits for a person's approval (``HumanInTheLoopMiddleware``) and
reports its progress while it runs (the ``tools`` stream).

Chromium and chromedriver are Debian's (``scripts/chromium.sh`` installs them; it sets
``IRONLOOP_CHROMIUM`` / ``IRONLOOP_CHROMEDRIVER``, else they are looked up on ``PATH``).
Without them these tests fail, saying so: they are never skipped. Each test saves a
screenshot in ``artefacts/`` at the repository's root (``IRONLOOP_ARTEFACTS`` moves it).
"""

from __future__ import annotations

import os
import shutil
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import httpx
import pytest
from serve_support import Server, serve

UI_PROJECT = Path(__file__).parent / "fixtures" / "ui_project"
ARTEFACTS = Path(os.environ.get("IRONLOOP_ARTEFACTS") or Path(__file__).parents[2] / "artefacts")
T = TypeVar("T")


def browser_paths() -> tuple[str, str]:
    chromium = os.environ.get("IRONLOOP_CHROMIUM") or shutil.which("chromium") or ""
    driver = os.environ.get("IRONLOOP_CHROMEDRIVER") or shutil.which("chromedriver") or ""
    if not (chromium and driver):
        pytest.fail(
            "the web UI's browser tests need Chromium and chromedriver: run `bash "
            "scripts/test.sh` (it installs Debian's chromium and chromium-driver), or `source "
            "scripts/chromium.sh` before pytest, or set IRONLOOP_CHROMIUM and "
            "IRONLOOP_CHROMEDRIVER to a Chromium and its matching chromedriver.",
            pytrace=False,
        )
    return chromium, driver


@pytest.fixture
def server(tmp_path: Path) -> Iterator[Server]:
    with serve(tmp_path, project=UI_PROJECT) as s:
        yield s


@pytest.fixture
def browser(tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[Any]:
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    chromium, driver = browser_paths()
    options = webdriver.ChromeOptions()
    options.binary_location = chromium
    for arg in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage",
                "--window-size=1400,1000", f"--user-data-dir={tmp_path / 'chromium'}"):  # fmt: skip
        options.add_argument(arg)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    service = Service(executable_path=driver, log_output=str(tmp_path / "chromedriver.log"))
    b = webdriver.Chrome(service=service, options=options)
    try:
        yield b
        # The page logged no error (a failed request, an exception in its script).
        errors = [e for e in b.get_log("browser") if e["level"] == "SEVERE"]
        assert errors == [], errors
    finally:
        ARTEFACTS.mkdir(parents=True, exist_ok=True)
        b.save_screenshot(str(ARTEFACTS / f"{request.node.name}.png"))
        b.quit()


def wait_for(what: str, check: Callable[[], T | None], timeout: float = 20.0) -> T:
    """Polls ``check`` until it gives something truthy; fails naming ``what``."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            value = check()
        except Exception:  # the element went stale between lookups
            value = None
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.03)


def texts(browser: Any, css: str) -> list[str]:
    """The text of the elements ``css`` selects. The page re-renders its messages while
    a run streams, so an element found may be gone before its text is read ("stale
    element reference"): the whole list is read again then."""
    from selenium.common.exceptions import StaleElementReferenceException
    from selenium.webdriver.common.by import By

    for _ in range(50):
        try:
            return [e.text for e in browser.find_elements(By.CSS_SELECTOR, css)]
        except StaleElementReferenceException:
            time.sleep(0.02)
    raise AssertionError(f"the elements of {css!r} kept being replaced while read")


def open_assistant(browser: Any, server: Server, graph_id: str, node: str = "tools") -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.select import Select

    browser.get(server.url + "/")
    wait_for("the assistants", lambda: texts(browser, "#assistant option"))
    Select(browser.find_element(By.ID, "assistant")).select_by_value(graph_id)
    css = f'#graph [data-node="{node}"]'
    wait_for("the graph", lambda: browser.find_elements(By.CSS_SELECTOR, css))


def send(browser: Any, message: str) -> None:
    """Types ``message`` and presses Enter (the keyboard path: no click)."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys

    box = browser.find_element(By.ID, "input")
    box.send_keys(message)
    box.send_keys(Keys.ENTER)


def answers(browser: Any) -> list[str]:
    return texts(browser, "#messages .msg.ai .body")


def test_a_streamed_answer_then_an_approved_tool_call_and_its_result(
    server: Server, browser: Any
) -> None:
    from selenium.webdriver.common.by import By

    open_assistant(browser, server, "mailer")
    graph_nodes = {e.get_attribute("data-node") for e in
                   browser.find_elements(By.CSS_SELECTOR, "#graph [data-node]")}  # fmt: skip
    assert graph_nodes == {"__start__", "model", "HumanInTheLoopMiddleware.after_model",
                           "tools", "__end__"}  # fmt: skip

    send(browser, "hello there")
    full = "You said 'hello there', and this answer arrives one word at a time."
    # The answer grows on the page as the tokens arrive: a part of it is seen first.
    seen: list[str] = []

    def streamed() -> bool:
        now = answers(browser)
        if now and (not seen or seen[-1] != now[-1]):
            seen.append(now[-1])
        return bool(now) and now[-1] == full

    wait_for("the streamed answer", streamed)
    partial = [s for s in seen if s and s != full]
    assert partial and all(full.startswith(p) for p in partial), seen
    assert texts(browser, "#messages .msg.human .body") == ["hello there"]

    send(browser, "email ada@example.com about the launch")
    approve = wait_for(
        "the approval request",
        lambda: browser.find_elements(By.CSS_SELECTOR, '#interrupt [data-decision="approve"]'),
    )[0]
    interrupt = browser.find_element(By.ID, "interrupt")
    assert "send_email" in interrupt.text and '"to": "ada@example.com"' in interrupt.text
    shown = [b.get_attribute("data-decision") for b in
             interrupt.find_elements(By.CSS_SELECTOR, "[data-decision]")]  # fmt: skip
    assert shown == ["approve", "edit", "reject", "respond"]
    # The pending call is shown with its arguments, not yet run.
    (call,) = browser.find_elements(By.CSS_SELECTOR, "#messages .tool-call")
    assert '"subject": "the launch"' in call.text and "Waiting for approval" in call.text
    # The interrupt's heading takes the focus, so a keyboard user lands on it.
    assert browser.switch_to.active_element.get_attribute("id") == "interrupt-title"
    assert (
        browser.find_element(By.CSS_SELECTOR, "#graph .active").get_attribute("data-node")
        == "HumanInTheLoopMiddleware.after_model"
    )

    approve.click()
    # While the tool runs, its partial output (the `tools` stream's tool-output-delta)
    # shows under the call; the result replaces it.
    progress = wait_for(
        "the running call's progress",
        lambda: texts(browser, "#messages .tool-call .tool-progress"),
    )
    assert progress == ["Connecting to the mail server for ada@example.com…"]
    result = wait_for(
        "the tool's result",
        lambda: texts(browser, "#messages .tool-call .tool-result pre"),
    )
    assert result == ["Sent to ada@example.com: the launch"]
    assert texts(browser, "#messages .tool-call .tool-progress") == []
    wait_for("the final answer",
             lambda: answers(browser)[-1:] == ["Done, the tool said: Sent to ada@example.com: the launch"])  # fmt: skip
    assert browser.find_element(By.ID, "interrupt").is_displayed() is False
    wait_for("the run to end", lambda: browser.find_element(By.ID, "status").text == "Done.")

    # The thread is listed, and the server holds what the page showed.
    (listed,) = texts(browser, "#threads .thread")
    assert "hello there" in listed and "idle" in listed
    thread_id = browser.execute_script(
        "return new URLSearchParams(location.hash.slice(1)).get('thread')"
    )
    state = httpx.get(f"{server.url}/threads/{thread_id}/state").json()
    kinds = [m["type"] for m in state["values"]["messages"]]
    assert kinds == ["human", "ai", "human", "ai", "tool", "ai"]
    assert state["next"] == []


def test_edit_a_pending_call_then_fork_the_thread_from_an_earlier_checkpoint(
    server: Server, browser: Any
) -> None:
    from selenium.webdriver.common.by import By

    open_assistant(browser, server, "mailer")
    send(browser, "email bob@example.com about lunch")
    wait_for("the approval request",
             lambda: browser.find_elements(By.CSS_SELECTOR, '#interrupt [data-decision="edit"]'))[0].click()  # fmt: skip
    args = browser.find_element(By.CSS_SELECTOR, "#interrupt textarea")
    assert browser.switch_to.active_element == args  # the field to edit has the focus
    args.clear()
    args.send_keys('{"to": "bob@example.com", "subject": "dinner"')  # not JSON yet
    browser.find_element(By.XPATH, "//button[normalize-space()='Run with these arguments']").click()
    error = browser.find_element(By.CSS_SELECTOR, "#interrupt .field-error").text
    assert "not valid JSON" in error
    args.send_keys("}")
    browser.find_element(By.XPATH, "//button[normalize-space()='Run with these arguments']").click()
    # As LangChain 1.5: the model's own call stays in its message; the result says
    # which call ran in its place, with the reviewer's arguments, then what it returned.
    result = wait_for("the edited call's result",
                      lambda: [t for t in texts(browser, ".tool-result pre")
                               if t.endswith("Sent to bob@example.com: dinner")])[0]  # fmt: skip
    assert '"subject": "dinner"' in result
    wait_for("the run to end", lambda: browser.find_element(By.ID, "status").text == "Done.")
    assert '"subject": "lunch"' in texts(browser, "#messages .tool-args")[0]

    # History: the thread's checkpoints; fork from the first one (the input alone).
    checkpoints = wait_for(
        "the history", lambda: browser.find_elements(By.CSS_SELECTOR, "#history .checkpoint")
    )
    assert "Step" in checkpoints[0].text and "finished" in checkpoints[0].text
    oldest_with_message = [c for c in checkpoints if "1 message(s)" in c.text][-1]
    oldest_with_message.find_element(By.TAG_NAME, "button").click()
    fork = browser.find_element(By.ID, "fork")
    assert fork.is_displayed() and "Forking from step" in fork.text
    assert texts(browser, "#messages .msg .body") == ["email bob@example.com about lunch"]
    # That checkpoint had the model's turn still to run: replay it from there.
    browser.find_element(By.ID, "fork-replay").click()
    wait_for("the replayed approval request",
             lambda: browser.find_elements(By.CSS_SELECTOR, '#interrupt [data-decision="reject"]'))[0].click()  # fmt: skip
    reason = browser.find_element(By.CSS_SELECTOR, "#interrupt input")
    reason.send_keys("not today")
    browser.find_element(By.XPATH, "//button[normalize-space()='Reject the call']").click()
    wait_for("the rejection",
             lambda: any("not today" in t for t in texts(browser, ".tool-result.error pre")))  # fmt: skip
    wait_for("the run to end", lambda: browser.find_element(By.ID, "status").text == "Done.")
    # The thread now holds the new branch: the edited email is not in it.
    thread_id = browser.execute_script(
        "return new URLSearchParams(location.hash.slice(1)).get('thread')"
    )
    messages = httpx.get(f"{server.url}/threads/{thread_id}/state").json()["values"]["messages"]
    assert [m["type"] for m in messages] == ["human", "ai", "tool", "ai"]
    assert messages[2]["status"] == "error" and "not today" in messages[2]["content"]
    assert "dinner" not in str(messages)


def test_a_plain_interrupt_shows_its_payload_and_resumes_with_the_value_typed(
    server: Server, browser: Any
) -> None:
    from selenium.webdriver.common.by import By

    open_assistant(browser, server, "review", node="review")
    send(browser, "ship the release notes")
    payload = wait_for("the interrupt's payload",
                       lambda: browser.find_elements(By.CSS_SELECTOR, "#interrupt .payload"))[0]  # fmt: skip
    assert '"question": "Publish this draft?"' in payload.text
    assert '"draft": "Draft: ship the release notes"' in payload.text
    assert not browser.find_elements(By.CSS_SELECTOR, "#interrupt [data-decision]")
    field = browser.find_element(By.XPATH, "//label[starts-with(., 'Resume value')]")
    box = browser.find_element(By.ID, field.get_attribute("for"))
    box.send_keys('{"ok": true, "note": "go"}')
    browser.find_element(By.XPATH, "//button[normalize-space()='Resume']").click()
    wait_for("the resumed answer",
             lambda: answers(browser)[-1:] == ["Reviewer said: {'ok': True, 'note': 'go'}"])  # fmt: skip
    wait_for("the run to end", lambda: browser.find_element(By.ID, "status").text == "Done.")
    assert not browser.find_element(By.ID, "interrupt").is_displayed()


def test_a_graph_without_messages_takes_its_input_as_json_and_shows_its_state(
    server: Server, browser: Any
) -> None:
    from selenium.webdriver.common.by import By

    open_assistant(browser, server, "echo", node="<shout> & echo")
    assert browser.find_element(By.ID, "input-label").text == "Input (JSON)"
    assert browser.find_element(By.ID, "input").get_attribute("placeholder") == '{"text":""}'
    send(browser, "not json")
    alert = wait_for("the refusal", lambda: browser.find_element(By.ID, "alert").text)
    assert "not valid JSON" in alert and '{"text":""}' in alert
    browser.find_element(By.ID, "input").clear()
    send(browser, '{"text": "quiet please"}')
    final = ['{\n  "text": "QUIET PLEASE"\n}']
    wait_for("the state", lambda: texts(browser, "#messages .state-values") == final)
    assert not browser.find_element(By.ID, "alert").is_displayed()


def test_stop_a_run_switch_threads_and_every_control_has_a_name(
    server: Server, browser: Any
) -> None:
    from selenium.webdriver.common.by import By

    open_assistant(browser, server, "mailer")
    send(browser, "first thread")
    wait_for("the first answer", lambda: answers(browser)[-1:] == [
        "You said 'first thread', and this answer arrives one word at a time."])  # fmt: skip
    wait_for("the run to end", lambda: browser.find_element(By.ID, "status").text == "Done.")
    first = browser.execute_script(
        "return new URLSearchParams(location.hash.slice(1)).get('thread')"
    )

    browser.find_element(By.ID, "new-thread").click()
    wait_for("an empty thread", lambda: not texts(browser, "#messages .msg"))
    send(browser, "second thread")
    wait_for("a part of the answer", lambda: answers(browser))
    browser.find_element(By.ID, "stop").click()
    wait_for("the run to stop", lambda: browser.find_element(By.ID, "status").text == "Stopped.")
    second = browser.execute_script(
        "return new URLSearchParams(location.hash.slice(1)).get('thread')"
    )
    assert second != first
    (run,) = httpx.get(f"{server.url}/threads/{second}/runs").json()
    assert run["status"] == "interrupted"
    assert not browser.find_element(By.ID, "stop").is_displayed()
    assert browser.find_element(By.ID, "send").is_enabled()

    # Both threads are listed, newest first; the first one opens with its conversation.
    listed = wait_for("both threads", lambda: (t := texts(browser, "#threads .thread-title"))
                      and len(t) == 2 and t)  # fmt: skip
    assert listed == ["second thread", "first thread"]
    browser.find_elements(By.CSS_SELECTOR, "#threads .thread")[1].click()
    wait_for(
        "the first thread", lambda: texts(browser, "#messages .msg.human .body") == ["first thread"]
    )
    assert browser.find_element(By.CSS_SELECTOR, "#threads [aria-current=true]").text.startswith(
        "first thread"
    )

    # Every field has a label and every button a name (what a screen reader announces).
    browser.find_element(By.CSS_SELECTOR, ".connection summary").click()
    unnamed = browser.execute_script(
        """return [...document.querySelectorAll('input, select, textarea, button')]
             .filter((e) => !(e.labels?.length || e.getAttribute('aria-label') || e.textContent.trim()))
             .map((e) => e.outerHTML)"""
    )
    assert unnamed == []


def test_several_pending_calls_each_get_their_own_decision(server: Server, browser: Any) -> None:
    from selenium.webdriver.common.by import By

    open_assistant(browser, server, "mailer")
    send(browser, "email ada@example.com and bob@example.com about the launch")
    actions = wait_for("two approval requests",
                       lambda: (a := browser.find_elements(By.CSS_SELECTOR, "#interrupt .action"))
                       and len(a) == 2 and a)  # fmt: skip
    assert "ada@example.com" in actions[0].text and "bob@example.com" in actions[1].text
    actions[0].find_element(By.CSS_SELECTOR, '[data-decision="approve"]').click()
    # One decision of two: the run waits for the other.
    assert actions[0].find_element(By.CSS_SELECTOR, ".decided").text == "Approved"
    time.sleep(0.3)
    assert browser.find_element(By.ID, "status").text == "Waiting for your decision."
    actions[1].find_element(By.CSS_SELECTOR, '[data-decision="reject"]').click()
    browser.find_element(By.XPATH, "//button[normalize-space()='Reject the call']").click()
    wait_for("the run to end", lambda: browser.find_element(By.ID, "status").text == "Done.")
    results = texts(browser, "#messages .tool-call .tool-result pre")
    assert results[0] == "Sent to ada@example.com: the launch"
    assert results[1].startswith("User rejected the tool call for `send_email`")
    assert len(texts(browser, "#messages .tool-result.error")) == 1


def test_behind_an_api_key_the_page_asks_for_it_and_then_works(
    tmp_path: Path, browser: Any
) -> None:
    from selenium.webdriver.common.by import By

    with serve(tmp_path, "--api-key", "s3cret", project=UI_PROJECT) as server:
        browser.get(server.url + "/")
        alert = wait_for("the refusal", lambda: browser.find_element(By.ID, "alert").text)
        assert "401" in alert and "Connection" in alert
        # The refused requests are logged by the browser: expected here.
        assert all("401" in e["message"] for e in browser.get_log("browser"))
        browser.find_element(By.CSS_SELECTOR, ".connection summary").click()
        browser.find_element(By.ID, "api-key").send_keys("s3cret")
        browser.find_element(By.XPATH, "//button[normalize-space()='Save and reload']").click()
        wait_for("the assistants", lambda: texts(browser, "#assistant option"))
        wait_for("the graph", lambda: browser.find_elements(By.CSS_SELECTOR, "#graph svg"))
        send(browser, "hello")
        wait_for("the answer", lambda: answers(browser)[-1:] == [
            "You said 'hello', and this answer arrives one word at a time."])  # fmt: skip
        assert not browser.find_element(By.ID, "alert").is_displayed()
