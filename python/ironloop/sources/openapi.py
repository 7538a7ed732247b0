"""The OpenAPI tool source: tools from an OpenAPI description of an HTTP API, called
from Rust (``src/sources/openapi/``). Public path: ``ironloop.openapi``.

``OpenApiToolset.from_file(path)``, ``.from_str(text)`` and ``.from_url(url)`` read an
OpenAPI 3.0 or 3.1 spec (JSON or YAML) and make one tool per operation. The tools are
``NativeTool`` objects: they go into ``ToolNode`` and ``create_react_agent`` like
``@tool`` functions, with the same guarantees (every failure an error
``ToolMessage``, timeouts, cancellation), and their HTTP calls are made from Rust —
no call enters Python.

* **Name**: the ``operationId`` (characters outside ``[a-zA-Z0-9_-]`` become ``_``;
  at most 64); without one, ``<method>_<path>`` (``get_pets_petId``).
* **Description**: the operation's summary and description.
* **Arguments**: one per path, query, header and cookie parameter (the description
  says where it goes) and ``body`` for a JSON, form, multipart or text request body
  (a multipart field of ``format: binary`` is sent as a file whose content is the
  argument's text); local
  ``$ref``s are resolved and inlined, ``readOnly`` properties left out of bodies, and
  3.0 schemas (``nullable``…) made plain JSON Schema.
* **Result**: ``"HTTP <status> <reason>\\n<body>"`` (a JSON body re-written
  compactly, cut to ``max_output_bytes`` with a note). A status outside 2xx is an
  error result with that same text, so the model reads what the server said. The
  ``ToolMessage``'s ``artifact`` is ``{"status", "content_type", "body"}`` with the
  body parsed when it is JSON (a direct call of the tool returns that dict).

``credentials=`` gives a credential per ``components.securitySchemes`` entry (API
key, HTTP bearer / basic, OAuth2 client credentials); each operation gets the ones
its ``security`` asks for. The values of ``headers`` whose names look like credentials (``Authorization``,
``Cookie``, anything with ``key``, ``token``, ``secret``, ``auth``…) never appear in
a result or an error: they are replaced by ``[redacted]``.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, Union

from typing_extensions import TypedDict, Unpack

from ironloop._ironloop import (
    NativeTool,
    _openapi_defaults,
    _openapi_toolset,
    _openapi_toolset_from_url_async,
)
from ironloop.sources import _str_pairs

__all__ = ["Credential", "NativeTool", "OpenApiOptions", "OpenApiToolset"]


Credential = Union[str, "tuple[str, str]", Mapping[str, Any]]
"""A credential for one security scheme: a string (an API key's value, a bearer
token), ``(username, password)`` for HTTP Basic, or a mapping — ``{"username",
"password"}``, or OAuth2 client credentials ``{"client_id", "client_secret"}`` with
optional ``"scopes"`` (a list), ``"token_url"`` and ``"auth_method"`` (``"basic"``, the
default, or ``"post"``)."""

_FIELDS = {
    "basic": {"username", "password"},
    "client_credentials": {"client_id", "client_secret", "scopes", "token_url", "auth_method"},
}


def _credentials(
    value: Mapping[str, Credential] | None,
) -> list[tuple[str, str, list[tuple[str, str]]]] | None:
    """``credentials=`` as the extension takes it; errors name schemes and field
    names, never a value."""
    if value is None:
        return None
    if not isinstance(value, Mapping):
        raise TypeError(
            f"credentials must be a mapping of security scheme name to credential, "
            f"got {type(value).__name__}"
        )
    out: list[tuple[str, str, list[tuple[str, str]]]] = []
    for scheme, cred in value.items():
        if not isinstance(scheme, str):
            raise TypeError(f"credentials keys are security scheme names (str), got {scheme!r}")
        if isinstance(cred, str):
            out.append((scheme, "secret", [("value", cred)]))
            continue
        if isinstance(cred, tuple) and len(cred) == 2 and all(isinstance(c, str) for c in cred):
            out.append((scheme, "basic", [("username", cred[0]), ("password", cred[1])]))
            continue
        if not isinstance(cred, Mapping):
            raise TypeError(
                f"the credential for security scheme {scheme!r} must be a str, a "
                f"(username, password) tuple or a mapping, got {type(cred).__name__}"
            )
        keys = set(cred)
        kind = "client_credentials" if "client_id" in keys else "basic"
        unknown = keys - _FIELDS[kind]
        if unknown:
            raise TypeError(
                f"the credential for security scheme {scheme!r} has unknown fields "
                f"{sorted(map(str, unknown))}; a {kind} credential takes {sorted(_FIELDS[kind])}"
            )
        fields: list[tuple[str, str]] = []
        for k, v in cred.items():
            if k == "scopes":
                if isinstance(v, str) or not all(isinstance(x, str) for x in v):
                    raise TypeError(f"scopes of security scheme {scheme!r} must be a list of str")
                fields.append((k, " ".join(v)))
            elif isinstance(v, str):
                fields.append((k, v))
            else:
                raise TypeError(
                    f"field {k!r} of the credential for security scheme {scheme!r} must be "
                    f"a str, got {type(v).__name__}"
                )
        out.append((scheme, kind, fields))
    return out


_TIMEOUT, _MAX_OUTPUT_BYTES, MAX_SPEC_BYTES, MAX_SPEC_NODES = _openapi_defaults()
"""The core's defaults: 30 s a call, 64 KiB a result; a spec of at most 32 MiB
(``MAX_SPEC_BYTES``) and 1,000,000 JSON values (``MAX_SPEC_NODES``)."""


def _hosts(value: Sequence[str] | None) -> list[str] | None:
    if value is None:
        return None
    if isinstance(value, str) or not all(isinstance(h, str) for h in value):
        raise TypeError(f"allowed_hosts must be a list of host names, got {value!r}")
    return list(value)


def _base_url(value: str | None) -> str | None:
    if value is not None and not isinstance(value, str):
        raise TypeError(f"base_url must be a str or None, got {value!r}")
    return value


class OpenApiOptions(TypedDict, total=False):
    """The options every ``OpenApiToolset`` constructor takes (keywords), with their
    defaults:

    * ``base_url`` (``None``): where the API is, over the spec's ``servers``.
    * ``headers`` (``None``): sent with every call; credential-like values redacted.
    * ``timeout`` (``30.0`` s; ``None`` for none): per call, sending and reading.
    * ``max_output_bytes`` (64 KiB): a result's body is cut there, with a note.
    * ``max_spec_bytes`` (32 MiB) and ``max_spec_nodes`` (1,000,000): the spec's size.
    * ``credentials`` (``None``): a ``Credential`` per ``securitySchemes`` name.
    * ``allowed_hosts`` (``None``): hosts a redirect may lead to besides the spec's.
    """

    base_url: str | None
    headers: Mapping[str, str] | None
    timeout: float | None
    max_output_bytes: int
    max_spec_bytes: int
    max_spec_nodes: int
    credentials: Mapping[str, Credential] | None
    allowed_hosts: Sequence[str] | None


def _native(options: OpenApiOptions) -> dict[str, Any]:
    """The options checked and turned into what the native constructors take."""
    unknown = sorted(set(options) - set(OpenApiOptions.__annotations__))
    if unknown:
        raise TypeError(
            f"unexpected keyword argument(s) {unknown}; "
            f"the options are {sorted(OpenApiOptions.__annotations__)}"
        )
    return {
        "base_url": _base_url(options.get("base_url")),
        "headers": _str_pairs("headers", options.get("headers")) or None,
        "timeout": options.get("timeout", _TIMEOUT),
        # The size limits are checked by the core's glue (`size_limit`), as every
        # source's are.
        "max_output_bytes": options.get("max_output_bytes", _MAX_OUTPUT_BYTES),
        "max_spec_bytes": options.get("max_spec_bytes", MAX_SPEC_BYTES),
        "max_spec_nodes": options.get("max_spec_nodes", MAX_SPEC_NODES),
        "credentials": _credentials(options.get("credentials")),
        "allowed_hosts": _hosts(options.get("allowed_hosts")),
    }


def _url(url: object) -> str:
    if not isinstance(url, str):
        raise TypeError(f"url must be a str, got {url!r}")
    return url


class OpenApiToolset:
    """The tools of one OpenAPI spec, one per operation.

    Make one with ``from_file``, ``from_str`` or ``from_url`` (``await
    afrom_url(...)`` in async code). Each takes the same keyword options:

    * ``base_url`` — where the API is, e.g. ``"https://api.example.com/v1"`` (the
      operations' paths are appended to it). Default: the spec's first ``servers``
      URL (variables at their defaults); a relative one (``"/api/v3"``) is resolved
      against the URL the spec came from, so with ``from_file`` / ``from_str`` it
      needs ``base_url``. No base URL at all raises ``ValueError``.
    * ``headers`` — sent with every call (and with the fetch of ``from_url``),
      e.g. ``{"Authorization": "Bearer ..."}``.
    * ``timeout`` — a per-call time limit in seconds (default 30; None for none), as
      ``@tool(timeout=)`` sets one: a call that runs over it is abandoned and becomes
      an error ``ToolMessage``.
    * ``max_output_bytes`` — the most text one result carries (default 64 KiB).
    * ``credentials`` — for the spec's ``components.securitySchemes``, by scheme
      name: ``{"api_key": "k-123"}`` (an ``apiKey`` in a header, query or cookie, as
      the scheme says), ``{"bearer": "token"}`` (HTTP bearer), ``{"basic": ("user",
      "password")}`` (HTTP Basic), ``{"oauth": {"client_id": "...", "client_secret":
      "...", "scopes": ["read"]}}`` (OAuth2 client credentials: the token is fetched
      from the flow's ``tokenUrl``, cached until shortly before it expires, and
      fetched again after a 401). Each operation uses the first of its ``security``
      alternatives whose schemes all have credentials. A name the spec does not
      declare, or a credential of the wrong kind, raises ``ValueError``. Credentials
      never appear in results or errors.
    * ``max_spec_bytes`` — the largest spec accepted (default 32 MiB), and
      ``max_spec_nodes`` — the most nodes a YAML spec may hold once its aliases are
      expanded (default 1,000,000, of which aliases may copy a tenth; nesting
      stops at 128 levels): a spec over a limit
      raises ``OpenApiSpecError`` saying which, in well under a second, so a hostile
      spec (an alias bomb) cannot exhaust memory.
    * ``allowed_hosts`` — hosts requests may be redirected to besides the hosts of
      the operations' base URLs (the spec's ``servers``, or ``base_url``) and of the
      URL a spec was fetched from. A redirect to any other host is not followed: the
      call (or the fetch) fails saying which host to allow, so a spec from the
      network, or the API itself, cannot send the toolset's credentials elsewhere.

    Attributes:
        tools: The tools (``NativeTool``), in the spec's order. Iterating the toolset
            gives them too; ``toolset["listPets"]`` gets one by name.
        base_url: The base URL the operations use (unless one names its own servers).
        title: The spec's ``info.title``.
        version: The spec's ``info.version``.
        skipped: Operations that did not become tools, as ``"METHOD /path: why"``
            (a required request body of a type other than JSON, form, multipart or
            text).

    Raises (all ``ironloop.errors.OpenApiError``, and the built-in named):
        OpenApiSpecError: (a ``ValueError``) The spec is not valid JSON / YAML, not
            OpenAPI 3.x, has a ``$ref`` to another document or to nothing, or gives no
            base URL.
        OpenApiFileNotFoundError: (a ``FileNotFoundError``) ``from_file``'s path does
            not exist; ``OpenApiFileError`` (an ``OSError``) when it cannot be read.
        OpenApiFetchError: (a ``ConnectionError``) ``from_url`` cannot fetch the spec
            (or gets a non-2xx status).

    Example:
        >>> from ironloop import ToolNode
        >>> from ironloop.messages import AIMessage
        >>> spec = '''
        ... openapi: 3.0.3
        ... info: {title: Pets, version: "1"}
        ... servers: [{url: "http://127.0.0.1:9/v1"}]
        ... paths:
        ...   /pets/{petId}:
        ...     get:
        ...       operationId: showPetById
        ...       summary: Info for a specific pet
        ...       parameters:
        ...         - {name: petId, in: path, required: true, schema: {type: integer}}
        ... '''
        >>> pets = OpenApiToolset.from_str(spec, headers={"Authorization": "Bearer x"})
        >>> [t.name for t in pets]
        ['showPetById']
        >>> pets["showPetById"].parameters["properties"]["petId"]
        {'type': 'integer', 'description': '(path parameter)'}
        >>> node = ToolNode(pets.tools)  # or create_react_agent(model, pets.tools)
    """

    __slots__ = ("base_url", "skipped", "title", "tools", "version")

    tools: list[NativeTool]
    base_url: str | None
    title: str
    version: str
    skipped: list[str]

    def __init__(self, made: tuple[list[NativeTool], str | None, str, str, list[str]]) -> None:
        tools, base_url, title, version, skipped = made
        self.tools = list(tools)
        self.base_url = base_url
        self.title = title
        self.version = version
        self.skipped = list(skipped)

    @classmethod
    def from_str(cls, text: str, **options: Unpack[OpenApiOptions]) -> OpenApiToolset:
        """The tools of a spec given as text (JSON or YAML)."""
        if not isinstance(text, str):
            raise TypeError(f"text must be a str, got {type(text).__name__}")
        return cls(_openapi_toolset("str", text, _native(options)))

    @classmethod
    def from_file(
        cls, path: str | os.PathLike[str], **options: Unpack[OpenApiOptions]
    ) -> OpenApiToolset:
        """The tools of a spec file (``.json``, ``.yaml`` or ``.yml``)."""
        return cls(_openapi_toolset("file", os.fspath(path), _native(options)))

    @classmethod
    def from_url(cls, url: str, **options: Unpack[OpenApiOptions]) -> OpenApiToolset:
        """The tools of a spec fetched over HTTP (from Rust, with ``headers``); a
        relative server URL in it is resolved against ``url``, and a spec without
        ``servers`` gets the API at ``url``'s origin, as OpenAPI says."""
        return cls(_openapi_toolset("url", _url(url), _native(options)))

    @classmethod
    async def afrom_url(cls, url: str, **options: Unpack[OpenApiOptions]) -> OpenApiToolset:
        """``from_url`` for async code: the event loop runs on during the fetch."""
        return cls(await _openapi_toolset_from_url_async(_url(url), _native(options)))

    def __iter__(self) -> Iterator[NativeTool]:
        return iter(self.tools)

    def __len__(self) -> int:
        return len(self.tools)

    def __getitem__(self, name: str) -> NativeTool:
        for t in self.tools:
            if t.name == name:
                return t
        raise KeyError(f"no tool {name!r}; the tools are {[t.name for t in self.tools]}")

    def __contains__(self, name: object) -> bool:
        return any(t.name == name for t in self.tools)

    def __repr__(self) -> str:
        return f"OpenApiToolset({self.title!r}, base_url={self.base_url!r}, {len(self)} tools)"
