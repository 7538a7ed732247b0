"""An agent that uses an HTTP API through its OpenAPI description, offline.

``ironloop.openapi.OpenApiToolset.from_url(url)`` fetches an OpenAPI 3.0 / 3.1 spec
and makes one tool per operation; the tools' HTTP calls are made from Rust. Here a
tiny pet store (Python's ``http.server``, on 127.0.0.1) serves both the API and its
spec, and a scripted "model" (no network, no API key) plays the agent's turns: it
lists the pets, adds one, and looks up a pet that does not exist — the 404 comes back
to it as an error result it can read.

    pip install . && python examples/openapi_agent.py

To let a real model drive, pass ``OpenAIChat(...)`` or ``AnthropicChat(...)`` from
``ironloop.models`` to ``create_react_agent`` instead of the scripted model; to use a
real API, point ``from_url`` / ``from_file`` at its spec (with ``base_url=`` when the
spec's server URL is relative).
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from ironloop import create_react_agent
from ironloop.messages import ToolMessage
from ironloop.models import ScriptedChatModel
from ironloop.openapi import OpenApiToolset

TOKEN = "demo-secret-token"

SPEC: dict[str, Any] = {
    "openapi": "3.1.0",
    "info": {"title": "Pet store", "version": "1.0.0"},
    "servers": [{"url": "/api"}],  # relative: resolved against the spec's URL
    "paths": {
        "/pets": {
            "get": {
                "operationId": "listPets",
                "summary": "List the pets, optionally only those with a tag",
                "parameters": [
                    {"name": "tag", "in": "query", "schema": {"type": "string"}},
                    {"name": "limit", "in": "query", "schema": {"type": "integer", "maximum": 100}},
                ],
            },
            "post": {
                "operationId": "createPet",
                "summary": "Add a pet",
                "requestBody": {
                    "required": True,
                    "content": {
                        "application/json": {"schema": {"$ref": "#/components/schemas/Pet"}}
                    },
                },
            },
        },
        "/pets/{petId}": {
            "get": {
                "operationId": "showPetById",
                "summary": "Info for a specific pet",
                "parameters": [
                    {"name": "petId", "in": "path", "required": True, "schema": {"type": "integer"}}
                ],
            },
            "delete": {
                "operationId": "deletePet",
                "summary": "Remove a pet",
                "parameters": [
                    {
                        "name": "petId",
                        "in": "path",
                        "required": True,
                        "schema": {"type": "integer"},
                    },
                    {
                        "name": "X-Request-Id",
                        "in": "header",
                        "required": True,
                        "schema": {"type": "string"},
                    },
                ],
            },
        },
    },
    "components": {
        "schemas": {
            "Pet": {
                "type": "object",
                "required": ["id", "name"],
                "properties": {
                    "id": {"type": "integer", "readOnly": True},
                    "name": {"type": "string"},
                    "tag": {"type": ["string", "null"]},
                },
            }
        }
    },
}

PETS: dict[int, dict[str, Any]] = {
    1: {"id": 1, "name": "Rex", "tag": "dog"},
    2: {"id": 2, "name": "Tom", "tag": "cat"},
}


class PetStore(BaseHTTPRequestHandler):
    """The API the spec describes (and the spec itself, at /openapi.json)."""

    def log_message(self, format: str, *args: Any) -> None:
        pass  # quiet

    def reply(self, status: int, body: Any) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:
        path, _, query = self.path.partition("?")
        if path == "/openapi.json":
            return self.reply(200, SPEC)
        if path == "/api/pets":
            args = dict(kv.split("=", 1) for kv in query.split("&") if "=" in kv)
            pets = [p for p in PETS.values() if args.get("tag") in (None, p["tag"])]
            return self.reply(200, pets[: int(args.get("limit", 100))])
        pet_id = path.removeprefix("/api/pets/")
        if pet_id.isdigit() and int(pet_id) in PETS:
            return self.reply(200, PETS[int(pet_id)])
        self.reply(404, {"error": f"no pet with id {pet_id}"})

    def do_POST(self) -> None:
        if self.headers.get("Authorization") != f"Bearer {TOKEN}":
            return self.reply(401, {"error": "unauthorized"})
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        pet = {"id": max(PETS) + 1, "name": body["name"], "tag": body.get("tag")}
        PETS[pet["id"]] = pet
        self.reply(201, pet)


def script() -> ScriptedChatModel:
    """The turns a model would take (a real one decides them from the conversation)."""
    return ScriptedChatModel(
        [
            {"content": "", "tool_calls": [{"name": "listPets", "args": {"tag": "dog"}}]},
            # Two calls in one turn run concurrently; the second asks for a missing pet.
            {
                "content": "",
                "tool_calls": [
                    {"name": "createPet", "args": {"body": {"name": "Nemo", "tag": "fish"}}},
                    {"name": "showPetById", "args": {"petId": 7}},
                ],
            },
            "Rex is the only dog. I added Nemo the fish (id 3). There is no pet 7.",
        ]
    )


def main() -> None:
    server = ThreadingHTTPServer(("127.0.0.1", 0), PetStore)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_port}/openapi.json"
    try:
        # The Authorization header goes with every call; it never reaches the model.
        api = OpenApiToolset.from_url(url, headers={"Authorization": f"Bearer {TOKEN}"})
        print(f"{api.title}: {api.base_url}")
        print("tools:", ", ".join(t.name for t in api))
        agent = create_react_agent(script(), api.tools)
        out = agent.invoke({"messages": [("user", "Which dogs are there? Add Nemo, a fish.")]})
        for m in out["messages"]:
            if isinstance(m, ToolMessage):
                first, _, rest = m.text.partition("\n")
                print(f"[{m.status}] {m.name}: {first}")
                if rest:
                    print(f"    {rest.splitlines()[0]}")
        print("answer:", out["messages"][-1].text)
    finally:
        server.shutdown()
        server.server_close()


if __name__ == "__main__":
    main()
