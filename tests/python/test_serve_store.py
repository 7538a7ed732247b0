"""``ironloop serve``: the store endpoints (LangGraph's long-term memory over HTTP),
driven by langgraph-sdk."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest
from langgraph_sdk import get_client, get_sync_client
from langgraph_sdk.errors import NotFoundError, UnprocessableEntityError
from serve_support import Server, serve


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    with serve(tmp_path_factory.mktemp("serve")) as s:
        yield s


async def test_put_get_search_delete(server: Server) -> None:
    client = get_client(url=server.url)
    await client.store.put_item(["users", "ada"], "prefs", {"theme": "dark", "lang": "en"})
    await client.store.put_item(["users", "ada"], "notes", {"text": "likes tea", "lang": "en"})
    await client.store.put_item(["users", "bob"], "prefs", {"theme": "light", "lang": "fr"})
    item = await client.store.get_item(["users", "ada"], "prefs")
    assert item["value"] == {"theme": "dark", "lang": "en"}
    assert item["namespace"] == ["users", "ada"] and item["key"] == "prefs"
    found = await client.store.search_items(["users"], filter={"lang": "en"})
    assert sorted(i["key"] for i in found["items"]) == ["notes", "prefs"]
    found = await client.store.search_items(["users", "bob"])
    assert [i["value"]["theme"] for i in found["items"]] == ["light"]
    # Without an index a query ranks nothing and filters nothing (LangGraph's store).
    text = await client.store.search_items(["users"], query="tea")
    assert sorted(i["key"] for i in text["items"]) == ["notes", "prefs", "prefs"]
    spaces = await client.store.list_namespaces(prefix=["users"])
    assert sorted(map(tuple, spaces["namespaces"])) == [("users", "ada"), ("users", "bob")]
    await client.store.delete_item(["users", "ada"], "notes")
    with pytest.raises(NotFoundError):
        await client.store.get_item(["users", "ada"], "notes")


def test_bad_store_requests_are_422(server: Server) -> None:
    client = get_sync_client(url=server.url)
    with pytest.raises(UnprocessableEntityError, match="'value'"):
        client.store.put_item(["a"], "k", "not an object")  # type: ignore[arg-type]
    # The SDK refuses dots itself; the server too.
    r = httpx.put(server.url + "/store/items", json={"namespace": ["a.b"], "key": "k",
                                                     "value": {"x": 1}})  # fmt: skip
    assert r.status_code == 422 and "cannot contain '.'" in r.json()["detail"]
