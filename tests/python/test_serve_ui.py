"""The web UI ``ironloop serve`` serves at ``/``: its files, served from the package with
nothing fetched from elsewhere (it works offline), open without credentials while the
data stays behind them, and each assistant's graph drawn as SVG on the server.

The browser test (``test_serve_ui_browser.py``) drives the page itself."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from serve_support import Server, serve

from ironloop.serve.ui import STATIC, graph_svg, layout

UI_PROJECT = Path(__file__).parent / "fixtures" / "ui_project"
SVG = "{http://www.w3.org/2000/svg}"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    with serve(tmp_path_factory.mktemp("ui"), project=UI_PROJECT) as s:
        yield s


# The drawing /assistants/{id}/graph returns for create_agent with HumanInTheLoopMiddleware:
# two cycles (tools -> model, the middleware -> model) and three conditional edges.
AGENT = {
    "nodes": [
        {"id": "__start__", "data": {"name": "__start__"}},
        {"id": "model", "data": {"name": "model"}},
        {"id": "HumanInTheLoopMiddleware.after_model"},
        {"id": "tools", "data": {"name": "tools"}},
        {"id": "__end__"},
    ],
    "edges": [
        {"source": "__start__", "target": "model"},
        {"source": "model", "target": "HumanInTheLoopMiddleware.after_model"},
        {"source": "tools", "target": "model"},
        {"source": "HumanInTheLoopMiddleware.after_model", "target": "model", "conditional": True},
        {"source": "HumanInTheLoopMiddleware.after_model", "target": "__end__", "conditional": True},
        {"source": "HumanInTheLoopMiddleware.after_model", "target": "tools", "conditional": True,
         "data": "run them"},
    ],
}  # fmt: skip


def test_the_layout_puts_start_on_top_end_at_the_bottom_and_no_two_nodes_overlap() -> None:
    boxes, edges, width, height = layout(AGENT)
    nodes = {k: b for k, b in boxes.items() if not b.dummy}
    assert set(nodes) == {n["id"] for n in AGENT["nodes"]}
    assert nodes["__start__"].y < min(b.y for k, b in nodes.items() if k != "__start__")
    assert nodes["__end__"].y > max(b.y for k, b in nodes.items() if k != "__end__")
    # The edges down go down: each node sits below what leads to it, but for the
    # edges that close a cycle.
    assert nodes["model"].y < nodes["HumanInTheLoopMiddleware.after_model"].y < nodes["tools"].y
    assert sorted((e.source, e.target) for e in edges if e.reversed) == [
        ("HumanInTheLoopMiddleware.after_model", "model"),
        ("tools", "model"),
    ]
    boxes_list = list(boxes.values())
    for i, a in enumerate(boxes_list):
        assert 0 <= a.x - a.width / 2 and a.x + a.width / 2 <= width and a.y + 34 <= height
        for b in boxes_list[i + 1 :]:
            apart = abs(a.x - b.x) >= (a.width + b.width) / 2 or a.y != b.y
            assert apart, (a, b)
    # An edge over two layers (the middleware to end) passes through a placeholder.
    (long,) = [e for e in edges if e.target == "__end__"]
    assert len(long.chain) == 3 and boxes[long.chain[1]].dummy


def test_the_svg_draws_every_node_and_edge_with_conditional_ones_dashed_and_labelled() -> None:
    svg = ET.fromstring(graph_svg(AGENT, "Graph of agent"))
    assert svg.find(f"{SVG}title").text == "Graph of agent"
    assert svg.get("role") == "img"
    drawn = {g.get("data-node"): g.find(f"{SVG}text").text for g in svg.iter(f"{SVG}g")
             if g.get("data-node")}  # fmt: skip
    assert drawn == {"__start__": "start", "model": "model", "tools": "tools",
                     "HumanInTheLoopMiddleware.after_model": "HumanInTheLoopMiddleware.after_model",
                     "__end__": "end"}  # fmt: skip
    paths = [p for p in svg.iter(f"{SVG}path") if p.get("data-source")]
    assert sorted((p.get("data-source"), p.get("data-target")) for p in paths) == sorted(
        (e["source"], e["target"]) for e in AGENT["edges"]
    )
    dashed = {p.get("data-target") for p in paths if "conditional" in p.get("class", "").split()}
    assert dashed == {"model", "__end__", "tools"}
    assert [t.text for t in svg.iter(f"{SVG}text") if t.text == "run them"] == ["run them"]
    # What a screen reader gets instead of the picture.
    desc = svg.find(f"{SVG}desc").text
    assert (
        "tools to model" in desc
        and "HumanInTheLoopMiddleware.after_model to tools (run them)" in desc
    )


def test_node_names_are_escaped_in_the_svg(server: Server) -> None:
    r = httpx.get(server.url + "/ui/assistants/echo/graph.svg")
    assert r.status_code == 200 and r.headers["content-type"].startswith("image/svg+xml")
    assert "<shout>" not in r.text
    svg = ET.fromstring(r.text)  # well-formed despite the name
    names = {g.get("data-node") for g in svg.iter(f"{SVG}g") if g.get("data-node")}
    assert names == {"__start__", "<shout> & echo", "__end__"}


def test_the_page_and_its_files_are_served_and_load_nothing_from_elsewhere(server: Server) -> None:
    page = httpx.get(server.url + "/")
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    referenced = re.findall(r'(?:src|href)="([^"#]+)"', page.text)
    assert "/ui/static/app.js" in referenced and "/ui/static/app.css" in referenced
    for ref in referenced:
        if ref.startswith("data:"):
            continue
        assert ref.startswith("/ui/static/"), ref  # nothing from another host
        r = httpx.get(server.url + ref)
        assert r.status_code == 200, ref
    assert (
        httpx.get(server.url + "/ui/static/app.js")
        .headers["content-type"]
        .startswith(("text/javascript", "application/javascript"))
    )
    # No file of the UI names another host: it works with no network.
    for f in STATIC.iterdir():
        urls = re.findall(r"(?:https?:)?//[\w.-]+\.[a-z]{2,}[^\s\"')]*", f.read_text())
        assert urls == [], (f.name, urls)
    svg = httpx.get(server.url + "/ui/assistants/mailer/graph.svg").text
    assert "http://www.w3.org/2000/svg" in svg and svg.count("http") == 1


def test_an_unknown_assistant_gets_the_apis_json_error(server: Server) -> None:
    r = httpx.get(server.url + "/ui/assistants/nope/graph.svg")
    assert r.status_code == 422
    assert "nope" in r.json()["detail"] and "mailer" in r.json()["detail"]


def test_with_an_api_key_the_page_is_open_but_the_graph_and_the_api_need_the_key(
    tmp_path: Path,
) -> None:
    with serve(tmp_path, "--api-key", "s3cret", project=UI_PROJECT) as s:
        assert httpx.get(s.url + "/").status_code == 200
        assert httpx.get(s.url + "/ui/static/app.js").status_code == 200
        refused = httpx.get(s.url + "/ui/assistants/mailer/graph.svg")
        assert refused.status_code == 401 and "x-api-key" in refused.json()["detail"]
        assert httpx.post(s.url + "/assistants/search", json={}).status_code == 401
        ok = httpx.get(s.url + "/ui/assistants/mailer/graph.svg", headers={"x-api-key": "s3cret"})
        assert ok.status_code == 200 and 'data-node="tools"' in ok.text
        # A path beside the page's files is not opened by them.
        assert httpx.get(s.url + "/ui/assistants").status_code == 401
