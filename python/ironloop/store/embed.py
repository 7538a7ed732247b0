"""What a store embeds and with what: the text at a path of an item's value
(``get_text_at_path``), and the embedding model (``ensure_embeddings``) from a
function, a LangChain ``Embeddings`` object, or ``"openai:<model>"``.

Path syntax (LangGraph's): ``a.b`` nested keys, ``a[0]`` / ``a[-1]`` one element,
``a[*]`` every element, ``a.*`` every value, ``{a,b.c}`` several fields, ``$`` the
whole value.
"""

from __future__ import annotations

import importlib
import inspect
import json
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any

from typing_extensions import TypedDict, Unpack

__all__ = [
    "AEmbeddingsFunc",
    "EmbeddingsFunc",
    "EmbeddingsLambda",
    "OpenAIEmbeddings",
    "ensure_embeddings",
    "get_text_at_path",
    "tokenize_path",
]

EmbeddingsFunc = Callable[[Sequence[str]], list[list[float]]]
AEmbeddingsFunc = Callable[[Sequence[str]], Awaitable[list[list[float]]]]


def tokenize_path(path: str) -> list[str]:
    """``"a.b[0].{c,d}"`` -> ``["a", "b", "[0]", "{c,d}"]``: dots split keys,
    brackets and braces (with what they nest) are tokens of their own."""
    tokens: list[str] = []
    word = ""
    i = 0
    while i < len(path):
        ch = path[i]
        if ch in "[{":
            if word:
                tokens.append(word)
                word = ""
            close = "]" if ch == "[" else "}"
            depth, j = 0, i
            while j < len(path):
                if path[j] == ch:
                    depth += 1
                elif path[j] == close:
                    depth -= 1
                    if depth == 0:
                        break
                j += 1
            tokens.append(path[i : j + 1])
            i = j + 1
            continue
        if ch == ".":
            if word:
                tokens.append(word)
                word = ""
        else:
            word += ch
        i += 1
    if word:
        tokens.append(word)
    return tokens


def _dumps(obj: Any) -> str:
    return json.dumps(obj, sort_keys=True, ensure_ascii=False)


def _leaf(obj: Any) -> list[str]:
    if isinstance(obj, (str, int, float, bool)):
        return [str(obj)]
    if isinstance(obj, (list, dict)):
        return [_dumps(obj)]
    return []


def _walk(obj: Any, tokens: list[str], pos: int) -> list[str]:
    if pos == len(tokens):
        return _leaf(obj)
    token = tokens[pos]
    out: list[str] = []
    if token.startswith("[") and token.endswith("]"):
        if not isinstance(obj, list):
            return []
        inner = token[1:-1]
        if inner == "*":
            for element in obj:
                out += _walk(element, tokens, pos + 1)
            return out
        try:
            index = int(inner)
        except ValueError:
            return []
        if -len(obj) <= index < len(obj):
            return _walk(obj[index], tokens, pos + 1)
        return []
    if token.startswith("{") and token.endswith("}"):
        if not isinstance(obj, dict):
            return []
        for field in (f.strip() for f in token[1:-1].split(",")):
            current: Any = obj
            for part in tokenize_path(field):
                if not (isinstance(current, dict) and part in current):
                    current = None
                    break
                current = current[part]
            if current is not None:
                out += _leaf(current)
        return out
    if token == "*":
        values = obj.values() if isinstance(obj, dict) else obj if isinstance(obj, list) else ()
        for value in values:
            out += _walk(value, tokens, pos + 1)
        return out
    if isinstance(obj, dict) and token in obj:
        return _walk(obj[token], tokens, pos + 1)
    return []


def get_text_at_path(obj: Any, path: str | list[str]) -> list[str]:
    """The texts at ``path`` in ``obj``: strings and numbers as text, lists and dicts
    as JSON, missing parts and ``None`` as nothing."""
    if isinstance(obj, Mapping) and not isinstance(obj, dict):
        obj = dict(obj)
    if not path or path == "$":
        return [_dumps(obj)]
    tokens = tokenize_path(path) if isinstance(path, str) else list(path)
    return _walk(obj, tokens, 0)


def _is_async(func: Any) -> bool:
    return inspect.iscoroutinefunction(func) or inspect.iscoroutinefunction(
        type(func).__call__ if callable(func) else None
    )


class EmbeddingsLambda:
    """An embedding function (sync or async, ``list[str] -> list[list[float]]``) as an
    embeddings object with LangChain's four methods."""

    def __init__(self, func: EmbeddingsFunc | AEmbeddingsFunc) -> None:
        if not callable(func):
            raise TypeError(f"embed must be callable, got {type(func).__name__}")
        self.func = func
        self.is_async = _is_async(func)

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        if self.is_async:
            raise ValueError(
                "this store's embed function is async: use the store's async methods "
                "(aput / asearch / abatch), or give a sync function"
            )
        return self.func(texts)  # type: ignore[return-value]

    def embed_query(self, text: str) -> list[float]:
        return self.embed_documents([text])[0]

    async def aembed_documents(self, texts: list[str]) -> list[list[float]]:
        if self.is_async:
            return await self.func(texts)  # type: ignore[no-any-return, misc]
        import asyncio  # not at import: `import ironloop` stays free of asyncio

        return await asyncio.get_running_loop().run_in_executor(None, self.func, texts)  # type: ignore[arg-type]

    async def aembed_query(self, text: str) -> list[float]:
        return (await self.aembed_documents([text]))[0]


class OpenAIEmbeddingsOptions(TypedDict, total=False):
    """``OpenAIEmbeddings``' keywords, as the Rust client takes them (its defaults:
    ``dimensions`` the model's, ``batch_size=512``, ``timeout=60.0`` seconds,
    ``max_retries=2``)."""

    base_url: str | None
    api_key: str | None
    dimensions: int | None
    batch_size: int
    timeout: float
    max_retries: int


class OpenAIEmbeddings:
    """An OpenAI-compatible ``POST {base_url}/embeddings`` client in Rust, with the
    chat models' retries, time limits and secret scrubbing. The key comes from
    ``api_key`` or ``OPENAI_API_KEY``, the root from ``base_url``,
    ``OPENAI_BASE_URL`` or ``https://api.openai.com/v1``; ``batch_size`` texts go in
    one request.

    Example:
        >>> emb = OpenAIEmbeddings("nomic-embed-text", base_url="http://127.0.0.1:9")
        >>> emb.model
        'nomic-embed-text'
    """

    def __init__(self, model: str, **options: Unpack[OpenAIEmbeddingsOptions]) -> None:
        from ironloop._ironloop import _OpenAIEmbeddings

        self.model = model
        self._client = _OpenAIEmbeddings(model, **options)

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return self._client.embed(list(texts))

    def embed_query(self, text: str) -> list[float]:
        return self._client.embed([text])[0]

    async def aembed_documents(self, texts: list[str]) -> list[list[float]]:
        return await self._client.aembed(list(texts))

    async def aembed_query(self, text: str) -> list[float]:
        return (await self._client.aembed([text]))[0]

    def __repr__(self) -> str:
        return f"OpenAIEmbeddings({self.model!r})"


def ensure_embeddings(embed: Any, *, dims: int | None = None) -> Any:
    """An object with ``embed_documents`` / ``embed_query`` (and their ``a…`` forms)
    for ``embed``: a LangChain ``Embeddings`` object as is, a function wrapped,
    ``"openai:<model>"`` as ironloop's Rust client (other ``"provider:model"`` texts
    through LangChain's ``init_embeddings`` when it is installed)."""
    if embed is None:
        raise ValueError(
            "index needs 'embed': a function list[str] -> list[list[float]], a LangChain "
            "Embeddings object, or 'openai:<model>'"
        )
    if isinstance(embed, str):
        provider, sep, model = embed.partition(":")
        if sep and provider == "openai" and model:
            return OpenAIEmbeddings(model, dimensions=_dims_to_ask(model, dims))
        try:
            init_embeddings = importlib.import_module("langchain.embeddings").init_embeddings
        except ImportError:
            raise ValueError(
                f"cannot load embeddings from {embed!r}: ironloop itself speaks "
                "'openai:<model>' (any OpenAI-compatible server via OPENAI_BASE_URL); for "
                "other providers install langchain and the provider's package, or pass a "
                "function or an Embeddings object"
            ) from None
        return init_embeddings(embed)
    if hasattr(embed, "embed_documents") and hasattr(embed, "embed_query"):
        return embed
    return EmbeddingsLambda(embed)


def _dims_to_ask(model: str, dims: int | None) -> int | None:
    """text-embedding-3 models shorten their vectors on request; others get nothing
    asked (an OpenAI-compatible server may refuse the field)."""
    return dims if model.startswith("text-embedding-3") else None
